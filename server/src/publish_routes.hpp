#pragma once
// Where a publisher's packets go (docs/live.md): the effects of an ANNOUNCE, a SETUP with
// mode=record, RECORD and TEARDOWN on the connection's publisher, the addresses UDP publishers
// send their RTP from (-> their RTSP connection), and each "$" frame or RTP-port datagram of a
// publisher into its Publisher (live_publish.hpp), counted. The facade (stream_server.cpp)
// finds the connection and applies a kClose verdict: a publisher replaced by another
// (replace = true) loses its connection.
//
// Threading: the loop thread of the connections' worker.
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>

#include "predrop/net/socket_address.hpp"
#include "predrop/server/server_options.hpp"
#include "rtsp_connections.hpp"
#include "rtsp_methods.hpp"

namespace predrop::server::detail {

/// What the facade does with a publisher's connection after one of its packets.
enum class PublishVerdict : std::uint8_t { kKeep, kClose };

/// The publishers of one worker's connections and the routes of their UDP RTP.
class PublishRoutes {
 public:
  /// Counts into `stats` (publish_packets, publish_dropped, publishers_replaced,
  /// rtp_port_datagrams), which must outlive this object.
  explicit PublishRoutes(ServerStats& stats) : stats_(stats) {}

  /// A request's publisher effects on `c`, in order: a new publisher, a track set up (its UDP
  /// source address routed to `c`), recording, or the publisher's end at `now_us`.
  void apply(MethodOutcome& o, RtspConnection& c, std::uint64_t now_us);
  /// `c` goes: its publisher (if any) ends its stream at `now_us`, its routes are dropped.
  void forget(RtspConnection& c, std::uint64_t now_us);

  /// The connection whose publisher sends its RTP from `from`, if any.
  std::optional<std::uint64_t> connection_for(const net::SocketAddress& from) const;
  /// A datagram on the RTP port from `from`, `c` being connection_for(from) (nullptr if none or
  /// gone): a publisher's RTP into its source (its sign of life), else a NAT punch or a stray,
  /// counted. kClose: the publisher was replaced; close and forget `c`.
  PublishVerdict on_datagram(RtspConnection* c, const net::SocketAddress& from,
                             std::span<const std::uint8_t> data, std::uint64_t now_us);
  /// A datagram on the RTCP port from `from` that no viewer's session sent: a UDP publisher's
  /// RTCP (from its client_port + 1; its sender reports go to its source). An RTCP compound from
  /// there is, like its RTP, the connection's sign of life at `now_us` (RFC 3550 §6.3.5, RFC 7826
  /// §10.5: a session is kept alive by its RTCP): a publisher that stopped sending media (at its
  /// end of stream, or paused) but still reports is alive. False if no publisher sends from
  /// there.
  bool on_rtcp_datagram(RtspConnections& connections, const net::SocketAddress& from,
                        std::span<const std::uint8_t> data, std::uint64_t now_us);
  /// A "$" frame on publishing connection `c` (c.publisher set). kClose: replaced; close `c`.
  PublishVerdict on_frame(RtspConnection& c, std::uint8_t channel,
                          std::span<const std::uint8_t> payload, std::uint64_t now_us);

  /// How many UDP source addresses are routed (for tests).
  std::size_t routes() const { return by_address_.size(); }

 private:
  PublishVerdict count(RtspConnection& c, Publisher::Frame outcome);

  ServerStats& stats_;
  // UDP publishers: the address each one's RTP comes from -> its RTSP connection.
  std::unordered_map<net::SocketAddress, std::uint64_t> by_address_;
};

}  // namespace predrop::server::detail

#pragma once
// How a session's packets leave (the egress seam): the last step of its chain. The session
// plans, writes headers and protects its RTP through its chain::StageTransmitter and writes and
// protects its own RTCP (SR, BYE); the transport decides where those bytes go:
//   - UdpTransport: RTP on the server's RTP socket (inside the pacer's shared sendmmsg batch, GSO
//     where it can), RTCP from the server's RTCP port to each track's client RTCP port (players
//     that check the source, and NATs, expect RTCP from the server_port pair);
//   - InterleavedTransport: both as "$" frames on the client's RTSP connection (RFC 2326
//     §10.12), RTP on each track's even channel, RTCP on the odd one, into the connection's
//     bounded queue, where a frame that does not fit is dropped and counted.
// A WebRTC transport (issue 22: one ICE-selected address, RTP and RTCP multiplexed on one
// socket, SRTP keys from DTLS, transport-wide sequence numbers) is a third implementation; its
// feedback comes in through chain::FeedbackIntake like every other.
//
// Threading: the server's loop thread. Per packet nothing is allocated.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/udp_endpoint.hpp"

namespace predrop::server {

/// Where the packets of a session interleaved on its RTSP connection go (RFC 2326 §10.12): one
/// "$" frame per RTP or RTCP packet, into a bounded queue. Loop thread; no allocation per frame.
class InterleavedOutput {
 public:
  virtual ~InterleavedOutput() = default;
  /// Queues one frame on `channel`; false when the queue has no room for it (it is dropped).
  virtual bool write_frame(std::uint8_t channel, std::span<const std::uint8_t> data) = 0;
  /// Bytes queued and not yet handed to the kernel.
  virtual std::size_t queued_bytes() const = 0;
};

/// The interleaved channel pair of a track (Transport interleaved=rtp-rtcp).
struct InterleavedChannels {
  std::uint8_t rtp = 0;
  std::uint8_t rtcp = 1;
};

/// A session's way out (see the file comment).
class SessionTransport {
 public:
  virtual ~SessionTransport() = default;
  SessionTransport() = default;
  SessionTransport(const SessionTransport&) = delete;
  SessionTransport& operator=(const SessionTransport&) = delete;

  /// The socket the session's transmitter is built on (a UDP transport's RTP socket).
  virtual net::UdpEndpoint& rtp_socket() = 0;
  /// Where the transmitter's protected RTP packets go instead of that socket; nullptr: the
  /// socket itself (and the pacer's shared sendmmsg batch).
  virtual chain::PacketSink* media_sink() = 0;
  /// True if track `track` has a way for RTCP (an SR is worth writing).
  virtual bool has_rtcp(std::size_t track) const = 0;
  /// Sends one protected RTCP compound of track `track`; false if it did not go.
  virtual bool send_rtcp(std::size_t track, std::span<const std::uint8_t> packet) = 0;
  /// Packets the transport dropped (an interleaved queue was full).
  virtual std::uint64_t drops() const = 0;
};

/// RTP on the server's RTP socket, RTCP from its RTCP socket to each track's RTCP destination.
class UdpTransport final : public SessionTransport {
 public:
  /// `rtcp_to[t]`: track t's client RTCP port (none: no SR for it). The sockets must outlive it.
  UdpTransport(net::UdpEndpoint& rtp_socket, net::UdpEndpoint& rtcp_socket,
               std::vector<std::optional<net::SocketAddress>> rtcp_to);

  net::UdpEndpoint& rtp_socket() override { return rtp_socket_; }
  chain::PacketSink* media_sink() override { return nullptr; }
  bool has_rtcp(std::size_t track) const override;
  bool send_rtcp(std::size_t track, std::span<const std::uint8_t> packet) override;
  std::uint64_t drops() const override { return 0; }

 private:
  net::UdpEndpoint& rtp_socket_;
  net::UdpEndpoint& rtcp_socket_;
  std::vector<std::optional<net::SocketAddress>> rtcp_to_;
};

/// RTP and RTCP as frames on the tracks' channels of one RTSP connection.
class InterleavedTransport final : public SessionTransport, private chain::PacketSink {
 public:
  /// `channels[t]`: track t's pair. `output` (the connection's queue) must outlive it;
  /// `rtp_socket` only builds the transmitter (nothing is sent on it).
  InterleavedTransport(net::UdpEndpoint& rtp_socket, InterleavedOutput& output,
                       std::vector<InterleavedChannels> channels);

  net::UdpEndpoint& rtp_socket() override { return rtp_socket_; }
  chain::PacketSink* media_sink() override { return this; }
  bool has_rtcp(std::size_t track) const override { return track < channels_.size(); }
  bool send_rtcp(std::size_t track, std::span<const std::uint8_t> packet) override;
  std::uint64_t drops() const override { return drops_; }

 private:
  // Pre-discard already happened (the transmitter planned the block): what reaches here goes
  // into the connection's bounded queue, and a packet that does not fit is dropped here, before
  // its bytes enter the TCP send buffer. The transmitter counts the refusals as send_drops.
  std::size_t send_batch(std::span<const net::OutDatagram> batch,
                         std::span<const std::uint8_t> tracks) override;

  net::UdpEndpoint& rtp_socket_;
  InterleavedOutput& output_;
  std::vector<InterleavedChannels> channels_;
  std::uint64_t drops_ = 0;
};

}  // namespace predrop::server

#pragma once
// The uplink of the relay client (relay_client.hpp): one stage's gradient as SRTP tensor chunks
// to the relay, pre-discarded at the host's rate (priority: the chunks of smallest magnitude
// first, ddl::tensor_importance), and sent at once or at the path's measured pace
// (ddl::PathPacer, from the relay's reports on this uplink). It owns the transmitter and the
// payload buffers; the client owns the socket and the pace timer and asks send() when to wake.
//
// Memory: everything is sized at construction; begin() and send() allocate nothing.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/ddl/chunk.hpp"
#include "predrop/ddl/path_pacer.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/wire/rtcp.hpp"

namespace predrop::ddl {

/// How the uplink is set up.
struct ClientUplinkConfig {
  std::uint32_t ssrc = 0;    ///< This worker's RTP SSRC.
  net::SocketAddress relay;  ///< Where the chunks go.
  JobKey key;                ///< SRTP of the job (none for a plain key).
  core::DiscardPolicy discard = core::DiscardPolicy::kPriority;
  std::uint64_t discard_seed = 1;
};

/// One worker's gradient, stage by stage.
class ClientUplink {
 public:
  ClientUplink(net::UdpEndpoint& socket, const ChunkPlan& plan, const ClientUplinkConfig& config);

  /// Encodes stage `s` of `gradient` (plan.total_elements() values) and plans its pre-discard at
  /// `rate`; nothing is sent yet.
  chain::StagePlan begin(std::uint32_t s, std::span<const float> gradient, double rate);
  /// Sends what may go at `now`: every planned packet, or with `paced` as many as the pacer
  /// allows. Returns nullopt once the stage's last packet went, else how long (µs) until the
  /// pacer allows the next.
  std::optional<std::uint64_t> send(std::uint64_t now_us, bool paced);
  /// The relay's report on this uplink (its delivery rate, for the pacer).
  void on_report(const wire::PdfbFeedback& report);
  /// When the open stage's last packet was handed to the kernel (0: not yet).
  std::uint64_t sent_us() const { return sent_us_; }
  /// The transmitter's counters.
  const chain::TransmitterStats& stats() const { return tx_.stats(); }

 private:
  const ChunkPlan plan_;
  const core::DiscardPolicy discard_;
  std::size_t payload_size_;
  std::size_t packet_bytes_;  // one datagram on the wire (for the pacer)
  std::vector<std::uint8_t> payloads_;
  std::vector<chain::OutgoingPacket> packets_;
  std::vector<std::uint8_t> importance_;
  chain::StageTransmitter tx_;
  PathPacer pacer_;
  std::size_t next_ = 0;
  std::uint64_t sent_us_ = 0;
};

}  // namespace predrop::ddl

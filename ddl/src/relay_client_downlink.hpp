#pragma once
// The downlink of the relay client (relay_client.hpp): the relay's aggregate, SRTP -> RTP ->
// reception meter -> chunk -> ddl::StagePeer (one contributor: the relay), and what a closed
// stage was (counts, L, the timeline, the missing-chunk fill) together with what its report
// carries. The client owns the socket and the stage timer; it asks stages() what is due.
//
// Memory: everything is sized at construction; a datagram and a close allocate nothing.
#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "predrop/chain/stage_receiver.hpp"
#include "predrop/core/reception_meter.hpp"
#include "predrop/ddl/relay_client.hpp"
#include "predrop/ddl/stage_peer.hpp"

namespace predrop::ddl {

/// The aggregate, stage by stage.
class ClientDownlink {
 public:
  /// Chunks follow `job.plan`; `key` unprotects them; `impairment` is the test hook.
  ClientDownlink(const RelayJob& job, const JobKey& key, const chain::ReceiveImpairment& impairment,
                 const StagePeerConfig& stages);

  /// One RTP datagram of the aggregate at `now`. Returns the arrival time of the chunk it
  /// carried (impairments may delay it), nullopt if it carried none (dropped, invalid).
  std::optional<std::uint64_t> on_datagram(std::span<const std::uint8_t> datagram,
                                           std::uint64_t now_us);

  /// The stage engine (open, close, deadlines, silence).
  StagePeer& stages() { return peer_; }
  const StagePeer& stages() const { return peer_; }

  /// What closed stage `r` was at `now`, the missing chunks filled as `fill` says (with `own`,
  /// the worker's gradient of the stage). The uplink and timeline fields the client fills.
  RelayStage closed(const ClosedStage& r, std::uint64_t now_us, MissingPolicy fill,
                    std::span<const float> own);
  /// What the report of `stage` (closed as `st`) carries: L, counts, queueing delay.
  core::StageMeasurement measurement(const RelayStage& st) const;

  /// Datagrams that failed SRTP authentication.
  std::uint64_t srtp_failures() const { return rx_.stats().srtp_auth_failed; }
  /// Invalid chunks (unparsable, or refused by the collector).
  std::uint64_t chunks_rejected() const {
    return unparsed_ + peer_.collector().counters().rejected;
  }
  /// Chunks of stages already closed.
  std::uint64_t late_chunks() const { return peer_.collector().counters().late; }

 private:
  void on_packet(const wire::RtpPacketView& v, std::uint64_t arrival_us);

  const ChunkPlan plan_;
  StagePeer peer_;
  chain::StageReceiver rx_;
  std::array<core::StageMeasurement, 4> measured_{};  // the meter's last stages (queueing delay)
  std::optional<std::uint64_t> taken_us_;             // the last datagram's chunk arrival
  std::uint64_t unparsed_ = 0;
};

}  // namespace predrop::ddl

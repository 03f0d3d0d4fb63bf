#pragma once
// The egress chain of one peer (a streaming session, a DDL relay's downlink to one worker, a
// worker's uplink): plan the stage's discards -> write the RTP header with the stage extension ->
// copy the payload -> SRTP protect -> batch -> sendmmsg. This is where packets are pre-discarded.
//
// The media or tensor packets are shared and read-only; per peer only the discard, the header,
// the encryption and the send differ (DESIGN.md §5). Sequence numbers are renumbered over the
// packets actually sent, so a receiver's RTCP loss figures show network loss only.
//
// Threading: loop thread. Memory: everything is allocated at construction (and the discard mask
// grows only when a stage is larger than any before); the per-packet path allocates nothing.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "predrop/core/discard_planner.hpp"
#include "predrop/net/rtcp.hpp"
#include "predrop/net/rtp.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"

namespace predrop::net {

/// One RTP stream (track) of the peer.
struct TrackConfig {
  std::uint32_t ssrc = 0;
  std::uint8_t payload_type = 96;
  std::uint16_t initial_sequence = 0;
  std::uint32_t timestamp_offset = 0;             ///< Added to every packet's media timestamp.
  SocketAddress destination;                      ///< Where RTP goes.
  std::optional<SocketAddress> rtcp_destination;  ///< Where SRs go (usually RTP port + 1).
};

/// Static settings of a transmitter.
struct TransmitterConfig {
  RtpExtensionIds extension_ids{1, 2};  ///< Stage extension and abs-send-time ids (a=extmap).
  std::vector<TrackConfig> tracks;
  std::size_t max_payload_size = 1400;
  std::string cname = "predrop";
};

/// One packet of the shared, packetized content.
struct OutgoingPacket {
  std::uint8_t track = 0;
  bool marker = false;
  std::uint32_t timestamp = 0;  ///< Media clock, before the track's offset.
  std::span<const std::uint8_t> payload;
};

/// What begin_stage() decided.
struct StagePlan {
  std::uint32_t stage = 0;
  double rate = 0.0;
  std::size_t packets = 0;    ///< Packets in the stage before discarding.
  std::size_t discarded = 0;  ///< Pre-discarded.
  std::size_t to_send = 0;    ///< packets - discarded; announced in the stage extension.
};

/// Counters of one track.
struct TrackCounters {
  std::uint64_t packets = 0;
  std::uint64_t octets = 0;  ///< Payload octets, as RTCP SR counts them.
  std::uint16_t next_sequence = 0;
  std::uint32_t last_timestamp = 0;
};

/// Counters of the transmitter.
struct TransmitterStats {
  std::uint64_t stages = 0;
  std::uint64_t packets_planned = 0;
  std::uint64_t packets_discarded = 0;  ///< Pre-discarded by the planner.
  std::uint64_t packets_sent = 0;       ///< Handed to the kernel.
  std::uint64_t send_drops = 0;         ///< Refused by the kernel (queue full) or errors.
  std::uint64_t protect_errors = 0;
  std::uint64_t oversize = 0;  ///< Payloads larger than max_payload_size (not sent).
};

/// Egress chain for one peer.
class StageTransmitter {
 public:
  /// `srtp` empty means plain RTP. The socket must outlive the transmitter.
  StageTransmitter(UdpEndpoint& socket, TransmitterConfig config, std::optional<SrtpSession> srtp,
                   core::DiscardPlanner planner);
  ~StageTransmitter();
  StageTransmitter(const StageTransmitter&) = delete;
  StageTransmitter& operator=(const StageTransmitter&) = delete;

  /// Starts stage `stage` of importance.size() packets at discard rate `rate`: decides which
  /// packets go. Flushes anything still batched from the previous stage.
  StagePlan begin_stage(std::uint32_t stage, double rate, std::span<const std::uint8_t> importance);
  /// Sends `packets`, which are the current stage's packets first .. first + size - 1, skipping
  /// the discarded ones; stamps abs-send-time with `now_us` (monotonic). Returns how many were
  /// handed to the kernel. Batches are flushed before returning.
  std::size_t send(std::span<const OutgoingPacket> packets, std::size_t first,
                   std::uint64_t now_us);
  /// Sends an RTCP SR (+ SDES CNAME) for every track that has an RTCP destination.
  /// `ntp` is the wall-clock NTP time, `rtp_timestamp_now(track)` the media clock now.
  void send_sender_reports(std::uint64_t ntp, std::span<const std::uint32_t> rtp_now);

  /// The plan of the current stage.
  const StagePlan& plan() const { return plan_; }
  const TrackCounters& track(std::size_t i) const { return counters_[i]; }
  const TransmitterConfig& config() const { return config_; }
  const TransmitterStats& stats() const { return stats_; }

 private:
  void flush();

  UdpEndpoint& socket_;
  TransmitterConfig config_;
  std::optional<SrtpSession> srtp_;
  core::DiscardPlanner planner_;
  std::vector<TrackCounters> counters_;
  std::vector<std::uint8_t> drop_;  // Discard mask of the current stage.
  StagePlan plan_;
  std::size_t sent_in_stage_ = 0;
  // Batch slab: kBatch slots of slot_size_ bytes, and their datagram descriptors.
  static constexpr std::size_t kBatch = 32;
  std::size_t slot_size_;
  std::unique_ptr<std::uint8_t[]> slab_;
  std::vector<OutDatagram> batch_;
  TransmitterStats stats_;
};

}  // namespace predrop::net

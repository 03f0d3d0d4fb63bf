#pragma once
// Transport-wide congestion control feedback as a stage-report source (docs/webrtc.md
// "Adaptation from transport-cc"): the sender's side of draft-holmer-rmcat-transport-wide-cc-
// extensions-01 for a peer that numbers no stages itself (a browser).
//
//   send:    StageTransmitter writes the transport-wide sequence number into every packet it
//            actually sends (never a pre-discarded one) and records it here, in TransportSendLog:
//            a fixed ring of the send time, stage, index among the stage's sent packets, the
//            stage's announced count and the packet's link bytes, by sequence number.
//   receive: each transport-cc message (wire/transport_cc.hpp) names packets by that number
//            with their arrival times on the browser's clock. TransportFeedback looks each
//            received one up in the log and gives it to a core::ReceptionMeter as the packet a
//            PDFB receiver would have measured (stage, index, count, arrival, one-way delay,
//            bytes): the meter makes the same per-stage measurement the measuring client sends in
//            PDFB v1.1 (L from arrival times, received vs announced, queueing delay over the base
//            one-way delay, dispersion, the largest burst).
//
// Interim alert (docs/design.md §2.9): the same core::StageAlertDetector the measuring client
// runs looks at every packet the meter accounts, so a queue building in the stage in flight is
// seen one feedback interval (50-100 ms for Chromium) after it passes the threshold, not a block
// later; the session hands it to the policy as a client's PDAL (docs/webrtc.md "Adaptation from
// transport-cc").
//
// Clocks: arrival times are the browser's (reference time × 64 ms + 250 µs deltas). They are
// moved onto the sender's clock once, by the offset that makes the first received packet's
// one-way delay 0; only changes of the one-way delay are used, as with abs-send-time.
//
// Contract: no I/O, no clock, nothing allocated after construction (the log and the meter are
// sized once; the measurements of one call live in a fixed array until the next call).
// Threading: the owner's loop thread.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "predrop/core/reception_meter.hpp"
#include "predrop/core/stage_alert_detector.hpp"
#include "predrop/wire/transport_cc.hpp"

namespace predrop::chain {

/// What the sender recorded of one packet sent with a transport-wide sequence number.
struct SentPacket {
  std::uint64_t send_us = 0;  ///< When it was handed to the socket (the sender's clock).
  std::uint32_t stage = 0;
  std::uint16_t index = 0;  ///< Index among the packets sent in the stage.
  std::uint16_t count = 0;  ///< Packets the stage announced when this one went.
  std::uint16_t bytes = 0;  ///< Link bytes (UDP payload + core::kLinkOverheadBytes).
  std::uint16_t sequence = 0;
  bool valid = false;
  /// An RTX retransmission (StageTransmitter::retransmit): in no stage's count, not measured.
  bool retransmission = false;
};

/// The send times of the last kSize packets, by transport-wide sequence number.
class TransportSendLog {
 public:
  /// 4096 packets: 4 s at 1000 packets/s (12 Mbit/s), far more than a browser's feedback
  /// interval (50-100 ms) and its report of late packets.
  static constexpr std::size_t kSize = 4096;
  TransportSendLog() : entries_(kSize) {}

  /// Records packet `sequence` (overwrites the one kSize before it).
  void record(std::uint16_t sequence, const SentPacket& packet) {
    SentPacket& e = entries_[sequence & (kSize - 1)];
    e = packet;
    e.sequence = sequence;
    e.valid = true;
  }
  /// The packet sent under `sequence`, or nullptr if it was never sent or is overwritten.
  const SentPacket* find(std::uint16_t sequence) const {
    const SentPacket& e = entries_[sequence & (kSize - 1)];
    return e.valid && e.sequence == sequence ? &e : nullptr;
  }

 private:
  std::vector<SentPacket> entries_;
};

/// Counters of one peer's transport-cc feedback.
struct TransportFeedbackStats {
  std::uint64_t feedback = 0;          ///< Messages read.
  std::uint64_t packets_reported = 0;  ///< Packet statuses in them.
  std::uint64_t packets_received = 0;  ///< Reported received and found in the log.
  std::uint64_t packets_unknown = 0;   ///< Reported received, not in the log (too old, forged).
  std::uint64_t retransmissions = 0;   ///< Reported received and an RTX retransmission.
  std::uint64_t stages_measured = 0;   ///< Stage measurements made.
  std::uint64_t alerts = 0;            ///< Interim alerts raised (StageAlertConfig on).
};

/// One peer's transport-cc feedback into per-stage measurements.
class TransportFeedback {
 public:
  /// At most this many stages close in one message (the meter keeps two open).
  static constexpr std::size_t kMaxMeasurements = 8;

  /// `alert` off (the default): no interim alert is ever raised.
  explicit TransportFeedback(core::ReceptionMeterConfig config = {},
                             core::StageAlertConfig alert = {});
  ~TransportFeedback() = default;
  // The meter calls back into this object: it stays where it was made.
  TransportFeedback(const TransportFeedback&) = delete;
  TransportFeedback& operator=(const TransportFeedback&) = delete;
  TransportFeedback(TransportFeedback&&) = delete;
  TransportFeedback& operator=(TransportFeedback&&) = delete;

  /// Where the transmitter records what it sends.
  TransportSendLog& send_log() { return log_; }
  /// Reads the packets of one transport-cc message (wire::parse_transport_cc); returns the
  /// stages it completed, oldest first, valid until the next call.
  std::span<const core::StageMeasurement> on_feedback(std::span<const wire::TwccPacket> packets);
  const TransportFeedbackStats& stats() const { return stats_; }
  /// The interim alert the last on_feedback raised, if any (the newest stage's when the message
  /// raised two); valid until the next call.
  const std::optional<core::StageAlert>& alert() const { return alert_; }

 private:
  void on_stage(const core::StageMeasurement& m);

  TransportSendLog log_;
  core::ReceptionMeter meter_;
  core::StageAlertDetector detector_;
  std::optional<core::StageAlert> alert_;
  bool have_offset_ = false;
  std::int64_t offset_us_ = 0;   // sender clock - browser clock, fixed at the first packet
  std::uint64_t latest_us_ = 0;  // the latest arrival, on the sender's clock
  std::array<core::StageMeasurement, kMaxMeasurements> closed_{};
  std::size_t closed_count_ = 0;
  TransportFeedbackStats stats_;
};

}  // namespace predrop::chain

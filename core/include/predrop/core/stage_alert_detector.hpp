#pragma once
// The receiver's interim alert (docs/design.md §2.9): one early word per stage, sent as soon as
// a packet of the newest stage has queued at the bottleneck for longer than a threshold, so that
// the sender can re-plan the rest of that stage instead of waiting for its report a block later.
//
// The alert carries what the receiver knows at that moment (core::StageAlert): the packet's
// queueing delay (from the ReceptionMeter's base delay), the arrival rate of the stage's last
// kRatePackets packets, and the rate at which the stage's back-to-back pairs left the bottleneck
// so far (ReceptionMeter::back_to_back_rate), which lets the policy tell a slower bottleneck
// from a competitor's queue (a FIFO keeps a pair together whatever queues behind it).
//
// Threading: one per received stream, the meter's thread. Fixed memory, no allocation.
#include <array>
#include <cstdint>
#include <optional>
#include <utility>

#include "predrop/core/rate_controller.hpp"
#include "predrop/core/reception_meter.hpp"

namespace predrop::core {

/// Settings of the detector.
struct StageAlertConfig {
  /// Queueing delay (µs) past which a packet raises the stage's alert; 0 turns alerts off.
  std::int64_t queue_threshold_us = 0;
};

/// Raises at most one StageAlert per stage, for the newest stage only.
class StageAlertDetector {
 public:
  /// Packets whose arrival rate the alert carries.
  static constexpr std::size_t kRatePackets = 8;

  explicit StageAlertDetector(StageAlertConfig config) : config_(config) {}

  /// Looks at a packet `meter` has just accounted (meter.on_packet(p) returned). Returns the
  /// stage's alert when this packet raises it.
  std::optional<StageAlert> on_packet(const PacketArrival& p, const ReceptionMeter& meter);

  bool enabled() const { return config_.queue_threshold_us > 0; }
  /// Alerts raised since construction.
  std::uint64_t alerts() const { return alerts_; }

 private:
  StageAlertConfig config_;
  bool any_stage_ = false;
  std::uint32_t newest_stage_ = 0;
  bool alerted_ = false;  ///< newest_stage_ has raised its alert.
  /// Ring of the newest stage's latest packets: arrival µs and link bytes.
  std::array<std::pair<std::uint64_t, std::uint32_t>, kRatePackets> recent_{};
  std::size_t recent_count_ = 0;
  std::uint64_t alerts_ = 0;
};

}  // namespace predrop::core

#pragma once
// What a receiver tells the sender about one stage (docs/design.md §1, §4 PDFB): the reception
// period L, the performance value P and the packet counts that separate network loss from
// pre-discard.
#include <cstdint>
#include <optional>

namespace predrop::core {

/// Bytes a link adds to a packet's UDP payload: IPv4 (20) + UDP (8) + Ethernet (14) headers. A
/// shaper such as Linux tbf counts these, so the receiver's byte counts (PathMeasurement) and the
/// sender's (StageStart) both add them per packet, in the same unit as the bottleneck's rate.
inline constexpr std::uint32_t kLinkOverheadBytes = 42;

/// What the stage's packets tell about the path's bottleneck (needs one-way delays and sizes).
struct PathMeasurement {
  std::uint64_t bytes_received = 0;  ///< Link bytes of the packets received.
  double queue_max_us = 0.0;         ///< Largest queueing delay of any packet (OWD - base).
  /// Smallest queueing delay of any packet: the queue that stood through the whole stage. Other
  /// sessions' bursts at the stage's end raise the end-of-stage reading, not this.
  double queue_min_us = 0.0;
  /// Dispersion: link bytes and arrival gaps of the packet pairs kept (reception_meter.hpp);
  /// bytes / µs is the bottleneck rate. Both 0 when no pair queued behind another.
  std::uint64_t dispersion_bytes = 0;
  std::uint64_t dispersion_us = 0;
  /// The stage's largest burst (packets sent at most train_gap_us apart): link bytes after its
  /// first packet, and the send and arrival spans from its first to its last packet. A burst
  /// whose arrival span is no longer than its send span crossed the path at its send rate.
  std::uint64_t burst_bytes = 0;
  std::uint64_t burst_send_us = 0;
  std::uint64_t burst_arrival_us = 0;
};

/// One receiver report for one stage, as the control unit sees it (wire-format independent).
struct StageReport {
  /// Stage the report is about.
  std::uint32_t stage = 0;
  /// L: time from the first to the last packet of the stage that arrived, in µs.
  double reception_period_us = 0.0;
  /// P: performance of what the receiver made of the stage; higher is better (PSNR dB, loss delta).
  double performance = 0.0;
  /// Packets of the stage that arrived.
  std::uint32_t packets_received = 0;
  /// Packets the sender announced as sent in the stage (after pre-discard); 0 when unknown.
  std::uint32_t packets_announced = 0;
  /// Queueing delay at the end of the stage in µs, when measured: one-way delay of the stage's
  /// last packets minus the receiver's base (minimum recent) one-way delay. A queue building up
  /// or standing full shows here before, or instead of, loss.
  std::optional<double> queue_delay_us;
  /// Rate the sender used for this stage. Filled by the sender from its own records (not on the
  /// wire); improved policies use it to size R from the received fraction. Empty = unknown.
  std::optional<double> rate_used;
  /// What the receiver measured of the path (PDFB v1.1); empty from older receivers and RRs.
  std::optional<PathMeasurement> path;

  /// Fraction of the announced packets the network lost, or 0 when the count is unknown.
  double network_loss() const {
    if (packets_announced == 0 || packets_received >= packets_announced) return 0.0;
    return 1.0 - static_cast<double>(packets_received) / packets_announced;
  }
};

}  // namespace predrop::core

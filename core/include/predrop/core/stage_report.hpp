#pragma once
// What a receiver tells the sender about one stage (docs/design.md §1, §4 PDFB): the reception
// period L, the performance value P and the packet counts that separate network loss from
// pre-discard.
#include <cstdint>
#include <optional>

namespace predrop::core {

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

  /// Fraction of the announced packets the network lost, or 0 when the count is unknown.
  double network_loss() const {
    if (packets_announced == 0 || packets_received >= packets_announced) return 0.0;
    return 1.0 - static_cast<double>(packets_received) / packets_announced;
  }
};

}  // namespace predrop::core

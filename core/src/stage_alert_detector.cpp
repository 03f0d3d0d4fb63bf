#include "predrop/core/stage_alert_detector.hpp"

#include <algorithm>

namespace predrop::core {

std::optional<StageAlert> StageAlertDetector::on_packet(const PacketArrival& p,
                                                        const ReceptionMeter& meter) {
  if (!enabled()) return std::nullopt;
  // Only the newest stage: a straggler of the previous one says nothing about the block in
  // flight, which is what the sender can still re-plan.
  if (!any_stage_ || p.stage > newest_stage_) {
    any_stage_ = true;
    newest_stage_ = p.stage;
    alerted_ = false;
    recent_count_ = 0;
  }
  if (p.stage != newest_stage_) return std::nullopt;
  recent_[recent_count_ % kRatePackets] = {p.arrival_us, p.bytes};
  ++recent_count_;
  if (alerted_ || recent_count_ < kRatePackets) return std::nullopt;
  const auto queue = meter.latest_queue_us();
  if (!queue || *queue < config_.queue_threshold_us) return std::nullopt;
  // The ring holds the last kRatePackets arrivals; the oldest one is where the span starts.
  const std::size_t oldest = recent_count_ % kRatePackets;
  const std::uint64_t first = recent_[oldest].first;
  std::uint64_t last = first;
  double bytes = 0;
  for (std::size_t i = 1; i < kRatePackets; ++i) {
    const auto& [at, b] = recent_[(oldest + i) % kRatePackets];
    bytes += b;
    last = std::max(last, at);
  }
  if (last <= first) return std::nullopt;
  alerted_ = true;
  ++alerts_;
  return StageAlert{p.stage, static_cast<double>(*queue), bytes / static_cast<double>(last - first),
                    meter.back_to_back_rate(p.stage)};
}

}  // namespace predrop::core

// Transport-cc feedback into stage measurements; see transport_feedback.hpp.
#include "predrop/chain/transport_feedback.hpp"

#include <algorithm>

namespace predrop::chain {

TransportFeedback::TransportFeedback(core::ReceptionMeterConfig config,
                                     core::StageAlertConfig alert)
    : meter_(config, [this](const core::StageMeasurement& m) { on_stage(m); }), detector_(alert) {}

void TransportFeedback::on_stage(const core::StageMeasurement& m) {
  ++stats_.stages_measured;
  // More than kMaxMeasurements stages in one message cannot happen with two open slots and one
  // poll per message; should it, the oldest are kept (the newest would be reported next time).
  if (closed_count_ < closed_.size()) closed_[closed_count_++] = m;
}

std::span<const core::StageMeasurement> TransportFeedback::on_feedback(
    std::span<const wire::TwccPacket> packets) {
  closed_count_ = 0;
  alert_.reset();
  ++stats_.feedback;
  stats_.packets_reported += packets.size();
  for (const wire::TwccPacket& p : packets) {
    if (!p.received) continue;  // lost: the meter counts what arrived against the announced count
    const SentPacket* sent = log_.find(p.sequence);
    if (sent == nullptr) {
      ++stats_.packets_unknown;
      continue;
    }
    if (sent->retransmission) {
      // A NACK's answer: in no stage's announced count. The stage's loss stays the loss of its
      // first transmissions (what the path did), and its L and queue come from those alone.
      ++stats_.retransmissions;
      continue;
    }
    ++stats_.packets_received;
    const auto send = static_cast<std::int64_t>(sent->send_us);
    if (!have_offset_) {
      offset_us_ = send - p.arrival_us;
      have_offset_ = true;
    }
    // On the sender's clock; never before the epoch (a first packet that queued long makes
    // later ones look early by at most that queue).
    const std::int64_t arrival = std::max<std::int64_t>(0, p.arrival_us + offset_us_);
    core::PacketArrival a;
    a.stage = sent->stage;
    a.index = sent->index;
    a.count = sent->count;
    a.arrival_us = static_cast<std::uint64_t>(arrival);
    a.one_way_delay_us = arrival - send;
    a.bytes = sent->bytes;
    latest_us_ = std::max(latest_us_, a.arrival_us);
    meter_.on_packet(a);
    if (auto raised = detector_.on_packet(a, meter_)) {
      ++stats_.alerts;
      alert_ = raised;
    }
  }
  // Stages overtaken by a later one for the grace period, or idle, close now.
  if (have_offset_) meter_.poll(latest_us_);
  return {closed_.data(), closed_count_};
}

}  // namespace predrop::chain

#include "predrop/server/block_history.hpp"

namespace predrop::server {

BlockRecord BlockRecord::from(const BlockTrace& t) {
  BlockRecord r;
  r.stage = t.stage;
  r.block = t.block;
  r.rate = t.rate;
  r.packets = static_cast<std::uint32_t>(t.packets);
  r.discarded = static_cast<std::uint32_t>(t.discarded);
  r.sent = static_cast<std::uint32_t>(t.sent);
  r.reported = t.reported;
  if (t.reported) {
    r.reception_period_us = t.report.reception_period_us;
    r.performance = t.report.performance;
    r.packets_received = t.report.packets_received;
    r.network_loss = t.report.network_loss();
    if (t.report.queue_delay_us) r.queue_delay_us = *t.report.queue_delay_us;
  }
  r.decision = t.decision;
  r.next_rate = t.next_rate;
  r.capacity_estimate = t.capacity_estimate;
  return r;
}

std::vector<BlockRecord> BlockHistory::records() const {
  std::vector<BlockRecord> out;
  const std::uint64_t n = next_ < kCapacity ? next_ : kCapacity;
  out.reserve(n);
  for (std::uint64_t i = next_ - n; i < next_; ++i) {
    out.push_back(ring_[i % kCapacity]);
  }
  return out;
}

}  // namespace predrop::server

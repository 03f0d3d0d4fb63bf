// What the ledger keeps of a stage (stage_records.hpp).
#include "stage_records.hpp"

#include <algorithm>

namespace predrop::server::detail {

TrackPackets packets_sent(std::span<const chain::TrackCounters> sent) {
  TrackPackets p;
  p.count = std::min(p.packets.size(), sent.size());
  for (std::size_t t = 0; t < p.count; ++t) {
    p.packets[t] = sent[t].packets;
  }
  return p;
}

void record_begin(chain::StageRecord& r, double rate, const chain::StagePlan& plan,
                  double duration_us, std::span<const chain::TrackCounters> sent) {
  r.rate = rate;
  r.packets = static_cast<std::uint32_t>(plan.packets);
  r.discarded = static_cast<std::uint32_t>(plan.discarded);
  r.duration_us = duration_us;
  const TrackPackets before = packets_sent(sent);
  std::copy_n(before.packets.begin(), before.count, r.first_packet.begin());
}

void record_end(chain::StageRecord& r, const chain::StagePlan& plan,
                std::span<const chain::TrackCounters> sent) {
  r.sent = static_cast<std::uint32_t>(plan.to_send);
  r.ended = true;
  const TrackPackets through = packets_sent(sent);
  std::copy_n(through.packets.begin(), through.count, r.end_packet.begin());
}

}  // namespace predrop::server::detail

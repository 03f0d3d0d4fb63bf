#include "predrop/core/sent_stages.hpp"

#include <algorithm>

namespace predrop::core {

SentStage& SentStages::start(std::uint32_t stage, double block_bytes, double duration_us,
                             std::uint64_t bytes_before) {
  SentStage& s = ring_[stage % kRing];
  s = SentStage{stage, block_bytes, duration_us, bytes_before, 0.0, false, 0.0};
  return s;
}

SentStage* SentStages::find(std::uint32_t stage) {
  SentStage& s = ring_[stage % kRing];
  return s.stage == stage ? &s : nullptr;
}

const SentStage* SentStages::find(std::uint32_t stage) const {
  const SentStage& s = ring_[stage % kRing];
  return s.stage == stage ? &s : nullptr;
}

std::optional<double> SentStages::bytes_sent(std::uint32_t stage) const {
  const SentStage* s = find(stage);
  const SentStage* n = stage == UINT32_MAX ? nullptr : find(stage + 1);
  if (s == nullptr || n == nullptr || n->bytes_before < s->bytes_before) return std::nullopt;
  return static_cast<double>(n->bytes_before - s->bytes_before);
}

double SentStages::queue_at_start(std::uint32_t stage, std::uint32_t reported, double queue_us,
                                  double capacity, double limit_us) const {
  double q = queue_us;
  if (capacity <= 0.0 || stage <= reported + 1) return q;
  for (std::uint32_t j = reported + 1; j < stage; ++j) {
    const SentStage* sj = find(j);
    const std::optional<double> b = bytes_sent(j);
    if (sj == nullptr || !b) continue;
    q = std::clamp(q + *b / capacity - sj->duration_us, 0.0, limit_us);
  }
  return q;
}

}  // namespace predrop::core

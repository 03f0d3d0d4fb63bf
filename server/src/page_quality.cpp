// The page's P per block; see page_quality.hpp.
#include "page_quality.hpp"

#include <algorithm>

namespace predrop::server::detail {
namespace {

// b - a as a signed distance on the 32-bit RTP clock.
std::int64_t ticks(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(b - a);
}

}  // namespace

void PageQualityJoin::begin_block(std::uint32_t stage, std::uint32_t rtp_start) {
  blocks_[stage % kBlocks] = Block{true, false, stage, rtp_start, 0, 0};
}

bool PageQualityJoin::add(const PagePlayed& played) {
  const std::int64_t span = ticks(played.rtp_from, played.rtp_to);
  if (span < 0) return false;
  bool any = false;
  for (Block& b : blocks_) {
    if (!b.valid) continue;
    // The block's span relative to rtp_from: [start, end); the newest block has no end yet.
    const Block* next = find(b.stage + 1);
    const std::int64_t start = ticks(played.rtp_from, b.rtp_start);
    const std::int64_t end = next != nullptr ? ticks(played.rtp_from, next->rtp_start) : INT64_MAX;
    if (next != nullptr && ticks(next->rtp_start, played.rtp_to) >= 0) b.done = true;
    double share = 0;
    if (span == 0) {
      share = start <= 0 && 0 < end ? 1.0 : 0.0;  // a second without a new frame
    } else {
      const std::int64_t overlap = std::min(span, end) - std::max<std::int64_t>(0, start);
      share = overlap > 0 ? static_cast<double>(overlap) / static_cast<double>(span) : 0.0;
    }
    if (share <= 0) continue;
    b.weight += share;
    b.weighted += share * played.p;
    any = true;
  }
  return any;
}

std::optional<double> PageQualityJoin::quality(std::uint32_t stage) const {
  const Block* b = find(stage);
  if (b == nullptr || !b->done || b->weight <= 0) return std::nullopt;
  return b->weighted / b->weight;
}

}  // namespace predrop::server::detail

#include "relay_aggregate.hpp"

#include <algorithm>
#include <cstddef>

#include "predrop/ddl/importance.hpp"

namespace predrop::ddl {

namespace {
// 2^32 / golden ratio, odd: consecutive stages start far apart in the chunk order.
constexpr std::uint64_t kRotationStride = 2'654'435'769ULL;
}  // namespace

void RelayAggregate::allocate(const ChunkPlan& plan) {
  plan_ = plan;
  average_.assign(plan.total_elements(), 0.0f);
  chunk_contributors_.assign(plan.size(), 0);
  importance_full_.assign(plan.size(), 0);
  importance_.assign(plan.size(), 0);
  payload_size_ = chunk_payload_size(plan.chunk_elements());
  payloads_.assign(payload_size_ * plan.size(), 0);
  packets_.resize(plan.size());
  count_ = 0;
}

std::size_t RelayAggregate::encode(std::uint32_t stage, std::uint32_t live, bool priority) {
  if (priority) tensor_importance(average_, plan_, importance_full_);
  std::size_t k = 0;
  for (std::size_t c = 0; c < plan_.size(); ++c) {
    const std::uint16_t n = chunk_contributors_[c];
    if (n == 0) continue;
    const ChunkRange range = plan_[c];
    const std::uint16_t flags = n < live ? kChunkFlagPartial : 0;
    const std::span<std::uint8_t> slot(payloads_.data() + k * payload_size_, payload_size_);
    auto len =
        encode_chunk({flags, 0, range.count, plan_.total_elements(), range.offset},
                     std::span<const float>(average_).subspan(range.offset, range.count), slot);
    packets_[k] = chain::OutgoingPacket{0, false, stage, slot.first(len ? *len : 0)};
    importance_[k] = importance_full_[c];
    ++k;
  }
  // Sent from a different chunk each stage (a golden-ratio stride): a bottleneck queue that
  // overflows drops the end of the burst, and in chunk order that would be the same chunks (the
  // last layers) every stage, which zero fill would then never train and error feedback never
  // deliver. Rotated, what a queue drops moves through the tensor (docs/ddl-torch.md).
  if (k > 1) {
    const std::size_t first =
        static_cast<std::size_t>((static_cast<std::uint64_t>(stage) * kRotationStride) % k);
    std::rotate(packets_.begin(), packets_.begin() + static_cast<std::ptrdiff_t>(first),
                packets_.begin() + static_cast<std::ptrdiff_t>(k));
    std::rotate(importance_.begin(), importance_.begin() + static_cast<std::ptrdiff_t>(first),
                importance_.begin() + static_cast<std::ptrdiff_t>(k));
  }
  if (k > 0) packets_[k - 1].marker = true;
  count_ = k;
  return k;
}

}  // namespace predrop::ddl

#pragma once
// The discard curve of priority discard and what it is for: from a byte budget to R, how many of
// a block's packets must be discarded so that the rest fits `keep` bytes. With the sender's
// discard order known (StageStart::removable: removable[k] is the link bytes the first k discards
// remove) the answer is exact; without it, the policy's learnt beta (the byte share of a
// discarded packet fraction) stands in for the curve.
//
// The server's session and the simulator's flow both build the curve with discard_curve() below,
// each from its own packets (the server's payload plus per-packet overhead, the simulator's clip
// table), so that the policy sees the same curve in both.
#include <cstddef>
#include <cstdint>
#include <span>

#include "predrop/core/discard_planner.hpp"

namespace predrop::core {

/// The R that keeps `keep` of a block's `bytes` (not clamped: the caller applies its limits).
/// `packets` and `removable` describe the discard order (empty: use `beta`).
double rate_keeping(double keep, double bytes, std::uint32_t packets,
                    std::span<const std::uint64_t> removable, double beta);

/// The discard curve of a stage's packets (or of the rest of a stage, from its cursor on) under
/// DiscardPolicy::kPriority: removable[k] is the bytes that discarding the first k packets of
/// DiscardPlanner::priority_order(importance) removes, k = 0 .. the droppable count, where
/// `bytes_of(i)` gives the link bytes of the packet of importance[i]. Written into `removable`
/// (needs one entry more than `importance`), with `order` (as many entries as `importance`) as
/// scratch; empty when the scratch is too small. No allocation: the callers size the scratch once.
template <typename BytesOf>
std::span<const std::uint64_t> discard_curve(std::span<const std::uint8_t> importance,
                                             BytesOf&& bytes_of, std::span<std::uint32_t> order,
                                             std::span<std::uint64_t> removable) {
  if (importance.size() > order.size() || importance.size() >= removable.size()) return {};
  const std::size_t droppable =
      DiscardPlanner::priority_order(importance, order.first(importance.size()));
  removable[0] = 0;
  for (std::size_t k = 0; k < droppable; ++k) {
    removable[k + 1] = removable[k] + static_cast<std::uint64_t>(bytes_of(order[k]));
  }
  return removable.first(droppable + 1);
}

}  // namespace predrop::core

#pragma once
// From a byte budget to R: how many of a block's packets must be discarded so that the rest fits
// `keep` bytes. With the sender's discard order known (StageStart::removable: removable[k] is the
// link bytes the first k discards remove) the answer is exact; without it, the policy's learnt
// beta (the byte share of a discarded packet fraction) stands in for the curve.
#include <cstdint>
#include <span>

namespace predrop::core {

/// The R that keeps `keep` of a block's `bytes` (not clamped: the caller applies its limits).
/// `packets` and `removable` describe the discard order (empty: use `beta`).
double rate_keeping(double keep, double bytes, std::uint32_t packets,
                    std::span<const std::uint64_t> removable, double beta);

}  // namespace predrop::core

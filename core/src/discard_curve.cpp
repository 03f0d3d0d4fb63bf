#include "predrop/core/discard_curve.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace predrop::core {

double rate_keeping(double keep, double bytes, std::uint32_t packets,
                    std::span<const std::uint64_t> removable, double beta) {
  if (packets > 0 && removable.size() > 1) {
    // The sender's discard order: the fewest packets whose discard removes what must go.
    const double remove = bytes - keep;
    if (remove <= 0.0) return 0.0;
    // More than the whole curve removes (also a budget below zero from absurd readings, which
    // would not fit the cast below): every droppable packet.
    if (!(remove <= static_cast<double>(removable.back()))) {
      return static_cast<double>(removable.size() - 1) / static_cast<double>(packets);
    }
    const auto it = std::lower_bound(removable.begin(), removable.end(),
                                     static_cast<std::uint64_t>(std::ceil(remove)));
    const auto k = static_cast<double>(std::min<std::ptrdiff_t>(
        it - removable.begin(), static_cast<std::ptrdiff_t>(removable.size()) - 1));
    return k / static_cast<double>(packets);
  }
  return (1.0 - keep / bytes) / beta;
}

}  // namespace predrop::core

// Log-scaled chunk importance (see importance.hpp).
#include "predrop/ddl/importance.hpp"

#include <cassert>
#include <cmath>
#include <limits>

#include "predrop/core/discard_planner.hpp"

namespace predrop::ddl {

static_assert(kMaxImportance < core::kNeverDrop, "never-drop must stay reserved");

double chunk_l2_norm(std::span<const float> values) {
  double sum = 0.0;
  for (const float v : values) {
    sum += static_cast<double>(v) * static_cast<double>(v);
  }
  return std::sqrt(sum);
}

namespace {

// 1 + round(253 * t) for t clamped to [0, 1].
std::uint8_t level(double t) {
  if (!(t > 0.0)) return 1;  // also catches NaN
  if (t >= 1.0) return kMaxImportance;
  return static_cast<std::uint8_t>(1 + std::lround(253.0 * t));
}

}  // namespace

std::uint8_t quantize_importance(double l2_norm, ImportanceScale scale) {
  if (std::isnan(l2_norm) || l2_norm <= 0.0) return 0;
  if (std::isinf(l2_norm)) return kMaxImportance;
  const double span = scale.log2_max - scale.log2_min;
  if (!(span > 0.0)) return kMaxImportance;
  return level((std::log2(l2_norm) - scale.log2_min) / span);
}

void tensor_importance(std::span<const float> tensor, const ChunkPlan& plan,
                       std::span<std::uint8_t> out) {
  assert(tensor.size() == plan.total_elements() && out.size() == plan.size());
  // Pass 1: range of log2 norms over the non-zero, finite chunks. Norms are recomputed in pass 2
  // rather than stored, which keeps this allocation-free at the cost of reading the tensor twice.
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const ChunkRange r = plan[i];
    const double n = chunk_l2_norm(tensor.subspan(r.offset, r.count));
    if (n > 0.0 && std::isfinite(n)) {
      const double l = std::log2(n);
      lo = std::min(lo, l);
      hi = std::max(hi, l);
    }
  }
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const ChunkRange r = plan[i];
    const double n = chunk_l2_norm(tensor.subspan(r.offset, r.count));
    if (std::isnan(n) || n <= 0.0) {
      out[i] = 0;
    } else if (std::isinf(n) || !(hi > lo)) {
      out[i] = kMaxImportance;
    } else {
      out[i] = level((std::log2(n) - lo) / (hi - lo));
    }
  }
}

}  // namespace predrop::ddl

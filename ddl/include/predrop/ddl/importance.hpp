#pragma once
// Chunk importance for the `priority` discard policy (docs/design.md §3: "for tensors, the chunks
// of smallest magnitude"). The measure is the chunk's L2 norm: dropping a chunk removes exactly its
// squared norm from the gradient's energy, so dropping the chunks of smallest norm first keeps
// the error ||g - g_received|| smallest for a given number of drops. The norm is quantised on a
// log scale, because gradient magnitudes spread over orders of magnitude, to 0..254:
// 0 = all-zero (or NaN) chunk, dropped first; 254 = largest; 255 (core::kNeverDrop) is reserved
// for chunks that must never be dropped and is never produced here.
//
// Pure functions, no allocation, thread-safe.
#include <cstddef>
#include <cstdint>
#include <span>

#include "predrop/ddl/chunk.hpp"

namespace predrop::ddl {

/// Highest importance this module produces; core::kNeverDrop (255) stays reserved.
inline constexpr std::uint8_t kMaxImportance = 254;

/// L2 norm of a chunk's values, accumulated in double (no overflow for float inputs).
double chunk_l2_norm(std::span<const float> values);

/// A fixed log2 range mapped onto importance 1..254.
struct ImportanceScale {
  double log2_min = -40.0;  ///< Norms at or below 2^log2_min map to 1.
  double log2_max = 8.0;    ///< Norms at or above 2^log2_max map to 254.
};

/// Quantises one norm on a fixed scale: 0 for 0 or NaN, else
/// 1 + round(253 * (log2(norm) - log2_min) / (log2_max - log2_min)) clamped to 1..254
/// (+inf maps to 254). Use this when chunks are judged one at a time.
std::uint8_t quantize_importance(double l2_norm, ImportanceScale scale = {});

/// Importance of every chunk of `tensor` (plan.total_elements() values) into `out`
/// (plan.size() bytes). The log scale is stretched between the smallest and largest non-zero
/// norm of this tensor, so the 254 levels resolve this stage's spread (a fixed scale would put
/// most chunks of a gradient on a few levels). Monotone: a larger norm never gets a smaller
/// value. If all non-zero norms are equal they all get 254.
void tensor_importance(std::span<const float> tensor, const ChunkPlan& plan,
                       std::span<std::uint8_t> out);

}  // namespace predrop::ddl

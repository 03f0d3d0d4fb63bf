#pragma once
// Which packets of a stage are pre-discarded (docs/design.md §3). R says how many: round(R x n)
// with the rounding remainder carried into the next stage, so the long-run fraction equals R. The
// policy says which. Survivors keep their order; the planner only marks.
//
// Threading: one planner per session, one thread. No allocation: O(n) time, O(1) extra space.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "predrop/core/result.hpp"

namespace predrop::core {

/// Importance of a packet that must never be discarded (audio, parameter sets, headers).
inline constexpr std::uint8_t kNeverDrop = 255;

/// How the planner picks the packets to discard.
enum class DiscardPolicy : std::uint8_t {
  kUniform,   ///< Spread evenly over the stage's droppable packets.
  kRandom,    ///< A seeded, reproducible random subset.
  kPriority,  ///< Lowest importance first; among equals, later packets first.
};

/// "uniform", "random" or "priority".
std::string_view to_string(DiscardPolicy policy);
/// Parses a policy name, with an error that lists the known names.
Result<DiscardPolicy> parse_discard_policy(std::string_view name);

/// Plans the discards of successive stages for one session.
class DiscardPlanner {
 public:
  /// `seed` only matters for kRandom; the same seed gives the same choices.
  explicit DiscardPlanner(DiscardPolicy policy, std::uint64_t seed = 0x5eed);

  /// Marks the packets to discard in a stage of importance.size() packets at rate `rate`
  /// (clamped to [0, 1]). `drop` must have the same size; drop[i] becomes 1 to discard packet i,
  /// else 0. Packets of importance kNeverDrop are never marked. Returns the number marked.
  std::size_t plan(double rate, std::span<const std::uint8_t> importance,
                   std::span<std::uint8_t> drop);

  /// Rounding remainder carried into the next stage, in packets (within [-0.5, 0.5)).
  double carry() const { return carry_; }
  /// The policy in use.
  DiscardPolicy policy() const { return policy_; }
  /// kPriority: at the cut level, all of its packets go or none does: on, the count is rounded up
  /// to the level's end (whole frames: a frame's packets share one level), so plan() may mark more
  /// than rate x packets (the excess is not carried into the next stage). For receivers that
  /// cannot use a frame sent in part: a browser never decodes it, and with VP8/VP9 or H.264 the
  /// pictures after it wait for the next key frame. Off by default.
  void set_whole_levels(bool on) { whole_levels_ = on; }

  /// The order in which kPriority discards the packets of a stage: the first k entries of
  /// `order` (indices into importance) are the k packets plan() marks at a count of k. Fills
  /// order[0, droppable) and returns droppable (packets of importance kNeverDrop are not in it).
  /// `order` needs importance.size() entries. No allocation.
  static std::size_t priority_order(std::span<const std::uint8_t> importance,
                                    std::span<std::uint32_t> order);

 private:
  std::size_t discard_count(double rate, std::size_t n, std::size_t droppable);
  void mark_uniform(std::size_t count, std::span<const std::uint8_t> importance,
                    std::span<std::uint8_t> drop) const;
  void mark_random(std::size_t count, std::size_t droppable,
                   std::span<const std::uint8_t> importance, std::span<std::uint8_t> drop);
  /// Returns the number marked (more than `count` with whole_levels_).
  std::size_t mark_priority(std::size_t count, std::span<const std::uint8_t> importance,
                            std::span<std::uint8_t> drop) const;
  std::uint64_t next_random();

  DiscardPolicy policy_;
  double carry_ = 0.0;
  bool whole_levels_ = false;
  std::uint64_t rng_state_;
};

}  // namespace predrop::core

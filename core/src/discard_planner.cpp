#include "predrop/core/discard_planner.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <string>

namespace predrop::core {

std::string_view to_string(DiscardPolicy policy) {
  switch (policy) {
    case DiscardPolicy::kUniform:
      return "uniform";
    case DiscardPolicy::kRandom:
      return "random";
    case DiscardPolicy::kPriority:
      return "priority";
  }
  return "unknown";
}

Result<DiscardPolicy> parse_discard_policy(std::string_view name) {
  if (name == "uniform") return DiscardPolicy::kUniform;
  if (name == "random") return DiscardPolicy::kRandom;
  if (name == "priority") return DiscardPolicy::kPriority;
  return make_error("unknown discard policy \"" + std::string(name) +
                    "\" (known: uniform, random, priority)");
}

DiscardPlanner::DiscardPlanner(DiscardPolicy policy, std::uint64_t seed)
    : policy_(policy), rng_state_(seed) {}

// splitmix64 (Steele, Lea, Flood 2014): tiny, fast and identical on every platform, unlike the
// standard distributions whose output is implementation-defined.
std::uint64_t DiscardPlanner::next_random() {
  std::uint64_t z = (rng_state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::size_t DiscardPlanner::discard_count(double rate, std::size_t n, std::size_t droppable) {
  if (!(rate > 0.0)) rate = 0.0;  // Also maps NaN to 0.
  rate = std::min(rate, 1.0);
  const double exact = rate * static_cast<double>(n) + carry_;
  const double rounded = std::floor(exact + 0.5);
  carry_ = exact - rounded;
  if (rounded <= 0.0) return 0;
  return std::min(static_cast<std::size_t>(rounded), droppable);
}

std::size_t DiscardPlanner::plan(double rate, std::span<const std::uint8_t> importance,
                                 std::span<std::uint8_t> drop) {
  assert(drop.size() == importance.size());
  std::fill(drop.begin(), drop.end(), std::uint8_t{0});
  const std::size_t n = importance.size();
  const auto droppable = static_cast<std::size_t>(
      std::count_if(importance.begin(), importance.end(), [](auto v) { return v != kNeverDrop; }));
  const std::size_t count = discard_count(rate, n, droppable);
  if (count == 0) return 0;
  switch (policy_) {
    case DiscardPolicy::kUniform:
      mark_uniform(count, importance, drop);
      break;
    case DiscardPolicy::kRandom:
      mark_random(count, droppable, importance, drop);
      break;
    case DiscardPolicy::kPriority:
      return mark_priority(count, importance, drop);
  }
  return count;
}

void DiscardPlanner::mark_uniform(std::size_t count, std::span<const std::uint8_t> importance,
                                  std::span<std::uint8_t> drop) const {
  // Bresenham over the droppable packets: the j-th droppable one goes when floor((j+1)c/m)
  // steps, which spreads c discards evenly over m packets with no two closer than needed.
  const auto m = static_cast<std::size_t>(
      std::count_if(importance.begin(), importance.end(), [](auto v) { return v != kNeverDrop; }));
  std::size_t j = 0;
  for (std::size_t i = 0; i < importance.size(); ++i) {
    if (importance[i] == kNeverDrop) continue;
    if ((j + 1) * count / m > j * count / m) drop[i] = 1;
    ++j;
  }
}

void DiscardPlanner::mark_random(std::size_t count, std::size_t droppable,
                                 std::span<const std::uint8_t> importance,
                                 std::span<std::uint8_t> drop) {
  // Selection sampling (Knuth, TAOCP vol. 2, Algorithm S): one pass, exactly `count` chosen,
  // every subset equally likely, no scratch memory.
  std::size_t needed = count;
  std::size_t left = droppable;
  for (std::size_t i = 0; i < importance.size() && needed > 0; ++i) {
    if (importance[i] == kNeverDrop) continue;
    // Uniform integer in [0, left) from 53 random bits; the bias (< 2^-40 for any stage size
    // we handle) is irrelevant here.
    const double unit = static_cast<double>(next_random() >> 11) * 0x1.0p-53;
    const auto r = static_cast<std::size_t>(unit * static_cast<double>(left));
    if (r < needed) {
      drop[i] = 1;
      --needed;
    }
    --left;
  }
}

std::size_t DiscardPlanner::priority_order(std::span<const std::uint8_t> importance,
                                           std::span<std::uint32_t> order) {
  // Counting sort by importance, each level's packets latest first, as mark_priority() picks
  // them: lower levels go before higher ones, and at the cut level the latest first.
  std::array<std::size_t, 256> start{};
  for (auto v : importance) {
    ++start[v];
  }
  std::size_t sum = 0;
  for (auto& s : start) {
    const std::size_t c = s;
    s = sum;
    sum += c;
  }
  const std::size_t droppable = start[kNeverDrop];
  for (std::size_t i = importance.size(); i-- > 0;) {
    if (importance[i] == kNeverDrop) continue;
    order[start[importance[i]]++] = static_cast<std::uint32_t>(i);
  }
  return droppable;
}

std::size_t DiscardPlanner::mark_priority(std::size_t count,
                                          std::span<const std::uint8_t> importance,
                                          std::span<std::uint8_t> drop) const {
  // Counting by importance level finds the cut level in O(n) without sorting: every packet
  // below it goes, and at the cut level the latest packets go first (whole frames at the end of
  // a run of equal importance before earlier ones).
  std::array<std::size_t, 256> histogram{};
  for (auto v : importance) {
    ++histogram[v];
  }
  std::size_t below = 0;
  unsigned cut = 0;
  for (; cut < kNeverDrop; ++cut) {
    if (below + histogram[cut] >= count) break;
    below += histogram[cut];
  }
  std::size_t at_cut = count - below;
  if (whole_levels_ && cut < kNeverDrop) at_cut = histogram[cut];
  const std::size_t marked = below + at_cut;
  for (std::size_t i = importance.size(); i-- > 0;) {
    if (importance[i] < cut) {
      drop[i] = 1;
    } else if (importance[i] == cut && at_cut > 0) {
      drop[i] = 1;
      --at_cut;
    }
  }
  return marked;
}

}  // namespace predrop::core

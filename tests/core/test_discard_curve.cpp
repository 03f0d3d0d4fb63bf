// The discard curve (core/include/predrop/core/discard_curve.hpp): the bytes that the first k
// discards of priority discard remove, as the server's session and the simulator's flow build it
// for the policy (StageStart::removable, StageProgress::removable).
#include "predrop/core/discard_curve.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "predrop/core/discard_planner.hpp"

namespace predrop::core {
namespace {

std::vector<std::uint64_t> curve_of(std::span<const std::uint8_t> importance,
                                    std::span<const std::uint32_t> bytes) {
  std::vector<std::uint32_t> order(importance.size());
  std::vector<std::uint64_t> removable(importance.size() + 1);
  const auto curve = discard_curve(
      importance, [&](std::size_t i) { return bytes[i]; }, order, removable);
  return {curve.begin(), curve.end()};
}

TEST(DiscardCurve, AddsTheBytesOfEachPacketInThePlannersDiscardOrder) {
  // Lowest importance first; 255 is never discarded: packet 2 (1), then 0 (3), then 3 (5).
  const std::array<std::uint8_t, 4> importance{3, kNeverDrop, 1, 5};
  const std::array<std::uint32_t, 4> bytes{110, 210, 310, 410};
  EXPECT_EQ(curve_of(importance, bytes),
            (std::vector<std::uint64_t>{0, 310, 310 + 110, 310 + 110 + 410}));
}

TEST(DiscardCurve, AmongEqualImportanceTheLaterPacketGoesFirst) {
  const std::array<std::uint8_t, 3> importance{2, 2, 2};
  const std::array<std::uint32_t, 3> bytes{1, 10, 100};
  EXPECT_EQ(curve_of(importance, bytes), (std::vector<std::uint64_t>{0, 100, 110, 111}));
}

TEST(DiscardCurve, OfTheRestOfAStageBytesAreAskedByIndexIntoTheRest) {
  // A sender's cursor at packet 2 of {3, 255, 1, 5}: the rest is {1, 5}, and bytes_of(0) is
  // packet 2's.
  const std::array<std::uint8_t, 4> importance{3, kNeverDrop, 1, 5};
  const std::array<std::uint32_t, 4> bytes{110, 210, 310, 410};
  const std::size_t first = 2;
  std::vector<std::uint32_t> order(4);
  std::vector<std::uint64_t> removable(5);
  const auto rest = discard_curve(
      std::span(importance).subspan(first), [&](std::size_t i) { return bytes[first + i]; }, order,
      removable);
  EXPECT_EQ(std::vector<std::uint64_t>(rest.begin(), rest.end()),
            (std::vector<std::uint64_t>{0, 310, 310 + 410}));
}

TEST(DiscardCurve, NothingDroppableIsACurveOfOnePoint) {
  const std::array<std::uint8_t, 2> importance{kNeverDrop, kNeverDrop};
  const std::array<std::uint32_t, 2> bytes{100, 200};
  EXPECT_EQ(curve_of(importance, bytes), (std::vector<std::uint64_t>{0}));
  EXPECT_EQ(curve_of({}, {}), (std::vector<std::uint64_t>{0}));
}

TEST(DiscardCurve, NoCurveWhenTheScratchIsTooSmall) {
  const std::array<std::uint8_t, 2> importance{1, 2};
  const auto bytes_of = [](std::size_t) { return 100u; };
  std::vector<std::uint32_t> order(1);
  std::vector<std::uint64_t> removable(3);
  EXPECT_TRUE(discard_curve(importance, bytes_of, order, removable).empty());
  order.resize(2);
  removable.resize(2);
  EXPECT_TRUE(discard_curve(importance, bytes_of, order, removable).empty());
}

TEST(DiscardCurve, EachPointIsWhatThePlannerRemovesAtThatCount) {
  // The policy sizes R on the curve; the planner then marks. They must agree for every count.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> level(0, 6);
  std::uniform_int_distribution<std::uint32_t> size(50, 1300);
  std::vector<std::uint8_t> importance(97);
  std::vector<std::uint32_t> bytes(importance.size());
  for (std::size_t i = 0; i < importance.size(); ++i) {
    const int l = level(rng);
    importance[i] = l == 6 ? kNeverDrop : static_cast<std::uint8_t>(l);
    bytes[i] = size(rng);
  }
  const auto curve = curve_of(importance, bytes);
  const auto n = static_cast<double>(importance.size());
  for (std::size_t k = 0; k < curve.size(); ++k) {
    DiscardPlanner planner(DiscardPolicy::kPriority);
    std::vector<std::uint8_t> drop(importance.size());
    ASSERT_EQ(planner.plan(static_cast<double>(k) / n, importance, drop), k);
    std::uint64_t removed = 0;
    for (std::size_t i = 0; i < drop.size(); ++i) {
      if (drop[i] != 0) removed += bytes[i];
    }
    EXPECT_EQ(removed, curve[k]) << "k = " << k;
  }
}

}  // namespace
}  // namespace predrop::core

#include "predrop/core/discard_planner.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace predrop::core {
namespace {

struct Stage {
  std::vector<std::uint8_t> importance;
  std::vector<std::uint8_t> drop;
  explicit Stage(std::size_t n, std::uint8_t imp = 0) : importance(n, imp), drop(n, 0) {}
  std::size_t dropped() const { return std::accumulate(drop.begin(), drop.end(), std::size_t{0}); }
};

TEST(DiscardPlanner, ParsesNames) {
  EXPECT_EQ(*parse_discard_policy("uniform"), DiscardPolicy::kUniform);
  EXPECT_EQ(*parse_discard_policy("priority"), DiscardPolicy::kPriority);
  auto e = parse_discard_policy("smart");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("uniform"), std::string::npos);
}

TEST(DiscardPlanner, CountIsRoundedWithCarry) {
  DiscardPlanner p(DiscardPolicy::kUniform);
  Stage s(10);
  // 0.25 x 10 = 2.5 -> 3 (carry -0.5), then 2.5 - 0.5 = 2 -> 2, so 5 over two stages.
  EXPECT_EQ(p.plan(0.25, s.importance, s.drop), 3u);
  EXPECT_EQ(p.plan(0.25, s.importance, s.drop), 2u);
  EXPECT_DOUBLE_EQ(p.carry(), 0.0);
}

TEST(DiscardPlanner, ZeroRateDropsNothingAndFullRateDropsAllDroppable) {
  for (auto policy : {DiscardPolicy::kUniform, DiscardPolicy::kRandom, DiscardPolicy::kPriority}) {
    DiscardPlanner p(policy);
    Stage s(50, 7);
    EXPECT_EQ(p.plan(0.0, s.importance, s.drop), 0u);
    EXPECT_EQ(s.dropped(), 0u);
    s.importance[3] = kNeverDrop;
    EXPECT_EQ(p.plan(1.0, s.importance, s.drop), 49u);
    EXPECT_EQ(s.drop[3], 0);
    EXPECT_EQ(p.plan(std::nan(""), s.importance, s.drop), 0u);  // NaN is treated as 0
  }
}

TEST(DiscardPlanner, UniformSpreadsEvenly) {
  DiscardPlanner p(DiscardPolicy::kUniform);
  Stage s(100);
  ASSERT_EQ(p.plan(0.1, s.importance, s.drop), 10u);
  // Exactly one discard in each run of ten packets.
  for (std::size_t block = 0; block < 10; ++block) {
    int in_block = 0;
    for (std::size_t i = 0; i < 10; ++i)
      in_block += s.drop[block * 10 + i];
    EXPECT_EQ(in_block, 1) << "block " << block;
  }
}

TEST(DiscardPlanner, RandomIsSeededAndReproducible) {
  DiscardPlanner a(DiscardPolicy::kRandom, 42), b(DiscardPolicy::kRandom, 42),
      c(DiscardPolicy::kRandom, 43);
  Stage sa(500), sb(500), sc(500);
  a.plan(0.3, sa.importance, sa.drop);
  b.plan(0.3, sb.importance, sb.drop);
  c.plan(0.3, sc.importance, sc.drop);
  EXPECT_EQ(sa.drop, sb.drop);
  EXPECT_NE(sa.drop, sc.drop);
  EXPECT_EQ(sa.dropped(), 150u);
}

TEST(DiscardPlanner, PriorityDropsLowestImportanceFirstAndLaterAmongEquals) {
  DiscardPlanner p(DiscardPolicy::kPriority);
  //                 index: 0   1   2  3  4   5    6  7
  std::vector<std::uint8_t> imp{200, 10, 10, 5, 10, 255, 50, 10};
  std::vector<std::uint8_t> drop(imp.size());
  ASSERT_EQ(p.plan(3.0 / 8.0, imp, drop), 3u);
  // Importance 5 first (index 3), then the two latest of importance 10 (indices 7 and 4).
  EXPECT_EQ(drop, (std::vector<std::uint8_t>{0, 0, 0, 1, 1, 0, 0, 1}));
}

TEST(DiscardPlanner, WholeLevelsTakeTheCutLevelWholeAndCarryNoExcess) {
  DiscardPlanner p(DiscardPolicy::kPriority);
  p.set_whole_levels(true);
  // Three frames of 4, 3 and 2 packets (importance 30, 20, 10) and audio (255): at R = 3/10 the
  // count (3) ends inside the 3-packet frame at importance 20 after the 2 of importance 10, so
  // that frame goes whole: 5 marked, none of a frame sent in part.
  std::vector<std::uint8_t> imp{30, 30, 30, 30, 20, 20, 20, 255, 10, 10};
  std::vector<std::uint8_t> drop(imp.size());
  EXPECT_EQ(p.plan(0.3, imp, drop), 5u);
  EXPECT_EQ(drop, (std::vector<std::uint8_t>{0, 0, 0, 0, 1, 1, 1, 0, 1, 1}));
  EXPECT_DOUBLE_EQ(p.carry(), 0.0);  // the rounding remainder only, not the excess
  // A count that ends at a level's end marks exactly it; R = 0 marks nothing.
  EXPECT_EQ(p.plan(0.2, imp, drop), 2u);
  EXPECT_EQ(drop, (std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(p.plan(0.0, imp, drop), 0u);
  // Off (the default), the cut level's latest packets go: a frame in part.
  DiscardPlanner q(DiscardPolicy::kPriority);
  EXPECT_EQ(q.plan(0.3, imp, drop), 3u);
  EXPECT_EQ(drop, (std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 1, 0, 1, 1}));
}

TEST(DiscardPlanner, PriorityNeverDropsNeverDropPackets) {
  DiscardPlanner p(DiscardPolicy::kPriority);
  std::vector<std::uint8_t> imp{255, 255, 1, 255};
  std::vector<std::uint8_t> drop(imp.size());
  EXPECT_EQ(p.plan(1.0, imp, drop), 1u);
  EXPECT_EQ(drop, (std::vector<std::uint8_t>{0, 0, 1, 0}));
}

// Property: over many stages of random sizes and rates, the total discarded equals the sum of
// R x n to within half a packet, for every policy (docs/design.md §3 "long-run fraction equals R").
TEST(DiscardPlannerProperty, LongRunFractionEqualsRate) {
  std::mt19937_64 gen(1234);
  for (auto policy : {DiscardPolicy::kUniform, DiscardPolicy::kRandom, DiscardPolicy::kPriority}) {
    for (int trial = 0; trial < 20; ++trial) {
      DiscardPlanner p(policy, trial);
      const double rate = std::uniform_real_distribution<double>(0.0, 0.9)(gen);
      double expected = 0.0;
      std::size_t dropped = 0;
      for (int stage = 0; stage < 500; ++stage) {
        const auto n = std::uniform_int_distribution<std::size_t>(1, 400)(gen);
        Stage s(n);
        for (auto& v : s.importance)
          v = static_cast<std::uint8_t>(gen() % 255);
        const std::size_t count = p.plan(rate, s.importance, s.drop);
        ASSERT_EQ(count, s.dropped());
        dropped += count;
        expected += rate * static_cast<double>(n);
      }
      EXPECT_NEAR(static_cast<double>(dropped), expected, 0.5 + 1e-6)
          << to_string(policy) << " rate " << rate;
    }
  }
}

// Property: varying R from stage to stage still sums up exactly.
TEST(DiscardPlannerProperty, VaryingRatesSumUp) {
  std::mt19937_64 gen(99);
  DiscardPlanner p(DiscardPolicy::kUniform);
  double expected = 0.0;
  std::size_t dropped = 0;
  for (int stage = 0; stage < 2000; ++stage) {
    const auto n = std::uniform_int_distribution<std::size_t>(1, 64)(gen);
    const double rate = std::uniform_real_distribution<double>(0.0, 1.0)(gen);
    Stage s(n);
    dropped += p.plan(rate, s.importance, s.drop);
    expected += rate * static_cast<double>(n);
  }
  EXPECT_NEAR(static_cast<double>(dropped), expected, 0.5 + 1e-6);
}

// Property: survivors keep their order and exactly `count` are marked, for every policy.
TEST(DiscardPlannerProperty, MarksExactlyCountAndNeverNeverDrop) {
  std::mt19937_64 gen(7);
  for (auto policy : {DiscardPolicy::kUniform, DiscardPolicy::kRandom, DiscardPolicy::kPriority}) {
    DiscardPlanner p(policy, 5);
    for (int stage = 0; stage < 300; ++stage) {
      const auto n = std::uniform_int_distribution<std::size_t>(1, 300)(gen);
      Stage s(n);
      for (auto& v : s.importance)
        v = static_cast<std::uint8_t>(gen() % 256);
      const std::size_t count = p.plan(0.4, s.importance, s.drop);
      EXPECT_EQ(count, s.dropped());
      for (std::size_t i = 0; i < n; ++i) {
        if (s.importance[i] == kNeverDrop) {
          EXPECT_EQ(s.drop[i], 0);
        }
      }
      if (policy == DiscardPolicy::kPriority) {
        // Every kept droppable packet is at least as important as every dropped one.
        int max_dropped = -1, min_kept = 256;
        for (std::size_t i = 0; i < n; ++i) {
          if (s.drop[i]) {
            max_dropped = std::max<int>(max_dropped, s.importance[i]);
          } else if (s.importance[i] != kNeverDrop) {
            min_kept = std::min<int>(min_kept, s.importance[i]);
          }
        }
        EXPECT_LE(max_dropped, min_kept);
      }
    }
  }
}

TEST(DiscardPlanner, PriorityOrderIsTheOrderThePlannerDiscardsIn) {
  // For every count k, the first k packets of priority_order() are the ones plan() marks.
  const std::vector<std::uint8_t> importance = {254, 3, 0, 255, 3, 0, 128, 3, 255, 0, 17, 254};
  std::vector<std::uint32_t> order(importance.size());
  const std::size_t droppable = DiscardPlanner::priority_order(importance, order);
  EXPECT_EQ(droppable, 10u);
  for (std::size_t k = 0; k <= droppable; ++k) {
    DiscardPlanner p(DiscardPolicy::kPriority);
    std::vector<std::uint8_t> drop(importance.size());
    // A rate that rounds to exactly k packets (no carry on a fresh planner).
    const double rate = static_cast<double>(k) / static_cast<double>(importance.size());
    ASSERT_EQ(p.plan(rate, importance, drop), k);
    std::vector<std::uint8_t> first(importance.size(), 0);
    for (std::size_t j = 0; j < k; ++j) {
      first[order[j]] = 1;
    }
    EXPECT_EQ(first, drop) << "k = " << k;
  }
}

}  // namespace
}  // namespace predrop::core

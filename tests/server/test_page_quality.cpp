// The player page's P attributed to blocks by the RTP timestamps it presented, and browser block
// reports held for it (server/src/page_quality.hpp, docs/webrtc.md "Quality in the page").
// Times are passed in; nothing sleeps.
#include "page_quality.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace predrop::server::detail {
namespace {

constexpr std::uint32_t kBlock = 90'000;  // 1 s blocks at 90 kHz

core::StageReport report(std::uint32_t stage) {
  core::StageReport r;
  r.stage = stage;
  r.reception_period_us = 980'000;
  return r;
}

TEST(PageQualityJoin, SecondsSplitOverTheBlocksTheyPlayedByRtpTimestamp) {
  PageQualityJoin j;
  const std::uint32_t t0 = 1'000;
  j.begin_block(0, t0);
  j.begin_block(1, t0 + kBlock);
  // Second 1 played (t0, t0 + 0.25 s] wholly in block 0; second 2 the rest of block 0 (0.75)
  // and a quarter of block 1.
  EXPECT_TRUE(j.add({1.0, t0, t0 + kBlock / 4}));
  EXPECT_FALSE(j.quality(0).has_value());  // block 0's end not presented yet
  EXPECT_TRUE(j.add({0.5, t0 + kBlock / 4, t0 + kBlock + kBlock / 4}));
  ASSERT_TRUE(j.quality(0).has_value());
  // Block 0: 0.25 of second 1 weighs 1 (all of it) at P 1, second 2's 0.75 share at P 0.5.
  EXPECT_NEAR(*j.quality(0), (1.0 * 1.0 + 0.75 * 0.5) / 1.75, 1e-9);
  EXPECT_FALSE(j.quality(1).has_value());  // block 2 not begun: block 1's end unknown
  j.begin_block(2, t0 + 2 * kBlock);
  EXPECT_TRUE(j.add({0.8, t0 + kBlock + kBlock / 4, t0 + 2 * kBlock}));
  ASSERT_TRUE(j.quality(1).has_value());
  EXPECT_NEAR(*j.quality(1), (0.25 * 0.5 + 1.0 * 0.8) / 1.25, 1e-9);
}

TEST(PageQualityJoin, AFrozenSecondCountsForTheBlockOfTheStandingPicture) {
  PageQualityJoin j;
  j.begin_block(7, 500);
  j.begin_block(8, 500 + kBlock);
  j.begin_block(9, 500 + 2 * kBlock);
  EXPECT_TRUE(j.add({0.0, 500 + kBlock + 10, 500 + kBlock + 10}));  // no new frame
  EXPECT_FALSE(j.quality(8).has_value());
  EXPECT_TRUE(j.add({1.0, 500 + kBlock + 10, 500 + 2 * kBlock}));
  EXPECT_NEAR(*j.quality(8), 0.5, 1e-9);
  EXPECT_FALSE(j.quality(7).has_value());  // touched by no second
}

TEST(PageQualityJoin, RtpTimestampsWrap) {
  PageQualityJoin j;
  const std::uint32_t t0 = 0xFFFF'FFFFu - kBlock / 2;  // block 3 wraps the 32-bit clock
  j.begin_block(3, t0);
  j.begin_block(4, t0 + kBlock);
  EXPECT_TRUE(j.add({0.6, t0, t0 + kBlock}));
  EXPECT_NEAR(*j.quality(3), 0.6, 1e-9);
  // A span "backwards" (more than 2^31 ticks) names nothing.
  EXPECT_FALSE(j.add({1.0, t0 + kBlock, t0}));
  // Seconds of media no block remembered holds.
  PageQualityJoin empty;
  EXPECT_FALSE(empty.add({1.0, 10, 20}));
}

TEST(PageQualityJoin, ReportsWaitForTheirPInStageOrderAndGoWithoutItAtTheirDeadline) {
  PageQualityJoin j;
  j.begin_block(0, 0);
  j.begin_block(1, kBlock);
  j.begin_block(2, 2 * kBlock);
  std::vector<std::pair<std::uint32_t, double>> out;
  const auto take = [&](const core::StageReport& r, bool from_page) {
    out.emplace_back(r.stage, from_page ? r.performance : -r.performance - 1);
  };
  j.hold(report(0), 1'500'000, take);
  j.hold(report(1), 1'600'000, take);
  EXPECT_EQ(j.release(1'000'000, take), 0u);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(j.held(), 2u);
  // The page played past block 0's end: stage 0 goes with its P; stage 1 still waits.
  j.add({0.9, 0, kBlock + 100});
  EXPECT_EQ(j.release(1'100'000, take), 1u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, 0u);
  EXPECT_NEAR(out[0].second, 0.9, 1e-9);
  // Stage 1's P never comes: at its deadline it goes with the last P handed (no change for
  // the P comparison), not stalling the ones behind it.
  j.hold(report(2), 1'700'000, take);
  EXPECT_EQ(j.release(1'599'999, take), 0u);
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(j.release(1'600'000, take), 0u);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].first, 1u);
  EXPECT_NEAR(out[1].second, -0.9 - 1, 1e-9);  // not from the page, P = 0.9 held
  EXPECT_EQ(j.held(), 1u);
  // A report held with no wait (a policy that does not read P) goes at once.
  j.release(1'700'000, take);
  EXPECT_EQ(j.held(), 0u);
  EXPECT_EQ(out.size(), 3u);
}

TEST(PageQualityJoin, BeforeAnyPageReportTheLastPIsZeroAndAFullQueueReleasesTheOldest) {
  PageQualityJoin j;
  std::vector<std::uint32_t> stages;
  double p = -1;
  const auto take = [&](const core::StageReport& r, bool) {
    stages.push_back(r.stage);
    p = r.performance;
  };
  for (std::uint32_t s = 0; s < PageQualityJoin::kHeld + 2; ++s) {
    j.hold(report(s), 10, take);
  }
  EXPECT_EQ(stages, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(p, 0.0);
  EXPECT_EQ(j.held(), PageQualityJoin::kHeld);
  j.release(10, take);
  EXPECT_EQ(stages.size(), PageQualityJoin::kHeld + 2);
}

}  // namespace
}  // namespace predrop::server::detail

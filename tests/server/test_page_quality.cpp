// The player page's P attributed to blocks by the RTP timestamps it presented
// (server/src/page_quality.hpp, docs/webrtc.md "Quality in the page").
#include "page_quality.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace predrop::server::detail {
namespace {

constexpr std::uint32_t kBlock = 90'000;  // 1 s blocks at 90 kHz

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

}  // namespace
}  // namespace predrop::server::detail

// PullBackoff (server/include/predrop/server/pull_backoff.hpp): the retry schedule of a pulled
// stream with injected time and injected random draws.
#include "predrop/server/pull_backoff.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace predrop::server {
namespace {

constexpr std::uint64_t kSecond = 1'000'000;

TEST(PullBackoff, DoublesFromHalfASecondToTheThirtySecondCap) {
  PullBackoff b;
  std::vector<std::uint64_t> delays;
  std::uint64_t now = 0;
  for (int i = 0; i < 9; ++i) {
    const std::uint64_t d = b.on_failure(now, 0.5);  // u = 0.5: no jitter
    delays.push_back(d);
    now += d;
  }
  EXPECT_EQ(delays, (std::vector<std::uint64_t>{500'000, 1'000'000, 2'000'000, 4'000'000, 8'000'000,
                                                16'000'000, 30'000'000, 30'000'000, 30'000'000}));
  EXPECT_EQ(b.failures(), 9u);
}

TEST(PullBackoff, JitterSpreadsEachStepByAQuarterEitherWay) {
  PullBackoff low;
  PullBackoff high;
  EXPECT_EQ(low.on_failure(0, 0.0), 375'000u);     // 0.75 x 0.5 s
  EXPECT_EQ(high.on_failure(0, 0.999), 624'750u);  // just under 1.25 x 0.5 s
  for (int i = 0; i < 10; ++i) {
    (void)low.on_failure(0, 0.0);
    (void)high.on_failure(0, 0.999);
  }
  EXPECT_EQ(low.on_failure(0, 0.0), 22'500'000u);  // the cap's spread too
  EXPECT_EQ(high.on_failure(0, 0.999), 37'485'000u);
}

TEST(PullBackoff, AStableRunStartsTheScheduleAgain) {
  PullBackoff b;
  std::uint64_t now = 0;
  for (int i = 0; i < 5; ++i)
    now += b.on_failure(now, 0.5);
  EXPECT_EQ(b.failures(), 5u);
  b.on_playing(now);
  EXPECT_EQ(b.on_failure(now + 10 * kSecond, 0.5), 500'000u) << "10 s of playing is stable";
  EXPECT_EQ(b.failures(), 1u);
}

TEST(PullBackoff, AnUpstreamThatDropsEveryConnectionSoonKeepsBackingOff) {
  PullBackoff b;
  std::uint64_t now = 0;
  for (int i = 0; i < 4; ++i) {
    b.on_playing(now);
    now += 9 * kSecond;  // plays, but not for the stable time
    now += b.on_failure(now, 0.5);
  }
  EXPECT_EQ(b.failures(), 4u);
  EXPECT_EQ(b.step_us(b.failures() + 1), 8'000'000u);
}

TEST(PullBackoff, OptionsAreKeptSane) {
  PullBackoff b({0, 0, 3.0, 0});
  EXPECT_EQ(b.options().initial_us, 1u);
  EXPECT_EQ(b.options().cap_us, 1u);
  EXPECT_EQ(b.options().jitter, 0.5);
}

}  // namespace
}  // namespace predrop::server

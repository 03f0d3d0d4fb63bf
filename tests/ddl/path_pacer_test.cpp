// ddl::PathPacer on plain numbers as the clock: no limit before the first sample or on a path
// faster than the limit, which reports make samples, the estimate as the maximum of a window,
// the token bucket's burst and its long-run rate when driven by a 1 ms timer as the relay drives
// it, and the configurations it refuses.
#include <gtest/gtest.h>

#include <stdexcept>

#include "predrop/ddl/path_pacer.hpp"

using namespace predrop::ddl;

namespace {

constexpr std::size_t kPacket = 1000;  // bytes per datagram on the wire

// 4 Mbit/s = 0.5 bytes per µs: 81 packets of 1000 bytes arrive over 160 ms.
constexpr double kFourMbitPeriodUs = 80.0 * kPacket / 0.5;

}  // namespace

TEST(PathPacer, UnlimitedBeforeTheFirstSample) {
  PathPacer p;
  EXPECT_FALSE(p.estimate());
  EXPECT_FALSE(p.rate());
  EXPECT_EQ(p.allowance(0, kPacket, 64), 64U);
  p.sent(64, kPacket);
  EXPECT_EQ(p.allowance(0, kPacket, 64), 64U);
  EXPECT_EQ(p.next_due_us(5, kPacket), 5U);
}

TEST(PathPacer, ShortReportsAreNoSample) {
  PathPacer p;
  EXPECT_FALSE(p.on_report(7, kPacket, 10'000.0));  // fewer than min_packets
  EXPECT_FALSE(p.on_report(81, kPacket, 100.0));    // L shorter than min_period_us: one burst
  EXPECT_FALSE(p.on_report(81, kPacket, -1.0));     // nonsense
  EXPECT_FALSE(p.on_report(81, 0, 10'000.0));       // no size
  EXPECT_EQ(p.samples(), 0U);
  EXPECT_TRUE(p.on_report(81, kPacket, kFourMbitPeriodUs));
  ASSERT_TRUE(p.estimate());
  EXPECT_DOUBLE_EQ(*p.estimate(), 0.5);
  ASSERT_TRUE(p.rate());
  EXPECT_DOUBLE_EQ(*p.rate(), 0.5 * 1.25);
}

TEST(PathPacer, FreePathIsNotLimited) {
  PathPacer p;
  // 81 packets in 400 µs: 200 bytes/µs (1.6 Gbit/s), above unlimited_above.
  ASSERT_TRUE(p.on_report(81, kPacket, 400.0));
  EXPECT_GT(*p.estimate(), 125.0);
  EXPECT_FALSE(p.rate());
  EXPECT_EQ(p.allowance(0, kPacket, 81), 81U);
}

TEST(PathPacer, EstimateIsTheMaximumOfTheWindow) {
  PathPacer p(PathPacerConfig{.window = 3});
  ASSERT_TRUE(p.on_report(81, kPacket, kFourMbitPeriodUs));      // 0.5
  ASSERT_TRUE(p.on_report(81, kPacket, 2 * kFourMbitPeriodUs));  // 0.25: a slow reader
  EXPECT_DOUBLE_EQ(*p.estimate(), 0.5);
  ASSERT_TRUE(p.on_report(81, kPacket, 2 * kFourMbitPeriodUs));
  EXPECT_DOUBLE_EQ(*p.estimate(), 0.5);
  // The 0.5 sample leaves the window: the path got slower.
  ASSERT_TRUE(p.on_report(81, kPacket, 2 * kFourMbitPeriodUs));
  EXPECT_DOUBLE_EQ(*p.estimate(), 0.25);
  // A faster sample takes over at once.
  ASSERT_TRUE(p.on_report(81, kPacket, kFourMbitPeriodUs / 4));
  EXPECT_DOUBLE_EQ(*p.estimate(), 2.0);
}

TEST(PathPacer, BurstThenPacedAtTheRate) {
  PathPacer p;
  ASSERT_TRUE(p.on_report(81, kPacket, kFourMbitPeriodUs));  // rate 0.625 bytes/µs
  const double rate = *p.rate();
  // The bucket starts full: burst_packets (8) packets at once, not more.
  std::uint64_t now = 1'000'000;
  std::size_t n = p.allowance(now, kPacket, 81);
  EXPECT_EQ(n, 8U);
  p.sent(n, kPacket);
  EXPECT_EQ(p.allowance(now, kPacket, 81), 0U);
  // The next packet is due when its tokens are in.
  const std::uint64_t due = p.next_due_us(now, kPacket);
  EXPECT_GT(due, now);
  EXPECT_LE(due, now + static_cast<std::uint64_t>(kPacket / rate) + 2);
  EXPECT_EQ(p.allowance(due, kPacket, 81), 1U);
}

TEST(PathPacer, LongRunRateHoldsUnderAMillisecondTimer) {
  // Driven like the relay: at each wake-up send what is allowed, then sleep until the next packet
  // is due, rounded up to whole ms (at least 1).
  PathPacer p;
  ASSERT_TRUE(p.on_report(81, kPacket, kFourMbitPeriodUs));
  const double rate = *p.rate();
  const std::uint64_t start = 5'000'000;
  std::uint64_t now = start;
  std::size_t sent = 0;
  const std::uint64_t span = 2'000'000;  // 2 s
  while (now < start + span) {
    const std::size_t n = p.allowance(now, kPacket, 64);
    p.sent(n, kPacket);
    sent += n;
    const std::uint64_t due = p.next_due_us(now, kPacket);
    now += std::max<std::uint64_t>(1, (due - now + 999) / 1000) * 1000;
  }
  const double bytes = static_cast<double>(sent * kPacket);
  const double expected = rate * static_cast<double>(span) + 8.0 * kPacket;  // + the first burst
  EXPECT_NEAR(bytes, expected, 2.0 * kPacket);
}

TEST(PathPacer, IdleTimeRefillsNoMoreThanTheBucket) {
  PathPacer p;
  ASSERT_TRUE(p.on_report(81, kPacket, kFourMbitPeriodUs));
  std::uint64_t now = 0;
  p.sent(p.allowance(now, kPacket, 81), kPacket);
  // A long compute phase between two stages: the bucket is full again, not fuller.
  now += 10'000'000;
  EXPECT_EQ(p.allowance(now, kPacket, 81), 8U);
}

TEST(PathPacer, FastPathBucketCoversTheTimerGranularity) {
  // 25 bytes/µs (200 Mbit/s): 2 ms at 1.25 x that is 62 500 bytes, more than 8 packets.
  PathPacer p;
  ASSERT_TRUE(p.on_report(81, kPacket, 80.0 * kPacket / 25.0));
  ASSERT_TRUE(p.rate());
  EXPECT_EQ(p.allowance(0, kPacket, 81), 63U);  // ceil(62 500 / 1000)
}

TEST(PathPacer, RefusesConfigurationsThatCannotWork) {
  EXPECT_THROW(PathPacer(PathPacerConfig{.gain = 0.9}), std::invalid_argument);
  EXPECT_THROW(PathPacer(PathPacerConfig{.window = 0}), std::invalid_argument);
  EXPECT_THROW(PathPacer(PathPacerConfig{.window = 33}), std::invalid_argument);
  EXPECT_THROW(PathPacer(PathPacerConfig{.burst_packets = 0}), std::invalid_argument);
}

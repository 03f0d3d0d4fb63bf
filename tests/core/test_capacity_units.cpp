// The capacity policy's small units on their own: the dispersion filter, the ring of
// planned stages (bytes sent and the queue they add) and the discard curve's byte budget.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>

#include "predrop/core/discard_curve.hpp"
#include "predrop/core/dispersion_filter.hpp"
#include "predrop/core/sent_stages.hpp"

namespace predrop::core {
namespace {

TEST(DispersionFilter, RateIsTheLargestConfirmedReading) {
  DispersionFilter f;
  EXPECT_EQ(f.rate(), 0.0);
  f.note(0.3);
  EXPECT_DOUBLE_EQ(f.rate(), 0.3);  // the first reading is all there is
  f.note(0.29);
  f.note(0.1);  // another flow's packet between the pair: low
  EXPECT_DOUBLE_EQ(f.rate(), 0.3);
}

TEST(DispersionFilter, ALoneHighReadingIsNotTheRateUntilConfirmed) {
  // The bed after an idle block end: a delay line let the pair go together, 700x the path.
  DispersionFilter f;
  f.note(0.15);
  f.note(0.152);
  f.note(105.0);
  EXPECT_DOUBLE_EQ(f.rate(), 0.152);
  EXPECT_TRUE(f.steady(2, 0.85));  // the unconfirmed reading does not scatter the rest
  // The bottleneck did grow: the next block's pair reads it too.
  f.note(0.5);
  EXPECT_DOUBLE_EQ(f.rate(), 0.152);
  f.note(0.48);
  EXPECT_DOUBLE_EQ(f.rate(), 0.5);
  EXPECT_FALSE(f.steady(2, 0.85));  // the old rate's readings are still in the window
}

TEST(DispersionFilter, WithNoTwoReadingsAgreeingTheSecondLargest) {
  DispersionFilter f;
  f.note(0.2);
  f.note(3.0);
  EXPECT_DOUBLE_EQ(f.rate(), 0.2);
  f.note(0.1);
  EXPECT_DOUBLE_EQ(f.rate(), 0.2);
}

TEST(DispersionFilter, OldReadingsLeaveTheWindow) {
  DispersionFilter f;
  f.note(1.0);
  for (std::size_t i = 0; i < DispersionFilter::kWindow; ++i)
    f.note(0.25);
  EXPECT_DOUBLE_EQ(f.rate(), 0.25);
}

TEST(DispersionFilter, SteadyNeedsEnoughReadingsCloseToTheLargest) {
  DispersionFilter f;
  f.note(0.3);
  EXPECT_FALSE(f.steady(2, 0.85));  // one reading says nothing about the spread
  f.note(0.29);
  EXPECT_TRUE(f.steady(2, 0.85));
  f.note(0.15);  // shared: half the rate
  EXPECT_FALSE(f.steady(2, 0.85));
}

TEST(DispersionFilter, ClearAndRestart) {
  DispersionFilter f;
  f.note(0.5);
  f.note(0.4);
  f.restart(0.2);  // the bottleneck slowed: only the fresh reading counts
  EXPECT_DOUBLE_EQ(f.rate(), 0.2);
  EXPECT_FALSE(f.steady(2, 0.85));
  f.clear();
  EXPECT_EQ(f.rate(), 0.0);
}

TEST(SentStages, BytesSentNeedTheNextStart) {
  SentStages s;
  s.start(7, 1000, 1e6, 5000);
  EXPECT_FALSE(s.bytes_sent(7));
  s.start(8, 1000, 1e6, 5800);
  ASSERT_TRUE(s.bytes_sent(7));
  EXPECT_DOUBLE_EQ(*s.bytes_sent(7), 800.0);
  EXPECT_EQ(s.find(6), nullptr);
  ASSERT_NE(s.find(8), nullptr);
  EXPECT_EQ(s.find(8)->bytes_before, 5800U);
}

TEST(SentStages, AStageThatLeftTheRingIsNotFound) {
  SentStages s;
  s.start(1, 10, 1, 0);
  s.start(1 + SentStages::kRing, 10, 1, 0);
  EXPECT_EQ(s.find(1), nullptr);
  EXPECT_FALSE(s.bytes_sent(1));
}

TEST(SentStages, ACounterGoingBackTellsNothing) {
  SentStages s;
  s.start(3, 10, 1, 900);
  s.start(4, 10, 1, 100);
  EXPECT_FALSE(s.bytes_sent(3));
}

TEST(SentStages, QueueAtStartAddsWhatTheStagesInFlightSentBeyondTheEstimate) {
  SentStages s;
  // Stages 11 and 12 each sent 1500 bytes in 1000 µs at an estimate of 1 byte/µs: +500 µs each.
  s.start(11, 2000, 1000, 0);
  s.start(12, 2000, 1000, 1500);
  s.start(13, 2000, 1000, 3000);
  EXPECT_DOUBLE_EQ(s.queue_at_start(13, 10, 100, 1.0, 1e6), 1100.0);
  // The report of the stage just before: nothing in flight to add.
  EXPECT_DOUBLE_EQ(s.queue_at_start(13, 12, 100, 1.0, 1e6), 100.0);
  // Kept within the queue's limit, and never below empty.
  EXPECT_DOUBLE_EQ(s.queue_at_start(13, 10, 100, 1.0, 600), 600.0);
  EXPECT_DOUBLE_EQ(s.queue_at_start(13, 10, 0, 10.0, 1e6), 0.0);
  // No estimate: the reported queue as it is.
  EXPECT_DOUBLE_EQ(s.queue_at_start(13, 10, 100, 0.0, 1e6), 100.0);
}

TEST(DiscardCurve, FewestPacketsThatRemoveTheExcess) {
  // 10 packets; discarding k removes removable[k] bytes (small packets first).
  const std::array<std::uint64_t, 5> removable{0, 100, 250, 450, 700};
  EXPECT_DOUBLE_EQ(rate_keeping(1000, 1000, 10, removable, 1.0), 0.0);  // fits
  EXPECT_DOUBLE_EQ(rate_keeping(900, 1000, 10, removable, 1.0), 0.1);   // 100 to remove
  EXPECT_DOUBLE_EQ(rate_keeping(899, 1000, 10, removable, 1.0), 0.2);   // 101: two packets
  EXPECT_DOUBLE_EQ(rate_keeping(0, 1000, 10, removable, 1.0), 0.4);     // all droppable
  EXPECT_DOUBLE_EQ(rate_keeping(-1e300, 1000, 10, removable, 1.0), 0.4);
}

TEST(DiscardCurve, WithoutTheCurveBetaStandsIn) {
  EXPECT_DOUBLE_EQ(rate_keeping(750, 1000, 0, {}, 1.0), 0.25);
  // Discards that remove half their packet share of bytes: twice the R for the same budget.
  EXPECT_DOUBLE_EQ(rate_keeping(750, 1000, 0, {}, 0.5), 0.5);
}

}  // namespace
}  // namespace predrop::core

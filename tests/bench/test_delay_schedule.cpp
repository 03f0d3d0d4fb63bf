// The delay line's schedule (bench/delayline): packets leave at arrival + their class's delay, in
// arrival order within a class, as batches an NFQUEUE batch verdict can accept. Times are made
// up; nothing sleeps.
#include <gtest/gtest.h>

#include <vector>

#include "predrop/delayline/delay_schedule.hpp"

namespace predrop::delayline {
namespace {

std::vector<DueBatch> release(DelaySchedule& s, std::uint64_t now_us) {
  std::vector<DueBatch> out;
  s.release_due(now_us, [&](const DueBatch& b) { out.push_back(b); });
  return out;
}

TEST(DelayScheduleTest, APacketLeavesExactlyAtArrivalPlusItsDelay) {
  DelaySchedule s({{1, 50'000}}, 16);
  ASSERT_TRUE(s.hold(0, 7, 1'000'000));
  EXPECT_EQ(s.next_deadline_us(), 1'050'000u);
  EXPECT_TRUE(release(s, 1'049'999).empty());
  const auto due = release(s, 1'050'000);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].queue, 0u);
  EXPECT_EQ(due[0].last_id, 7u);
  EXPECT_EQ(due[0].count, 1u);
  EXPECT_EQ(due[0].worst_late_us, 0u);
  EXPECT_EQ(s.next_deadline_us(), std::nullopt);
}

TEST(DelayScheduleTest, ReleasesADueRunInArrivalOrderAsOneBatchAndKeepsTheRest) {
  DelaySchedule s({{1, 10'000}}, 16);
  for (std::uint32_t id = 1; id <= 5; ++id) {
    ASSERT_TRUE(s.hold(0, id, 1'000'000 + id * 1000));
  }
  // Deadlines 1'011'000 .. 1'015'000: at 1'013'500 ids 1..3 are due, the newest of them is 3.
  const auto due = release(s, 1'013'500);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].last_id, 3u);
  EXPECT_EQ(due[0].count, 3u);
  EXPECT_EQ(due[0].worst_late_us, 2'500u);  // id 1 was due at 1'011'000
  EXPECT_EQ(s.held(0), 2u);
  EXPECT_EQ(s.next_deadline_us(), 1'014'000u);
}

TEST(DelayScheduleTest, EachClassKeepsItsOwnDelayAndTheEarliestDeadlineWins) {
  // Queue 2 holds 150 ms, queue 5 holds 10 ms: a later packet of the short class leaves first.
  DelaySchedule s({{2, 150'000}, {5, 10'000}}, 16);
  ASSERT_TRUE(s.hold(0, 100, 0));
  ASSERT_TRUE(s.hold(1, 200, 20'000));
  EXPECT_EQ(s.next_deadline_us(), 30'000u);
  auto due = release(s, 30'000);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].queue, 1u);
  EXPECT_EQ(due[0].last_id, 200u);
  EXPECT_EQ(s.next_deadline_us(), 150'000u);
  due = release(s, 150'000);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].queue, 0u);
  EXPECT_EQ(due[0].last_id, 100u);
}

TEST(DelayScheduleTest, AFullQueueRefusesAPacketAndHoldsNothingOfIt) {
  DelaySchedule s({{1, 1'000}, {2, 1'000}}, 2);
  EXPECT_TRUE(s.hold(0, 1, 0));
  EXPECT_TRUE(s.hold(0, 2, 1));
  EXPECT_FALSE(s.hold(0, 3, 2));
  EXPECT_TRUE(s.hold(1, 9, 2));  // the other class has its own room
  EXPECT_EQ(s.held(0), 2u);
  EXPECT_EQ(s.held_max(0), 2u);
  const auto due = release(s, 10'000);
  ASSERT_EQ(due.size(), 2u);
  EXPECT_EQ(due[0].last_id, 2u);
  EXPECT_EQ(due[0].count, 2u);
  // The ring wraps: room again, order kept across the wrap.
  EXPECT_TRUE(s.hold(0, 4, 20'000));
  EXPECT_TRUE(s.hold(0, 5, 20'001));
  EXPECT_EQ(release(s, 21'001)[0].last_id, 5u);
}

TEST(DelayScheduleTest, ReleaseAllEmptiesEveryQueueWhateverTheDeadlines) {
  DelaySchedule s({{1, 5'000'000}, {2, 0}}, 8);
  ASSERT_TRUE(s.hold(0, 1, 0));
  ASSERT_TRUE(s.hold(0, 2, 0));
  std::vector<DueBatch> out;
  s.release_all([&](const DueBatch& b) { out.push_back(b); });
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].last_id, 2u);
  EXPECT_EQ(s.held(0), 0u);
}

TEST(DelayScheduleTest, ZeroDelayReleasesAtArrival) {
  DelaySchedule s({{3, 0}}, 4);
  ASSERT_TRUE(s.hold(0, 1, 500));
  EXPECT_EQ(release(s, 500).size(), 1u);
}

TEST(ParseQueueClassTest, ReadsNumberAndDelayWithOrWithoutUnit) {
  auto c = parse_queue_class("3=50");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->queue_num, 3);
  EXPECT_EQ(c->delay_us, 50'000u);
  EXPECT_EQ(parse_queue_class("4=12.5ms")->delay_us, 12'500u);
  EXPECT_EQ(parse_queue_class("5=2500us")->delay_us, 2'500u);
  EXPECT_EQ(parse_queue_class("6=0.15s")->delay_us, 150'000u);
  EXPECT_EQ(parse_queue_class("65535=0")->queue_num, 65535);
}

TEST(ParseQueueClassTest, RefusesMalformedSpecsWithAReason) {
  for (const char* bad :
       {"", "3", "=50", "x=50", "3=", "3=-1", "3=abc", "70000=5", "3=11s", "3=50 ms", "3=nan"}) {
    const auto c = parse_queue_class(bad);
    EXPECT_FALSE(c.ok()) << bad;
    if (!c.ok()) {
      EXPECT_FALSE(c.error().message.empty());
    }
  }
}

}  // namespace
}  // namespace predrop::delayline

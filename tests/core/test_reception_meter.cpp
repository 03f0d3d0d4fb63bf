#include "predrop/core/reception_meter.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace predrop::core {
namespace {

struct Collector {
  std::vector<StageMeasurement> stages;
  ReceptionMeter meter;
  explicit Collector(ReceptionMeterConfig cfg = {})
      : meter(cfg, [this](const StageMeasurement& m) { stages.push_back(m); }) {}
  void packet(std::uint32_t stage, std::uint16_t index, std::uint16_t count, std::uint64_t t,
              std::optional<std::int64_t> owd = std::nullopt) {
    meter.on_packet(PacketArrival{stage, index, count, t, owd});
  }
};

TEST(ReceptionMeter, CompleteStageClosesAtOnceWithPeriod) {
  Collector c;
  c.packet(0, 0, 3, 1000);
  c.packet(0, 1, 3, 1500);
  EXPECT_TRUE(c.stages.empty());
  c.packet(0, 2, 3, 4000);
  ASSERT_EQ(c.stages.size(), 1u);
  EXPECT_EQ(c.stages[0].stage, 0u);
  EXPECT_DOUBLE_EQ(c.stages[0].reception_period_us, 3000.0);
  EXPECT_EQ(c.stages[0].received, 3u);
  EXPECT_EQ(c.stages[0].announced, 3u);
}

TEST(ReceptionMeter, LostTailClosesAfterGraceOfNextStage) {
  ReceptionMeterConfig cfg;
  cfg.reorder_grace_us = 100;
  Collector c(cfg);
  c.packet(5, 0, 4, 1000);
  c.packet(5, 1, 4, 1100);  // indices 2 and 3 are lost
  c.packet(6, 0, 4, 1200);
  EXPECT_TRUE(c.stages.empty());  // within grace: a reordered tail could still come
  c.packet(5, 2, 4, 1250);        // ... and one does
  c.packet(6, 1, 4, 1350);        // grace (100 µs since 1200) has passed
  ASSERT_EQ(c.stages.size(), 1u);
  EXPECT_EQ(c.stages[0].stage, 5u);
  EXPECT_EQ(c.stages[0].received, 3u);
  EXPECT_EQ(c.stages[0].announced, 4u);
  EXPECT_DOUBLE_EQ(c.stages[0].reception_period_us, 250.0);
  c.packet(5, 3, 4, 1400);  // too late now
  EXPECT_EQ(c.meter.stats().late, 1u);
}

TEST(ReceptionMeter, DuplicatesAndBadIndicesCounted) {
  Collector c;
  c.packet(0, 0, 2, 10);
  c.packet(0, 0, 2, 11);
  c.packet(0, 7, 2, 12);
  c.packet(0, 1, 2, 13);
  ASSERT_EQ(c.stages.size(), 1u);
  EXPECT_EQ(c.stages[0].received, 2u);
  EXPECT_EQ(c.stages[0].duplicates, 1u);
  EXPECT_EQ(c.meter.stats().out_of_range, 1u);
}

TEST(ReceptionMeter, IdleStageClosedByPoll) {
  ReceptionMeterConfig cfg;
  cfg.idle_timeout_us = 1000;
  Collector c(cfg);
  c.packet(0, 0, 10, 100);
  c.meter.poll(1000);
  EXPECT_TRUE(c.stages.empty());
  c.meter.poll(1100);
  ASSERT_EQ(c.stages.size(), 1u);
  EXPECT_EQ(c.stages[0].received, 1u);
  EXPECT_DOUBLE_EQ(c.stages[0].reception_period_us, 0.0);
}

TEST(ReceptionMeter, StagesReportedInOrderWhenThreeOverlap) {
  Collector c;
  c.packet(0, 0, 9, 0);
  c.packet(1, 0, 9, 1);
  c.packet(2, 0, 9, 2);  // needs a slot: stage 0 is closed first
  ASSERT_EQ(c.stages.size(), 1u);
  EXPECT_EQ(c.stages[0].stage, 0u);
  c.meter.flush();
  ASSERT_EQ(c.stages.size(), 3u);
  EXPECT_EQ(c.stages[1].stage, 1u);
  EXPECT_EQ(c.stages[2].stage, 2u);
}

TEST(ReceptionMeter, QueueDelayAgainstBaseOfRecentStages) {
  ReceptionMeterConfig cfg;
  cfg.tail_packets = 2;
  Collector c(cfg);
  // Stage 0: empty queue, OWD 1000 µs (clock offset included).
  c.packet(0, 0, 2, 0, 1000);
  c.packet(0, 1, 2, 10, 1000);
  // Stage 1: a queue builds from 1000 to 41000 µs.
  c.packet(1, 0, 3, 20, 1000);
  c.packet(1, 1, 3, 30, 21000);
  c.packet(1, 2, 3, 40, 41000);
  // Stage 2: the queue stays full; within the stage the delay does not grow, but against the
  // base delay it is still 40 ms.
  c.packet(2, 0, 2, 50, 41000);
  c.packet(2, 1, 2, 60, 41000);
  ASSERT_EQ(c.stages.size(), 3u);
  EXPECT_DOUBLE_EQ(*c.stages[0].queue_delay_us, 0.0);
  EXPECT_DOUBLE_EQ(*c.stages[1].queue_delay_us, 30000.0);  // mean of the last two: 31000 - 1000
  EXPECT_DOUBLE_EQ(*c.stages[2].queue_delay_us, 40000.0);
}

}  // namespace
}  // namespace predrop::core

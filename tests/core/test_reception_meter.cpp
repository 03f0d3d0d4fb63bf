#include "predrop/core/reception_meter.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace predrop::core {
namespace {

struct Collector {
  std::vector<StageMeasurement> stages;
  ReceptionMeter meter;
  explicit Collector(ReceptionMeterConfig cfg = {})
      : meter(cfg, [this](const StageMeasurement& m) { stages.push_back(m); }) {}
  void packet(std::uint32_t stage, std::uint16_t index, std::uint16_t count, std::uint64_t t,
              std::optional<std::int64_t> owd = std::nullopt, std::uint32_t bytes = 0) {
    meter.on_packet(PacketArrival{stage, index, count, t, owd, bytes});
  }
};

// A packet of the bed's key frame as a link counts it (1242 bytes of datagram + 42).
constexpr std::uint32_t kFull = 1284;
// The one-way delay's constant part (clock offset and propagation).
constexpr std::int64_t kOffset = 5'000;

/// Stage 0 of `n` packets sent `send_gap` µs apart from t = 0 through a tbf-like bottleneck of
/// `rate` bytes per µs whose bucket lets the first `bucket` packets through at once; returns
/// each packet's arrival time.
std::vector<std::uint64_t> through_bottleneck(Collector& c, std::uint16_t n, std::uint64_t send_gap,
                                              double rate, std::uint16_t bucket) {
  std::vector<std::uint64_t> arrivals;
  double last_departure = 0;
  for (std::uint16_t i = 0; i < n; ++i) {
    const auto send = static_cast<double>(i * send_gap);
    const double departure = i < bucket ? send : std::fmax(send, last_departure + kFull / rate);
    last_departure = departure;
    const auto arrival = static_cast<std::uint64_t>(departure) + 100;
    arrivals.push_back(arrival);
    c.packet(0, i, n, arrival,
             static_cast<std::int64_t>(arrival - static_cast<std::uint64_t>(send)) + kOffset,
             kFull);
  }
  return arrivals;
}

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

TEST(ReceptionMeter, DispersionIsTheBottlenecksRateWithoutTheBucketsPackets) {
  Collector c;
  // A key frame of 10 packets sent 1 ms apart into 800 kbit/s (0.1 bytes/µs) behind a bucket
  // that passes 3 of them at once: pairs from the 5th packet on left back to back.
  through_bottleneck(c, 10, 1'000, 0.1, 3);
  ASSERT_EQ(c.stages.size(), 1u);
  ASSERT_TRUE(c.stages[0].path.has_value());
  const PathMeasurement& p = *c.stages[0].path;
  EXPECT_EQ(p.bytes_received, 10u * kFull);
  // The pair (3rd, 4th) is not one: the 3rd left at once (bucket), so the 4th's gap is shorter
  // than its bytes at the rate. The 4th waited: from it on every pair counts.
  EXPECT_EQ(p.dispersion_bytes, 6u * kFull);
  EXPECT_NEAR(static_cast<double>(p.dispersion_bytes) / static_cast<double>(p.dispersion_us), 0.1,
              0.001);
  // The last packet waited longest: it left 7 packets of 12.84 ms after the 3rd (2 ms), and was
  // sent at 9 ms.
  EXPECT_NEAR(p.queue_max_us, 2'000.0 + 7 * 12'840.0 - 9'000.0, 2.0);
  EXPECT_DOUBLE_EQ(p.queue_min_us, 0.0);  // the bucket's packets did not wait
}

TEST(ReceptionMeter, BackToBackRateOfTheOpenStageForAnInterimAlert) {
  Collector c;
  // 4 of a stage's 10 packets, sent at once into 0.1 bytes/µs: they leave 12.84 ms apart.
  for (std::uint16_t i = 0; i < 4; ++i) {
    const std::uint64_t arrival = 100 + i * 12'840u;
    c.packet(0, i, 10, arrival, static_cast<std::int64_t>(arrival) + kOffset, kFull);
  }
  ASSERT_TRUE(c.stages.empty()) << "still open";
  EXPECT_NEAR(c.meter.back_to_back_rate(0), 0.1, 0.001);
  EXPECT_EQ(c.meter.back_to_back_rate(1), 0.0) << "no such stage open";
  // Packets 1 ms apart are no sender's pair: whatever their gaps, no reading.
  Collector d;
  through_bottleneck(d, 1, 1'000, 0.1, 0);
  for (std::uint16_t i = 0; i < 4; ++i) {
    const std::uint64_t send = 1'000'000 + i * 1'000u;
    d.packet(1, i, 10, send + 12'840u * i, static_cast<std::int64_t>(12'840u * i) + kOffset, kFull);
  }
  EXPECT_EQ(d.meter.back_to_back_rate(1), 0.0);
}

TEST(ReceptionMeter, DispersionIgnoresAForwardingStall) {
  Collector c;
  // 20 packets sent 1 ms apart into 0.1 bytes/µs, no bucket; then a stall: the 21st is held
  // 30 ms in a router and the 22nd follows it within 50 µs (both still queued behind the
  // others, so both pairs qualify), which would make a sum over all pairs wrong both ways.
  std::vector<std::uint64_t> a = through_bottleneck(c, 20, 1'000, 0.1, 0);
  const std::uint64_t late = a.back() + 12'840 + 30'000;
  c.packet(0, 20, 22, late, static_cast<std::int64_t>(late - 20'000) + kOffset, kFull);
  c.packet(0, 21, 22, late + 50, static_cast<std::int64_t>(late + 50 - 21'000) + kOffset, kFull);
  ASSERT_EQ(c.stages.size(), 1u);
  const PathMeasurement& p = *c.stages[0].path;
  // The 18 regular pairs (the first packet did not wait, so the pair it starts is none); both
  // stall pairs are outside the band around the median.
  EXPECT_EQ(p.dispersion_bytes, 18u * kFull);
  EXPECT_NEAR(static_cast<double>(p.dispersion_bytes) / static_cast<double>(p.dispersion_us), 0.1,
              0.001);
}

TEST(ReceptionMeter, UndispersedBurstOnAnOpenPath) {
  Collector c;
  // Ten packets sent 1 ms apart and received 1 ms apart: nothing queued, the burst crossed at
  // its send rate.
  for (std::uint16_t i = 0; i < 10; ++i) {
    c.packet(0, i, 10, 10'000 + i * 1'000u, kOffset, kFull);
  }
  ASSERT_EQ(c.stages.size(), 1u);
  const PathMeasurement& p = *c.stages[0].path;
  EXPECT_EQ(p.dispersion_bytes, 0u);
  EXPECT_EQ(p.dispersion_us, 0u);
  EXPECT_DOUBLE_EQ(p.queue_max_us, 0.0);
  EXPECT_EQ(p.burst_bytes, 9u * kFull);
  EXPECT_EQ(p.burst_send_us, 9'000u);
  EXPECT_EQ(p.burst_arrival_us, 9'000u);
}

TEST(ReceptionMeter, LargestBurstOfTheStageAndItsDispersedArrival) {
  Collector c;
  // Two bursts 20 ms apart (a send gap above train_gap_us): 3 packets, then 6 that a 0.1
  // bytes/µs bottleneck spreads. The larger one is reported.
  std::uint64_t t = 0;
  for (std::uint16_t i = 0; i < 3; ++i) {
    c.packet(0, i, 9, t + i * 1'000u, kOffset, kFull);
  }
  t = 22'000;
  for (std::uint16_t i = 0; i < 6; ++i) {
    const std::uint64_t send = t + i * 1'000u;
    const std::uint64_t arrival = t + i * 12'840u;
    c.packet(0, static_cast<std::uint16_t>(3 + i), 9, arrival,
             static_cast<std::int64_t>(arrival - send) + kOffset, kFull);
  }
  ASSERT_EQ(c.stages.size(), 1u);
  const PathMeasurement& p = *c.stages[0].path;
  EXPECT_EQ(p.burst_bytes, 5u * kFull);
  EXPECT_EQ(p.burst_send_us, 5'000u);
  EXPECT_EQ(p.burst_arrival_us, 5u * 12'840u);
}

TEST(ReceptionMeter, NoPathMeasurementWithoutSizes) {
  Collector c;
  c.packet(0, 0, 2, 0, 1000);
  c.packet(0, 1, 2, 10, 1000);
  ASSERT_EQ(c.stages.size(), 1u);
  EXPECT_FALSE(c.stages[0].path.has_value());
}

}  // namespace
}  // namespace predrop::core

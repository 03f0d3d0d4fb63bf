#include "predrop/core/stage_alert_detector.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace predrop::core {
namespace {

constexpr std::uint32_t kFull = 1284;    // a full packet as a link counts it
constexpr std::int64_t kOffset = 7'000;  // clock offset + propagation: cancels out
constexpr std::int64_t kThreshold = 80'000;

/// A meter and a detector fed together, as chain::StageReceiver does.
struct Receiver {
  ReceptionMeter meter{ReceptionMeterConfig{}, [](const StageMeasurement&) {}};
  StageAlertDetector detector{StageAlertConfig{kThreshold}};
  std::vector<StageAlert> alerts;

  void packet(std::uint32_t stage, std::uint16_t index, std::uint16_t count, std::uint64_t arrival,
              std::int64_t queue_us, std::uint32_t bytes = kFull) {
    const PacketArrival p{stage, index, count, arrival, queue_us + kOffset, bytes};
    meter.on_packet(p);
    if (auto a = detector.on_packet(p, meter)) alerts.push_back(*a);
  }
};

TEST(StageAlertDetector, OffByDefault) {
  ReceptionMeter meter{ReceptionMeterConfig{}, [](const StageMeasurement&) {}};
  StageAlertDetector d{StageAlertConfig{}};
  EXPECT_FALSE(d.enabled());
  for (std::uint16_t i = 0; i < 20; ++i) {
    const PacketArrival p{0, i, 100, 1'000u * i, std::int64_t{500'000} * i, kFull};
    meter.on_packet(p);
    EXPECT_FALSE(d.on_packet(p, meter));
  }
}

TEST(StageAlertDetector, OneAlertPerStageOnceTheQueuePassesTheThreshold) {
  Receiver r;
  // Stage 0 crosses an empty path: its packets set the base delay, no alert.
  for (std::uint16_t i = 0; i < 20; ++i)
    r.packet(0, i, 20, 10'000u * i, 0);
  EXPECT_TRUE(r.alerts.empty());
  // Stage 1 meets a bottleneck at 0.1 bytes/µs (12.84 ms per packet): the queue grows by
  // 2.84 ms a packet when sent 10 ms apart. The alert comes with the first packet past 80 ms,
  // carrying that packet's queue and the last 8 packets' arrival rate.
  const std::uint64_t start = 1'000'000;
  std::optional<std::size_t> first_alert_at;
  for (std::uint16_t i = 0; i < 60; ++i) {
    const auto queue = static_cast<std::int64_t>(2'840) * i;
    r.packet(1, i, 60, start + 10'000u * i + static_cast<std::uint64_t>(queue), queue);
    if (!r.alerts.empty() && !first_alert_at) first_alert_at = i;
  }
  ASSERT_EQ(r.alerts.size(), 1u) << "one alert per stage";
  EXPECT_EQ(*first_alert_at, 29u);  // 29 x 2.84 ms = 82.4 ms, the first past 80 ms
  const StageAlert& a = r.alerts[0];
  EXPECT_EQ(a.stage, 1u);
  EXPECT_NEAR(a.queue_us, 82'360, 1);
  EXPECT_NEAR(a.rate, 0.1, 0.001);  // 7 packets over 7 gaps of 12.84 ms
  EXPECT_EQ(r.detector.alerts(), 1u);
  // The next stage may raise its own.
  for (std::uint16_t i = 0; i < 10; ++i) {
    r.packet(2, i, 10, 3'000'000 + 12'840u * i, 100'000 + 1'000 * i);
  }
  ASSERT_EQ(r.alerts.size(), 2u);
  EXPECT_EQ(r.alerts[1].stage, 2u);
}

TEST(StageAlertDetector, NeedsEightPacketsOfTheNewestStageAndIgnoresStragglers) {
  Receiver r;
  for (std::uint16_t i = 0; i < 10; ++i)
    r.packet(0, i, 12, 10'000u * i, 0);
  // Stage 1 starts; then two stragglers of stage 0 arrive with a long queue: they say nothing
  // about the stage in flight.
  for (std::uint16_t i = 0; i < 4; ++i)
    r.packet(1, i, 40, 200'000 + 1'000u * i, 90'000);
  r.packet(0, 10, 12, 205'000, 150'000);
  r.packet(0, 11, 12, 206'000, 150'000);
  EXPECT_TRUE(r.alerts.empty());
  // Four more packets of stage 1 make eight: now it raises.
  for (std::uint16_t i = 4; i < 7; ++i)
    r.packet(1, i, 40, 200'000 + 1'000u * i, 90'000);
  EXPECT_TRUE(r.alerts.empty()) << "seven packets are not enough for a rate";
  r.packet(1, 7, 40, 207'000, 90'000);
  ASSERT_EQ(r.alerts.size(), 1u);
  EXPECT_EQ(r.alerts[0].stage, 1u);
}

TEST(StageAlertDetector, PacketsWithoutOneWayDelayNeverAlert) {
  ReceptionMeter meter{ReceptionMeterConfig{}, [](const StageMeasurement&) {}};
  StageAlertDetector d{StageAlertConfig{kThreshold}};
  for (std::uint16_t i = 0; i < 30; ++i) {
    const PacketArrival p{0, i, 30, 1'000u * i, std::nullopt, kFull};
    meter.on_packet(p);
    EXPECT_FALSE(d.on_packet(p, meter));
  }
}

}  // namespace
}  // namespace predrop::core

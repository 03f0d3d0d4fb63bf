// Coupled sessions (core/shared_bottleneck.hpp, RFC 8699's flow state exchange): the group's
// arithmetic on its own, then two capacity policies coupled through it. How coupling behaves on
// paths is the path simulator's (`predrop-pathsim run --coupled`, bench/README.md). No clock.
#include <gtest/gtest.h>

#include <memory>

#include "predrop/core/capacity_policy.hpp"
#include "predrop/core/shared_bottleneck.hpp"

namespace predrop::core {
namespace {

TEST(SharedBottleneck, MembersGetEqualSharesOfTheSumOfTheirEstimates) {
  SharedBottleneck g;
  const auto a = g.join();
  const auto b = g.join();
  EXPECT_DOUBLE_EQ(g.update(a, 1.0), 1.0);  // alone with an estimate: all of it
  EXPECT_DOUBLE_EQ(g.update(b, 3.0), 2.0);  // (1 + 3) / 2
  EXPECT_DOUBLE_EQ(g.share(a), 2.0);
  EXPECT_EQ(g.limited(), 2u);
}

TEST(SharedBottleneck, OneMembersDecreaseIsEveryMembersAndSoIsAnIncrease) {
  SharedBottleneck g;
  const auto a = g.join();
  const auto b = g.join();
  const auto c = g.join();
  for (auto m : {a, b, c})
    (void)g.update(m, 2.0);  // aggregate 6, shares 2
  // a reads an overuse and cuts its estimate to 1.4: the aggregate loses 0.6, every share 0.2.
  EXPECT_DOUBLE_EQ(g.update(a, 1.4), 1.8);
  EXPECT_DOUBLE_EQ(g.share(b), 1.8);
  EXPECT_DOUBLE_EQ(g.share(c), 1.8);
  // b steps up by 0.3 from its share: the aggregate gains 0.3, as it would with b alone.
  EXPECT_DOUBLE_EQ(g.update(b, 2.1), 1.9);
  EXPECT_DOUBLE_EQ(g.share(a), 1.9);
}

TEST(SharedBottleneck, MembersWithoutAnEstimateAndMembersThatLeaveAreNotCounted) {
  SharedBottleneck g;
  const auto a = g.join();
  const auto b = g.join();
  (void)g.update(a, 2.0);
  (void)g.update(b, 4.0);  // shares 3
  // b's policy no longer knows a bottleneck (R = r0): its share leaves the aggregate.
  EXPECT_DOUBLE_EQ(g.update(b, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(g.share(a), 3.0);
  EXPECT_EQ(g.limited(), 1u);
  // b finds the bottleneck again and brings its own reading.
  EXPECT_DOUBLE_EQ(g.update(b, 1.0), 2.0);
  g.leave(a);
  EXPECT_DOUBLE_EQ(g.share(b), 2.0);
  EXPECT_EQ(g.limited(), 1u);
  // A new member reuses the slot and starts without an estimate.
  const auto c = g.join();
  EXPECT_DOUBLE_EQ(g.share(c), 0.0);
  // Unknown members change nothing.
  EXPECT_DOUBLE_EQ(g.update(99, 5.0), 5.0);
  g.leave(99);
  EXPECT_DOUBLE_EQ(g.share(b), 2.0);
}

constexpr double kBlockUs = 1'000'000;
constexpr double kBlockBytes = 150'000;  // 1.2 Mbit/s

StageReport overuse(std::uint32_t stage, double rate_used, double received_per_us) {
  StageReport r;
  r.stage = stage;
  r.rate_used = rate_used;
  r.packets_announced = 100;
  r.packets_received = 70;  // 30 % network loss
  r.reception_period_us = kBlockUs;
  r.queue_delay_us = 0.0;
  PathMeasurement p;
  p.bytes_received = static_cast<std::uint64_t>(received_per_us * kBlockUs);
  r.path = p;
  return r;
}

TEST(SharedBottleneck, CoupledPoliciesPlanWithEqualSharesWhateverEachRead) {
  auto group = std::make_shared<SharedBottleneck>();
  CapacityPolicy a{CapacityParams{}};
  CapacityPolicy b{CapacityParams{}};
  ASSERT_TRUE(a.couple(group));
  ASSERT_TRUE(b.couple(group));
  StageStart s0{0, static_cast<std::uint64_t>(kBlockBytes), kBlockUs, 0, 125, {}};
  (void)a.rate_for_next(s0);
  (void)b.rate_for_next(s0);
  StageStart s1{1,        static_cast<std::uint64_t>(kBlockBytes),
                kBlockUs, static_cast<std::uint64_t>(kBlockBytes),
                125,      {}};
  (void)a.rate_for_next(s1);
  (void)b.rate_for_next(s1);
  // The onset: a read 0.2 bytes/µs through, b 0.6 (their blocks met the queue at different
  // phases). Uncoupled each would plan from its own reading; coupled both plan from the mean.
  ASSERT_TRUE(a.on_report(overuse(0, 0.0, 0.2)).ok());
  ASSERT_TRUE(b.on_report(overuse(0, 0.0, 0.6)).ok());
  StageStart s2{2,        static_cast<std::uint64_t>(kBlockBytes),
                kBlockUs, static_cast<std::uint64_t>(2 * kBlockBytes),
                125,      {}};
  const double ra = a.rate_for_next(s2);
  const double rb = b.rate_for_next(s2);
  EXPECT_DOUBLE_EQ(a.capacity_estimate(), b.capacity_estimate());
  EXPECT_GT(a.capacity_estimate(), 0.2 * 0.85 * 0.9);
  EXPECT_LT(a.capacity_estimate(), 0.6 * 0.85);
  EXPECT_DOUBLE_EQ(ra, rb);
  EXPECT_EQ(group->limited(), 2u);
}

TEST(SharedBottleneck, APolicyLeavesItsGroupWhenItEnds) {
  auto group = std::make_shared<SharedBottleneck>();
  {
    CapacityPolicy a{CapacityParams{}};
    ASSERT_TRUE(a.couple(group));
    StageStart s0{0, static_cast<std::uint64_t>(kBlockBytes), kBlockUs, 0, 125, {}};
    (void)a.rate_for_next(s0);
    ASSERT_TRUE(a.on_report(overuse(0, 0.0, 0.2)).ok());
    EXPECT_EQ(group->limited(), 1u);
  }
  EXPECT_EQ(group->limited(), 0u);
}

}  // namespace
}  // namespace predrop::core

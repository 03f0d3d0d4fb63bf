// The simulator's bottleneck against what Linux tbf does (tbf_link.hpp): a bucket's worth leaves
// at once, the rest at the rate; tail drop at rate x latency + burst; a rate change keeps the
// queue. Exact times, no clock.
#include <gtest/gtest.h>

#include <vector>

#include "predrop/sim/tbf_link.hpp"

namespace predrop::sim {
namespace {

struct Probe {
  EventQueue events;
  std::vector<std::pair<SimTime, std::uint64_t>> departed;  // (time, tag)
  std::vector<std::uint64_t> dropped;
  TbfLink link;
  explicit Probe(TbfConfig c)
      : link(
            events, c, [this](const Packet& p, SimTime t) { departed.emplace_back(t, p.tag); },
            [this](const Packet& p, SimTime) { dropped.push_back(p.tag); }) {}
};

TEST(TbfLink, ABucketLeavesAtOnceAndTheRestAtTheRate) {
  // 8 Mbit/s = 1 byte per µs; bucket 2000 bytes; 1000-byte packets.
  Probe p(TbfConfig{8e6, 2000, 100'000});
  for (std::uint64_t i = 0; i < 4; ++i)
    p.link.enqueue(Packet{0, 1000, 0, 0, i});
  p.events.run_until(10'000);
  ASSERT_EQ(p.departed.size(), 4u);
  EXPECT_EQ(p.departed[0].first, 0);
  EXPECT_EQ(p.departed[1].first, 0);
  EXPECT_EQ(p.departed[2].first, 1000);
  EXPECT_EQ(p.departed[3].first, 2000);
}

TEST(TbfLink, DropsAtTheTailBeyondRateTimesLatencyPlusBurst) {
  // Limit: 1 byte/µs x 3000 µs + 1000 bytes = 4000 bytes. Packets handed over at one instant
  // all count against it until the first departure runs (the model's tbf releases the head in
  // an event of its own, not inside enqueue), so the fifth of a simultaneous burst is dropped.
  Probe p(TbfConfig{8e6, 1000, 3000});
  for (std::uint64_t i = 0; i < 7; ++i)
    p.link.enqueue(Packet{0, 1000, 0, 0, i});
  EXPECT_EQ(p.dropped, (std::vector<std::uint64_t>{4, 5, 6}));
  p.events.run_until(100'000);
  EXPECT_EQ(p.departed.size(), 4u);
}

TEST(TbfLink, ARateChangeKeepsTheQueueAndServesItAtTheNewRate) {
  Probe p(TbfConfig{8e6, 1000, 100'000});
  for (std::uint64_t i = 0; i < 3; ++i)
    p.link.enqueue(Packet{0, 1000, 0, 0, i});
  p.events.run_until(500);  // the first left at 0, the second is due at 1000
  p.link.set_rate(4e6);     // half the rate: the bucket holds 500 bytes now, 500 more take 1000 µs
  p.events.run_until(100'000);
  ASSERT_EQ(p.departed.size(), 3u);
  EXPECT_EQ(p.departed[1].first, 1500);
  EXPECT_EQ(p.departed[2].first, 3500);
}

}  // namespace
}  // namespace predrop::sim

// The simulated streaming session (media_flow.hpp): what the server's own planner and the
// client's own meter make of a path, checked on paths whose outcome is known.
#include <gtest/gtest.h>

#include <memory>

#include "predrop/sim/media_flow.hpp"

namespace predrop::sim {
namespace {

constexpr SimTime kS = 1'000'000;

std::shared_ptr<const Clip> clip() {
  SyntheticClip spec;
  spec.blocks = 30;
  return std::make_shared<Clip>(make_synthetic_clip(spec));
}

std::vector<BlockRecord> stream(double capacity_bps, const core::PolicyConfig& policy,
                                SimTime seconds) {
  EventQueue events;
  Network net(events, TbfConfig{capacity_bps, 4000, 100'000});
  MediaConfig c;
  c.clip = clip();
  c.policy = policy;
  c.stop_us = seconds * kS;
  MediaFlow flow(net, c, FlowPath{20'000, 20'000}, "media");
  flow.start();
  events.run_until((seconds + 3) * kS);
  return flow.blocks();
}

core::PolicyConfig fixed(double r) {
  core::PolicyConfig p;
  p.policy = "fixed";
  p.fixed_rate = r;
  return p;
}

TEST(MediaFlow, AnOpenPathDeliversEveryBlockWholeAndReportsIt) {
  const auto blocks = stream(100e6, fixed(0.0), 20);
  // A block starts every block duration (just under 1 s: 30 frames at 1/30 s rounded down to
  // whole µs), so 20 s hold 20 starts and, by the rounding, a 21st a few µs before the stop.
  ASSERT_GE(blocks.size(), 20u);
  ASSERT_LE(blocks.size(), 21u);
  for (const auto& b : blocks) {
    EXPECT_TRUE(b.reported) << b.stage;
    EXPECT_EQ(b.lost, 0u);
    EXPECT_EQ(b.discarded, 0u);
    EXPECT_DOUBLE_EQ(b.psnr_db, 60.0);
    // L spans the block's packets: close to the block, less a frame interval.
    EXPECT_GT(b.reception_period_us, 0.9 * kS);
  }
}

TEST(MediaFlow, PreDiscardTakesDisposableFramesFirstAndCostsLessThanLoss) {
  const double stream_bps = clip()->mean_rate_bps();
  const auto discarded = stream(100e6, fixed(0.3), 15);
  const auto lossy = stream(0.7 * stream_bps, fixed(0.0), 15);
  double p_discard = 0;
  double p_loss = 0;
  for (std::size_t i = 3; i < 15; ++i) {
    EXPECT_NEAR(discarded[i].rate, 0.3, 0.02);
    EXPECT_EQ(discarded[i].lost, 0u);
    p_discard += discarded[i].psnr_db;
    p_loss += lossy[i].psnr_db;
    EXPECT_GT(lossy[i].lost, 0u) << "the bottleneck drops ~30 %";
  }
  // The same bytes removed by the planner (disposable frames) and by the network (anything).
  EXPECT_GT(p_discard / 12, p_loss / 12 + 3.0);
}

TEST(MediaFlow, APacedSessionSendsNoFasterThanItsPacingAfterTheLeadingBurst) {
  // The capacity policy paces a limited session at its estimate: behind a bottleneck of half
  // the stream, after the onset, a block's packets never queue more than the leading burst.
  core::PolicyConfig p;
  p.policy = "capacity";
  EventQueue events;
  const double stream_bps = clip()->mean_rate_bps();
  Network net(events, TbfConfig{0.6 * stream_bps, 4000, 100'000});
  MediaConfig c;
  c.clip = clip();
  c.policy = p;
  c.stop_us = 25 * kS;
  MediaFlow flow(net, c, FlowPath{20'000, 20'000}, "media");
  flow.start();
  events.run_until(28 * kS);
  ASSERT_TRUE(flow.controller().pacing().has_value());
  // A packet may wait behind the block's leading burst (drained at the bottleneck's rate) and
  // a pacing step more; anything later means the session sent faster than its pacing.
  const double burst_us = flow.controller().pacing()->burst_bytes * 8e6 / (0.6 * stream_bps);
  const auto bound_us = static_cast<SimTime>(burst_us) + 20'000;
  std::size_t late = 0;
  std::size_t total = 0;
  for (const auto& r : net.log(flow.id())) {
    if (r.arrived_us < 8 * kS || r.dropped) continue;
    ++total;
    if (r.queue_us > bound_us) ++late;
  }
  EXPECT_GT(total, 1000u);
  EXPECT_LT(static_cast<double>(late) / static_cast<double>(total), 0.05);
}

}  // namespace
}  // namespace predrop::sim

// The capacity policy's rules one by one (docs/design.md §2.8), on hand-made reports: the
// estimate after an onset, an overuse, a clean block; compete mode in and out; the dispersion
// rate alone and when it stops; pacing; missing reports; the discard curve; parameters. How the
// rules behave together on paths (TCP, RTT, several sessions, the RFC 8867 cases) is
// tests/sim/test_capacity_on_paths.cpp. No clock, no sleep.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "predrop/core/capacity_policy.hpp"
#include "predrop/core/policy_factory.hpp"

namespace predrop::core {
namespace {

constexpr double kBlockUs = 1'000'000;
constexpr double kBlockBytes = 150'000;  // 1.2 Mbit/s on the link
constexpr std::uint32_t kPackets = 125;

/// Drives one policy the way the server does: a stage starts (rate_for_next), the report on
/// the stage before arrives while it is on the wire.
class Feed {
 public:
  explicit Feed(CapacityParams p = {}, std::uint32_t disposable = 0)
      : policy(p), disposable_(disposable) {
    start();
  }

  /// Starts the next stage; returns its R.
  double start() {
    StageStart s{stage_,   static_cast<std::uint64_t>(kBlockBytes), kBlockUs, sent_, kPackets,
                 removable};
    s.disposable_packets = disposable_;
    const double r = policy.rate_for_next(s);
    rates_.push_back(r);
    sent_ += static_cast<std::uint64_t>(kBlockBytes * (1.0 - r));
    ++stage_;
    return r;
  }

  /// The report on the oldest unreported stage: `received` link bytes per µs came through,
  /// `loss` of the packets was lost, the queue stood at `stand` and ended at `end` (µs);
  /// `dispersion` bytes per µs (0: no pair queued). Starts the next stage first, as on the wire.
  Decision report(double received, double loss, double stand, double end, double dispersion) {
    start();
    const std::uint32_t s = reported_++;
    StageReport r;
    r.stage = s;
    r.rate_used = rates_[s];
    r.packets_announced = static_cast<std::uint32_t>(kPackets * (1.0 - rates_[s]));
    r.packets_received =
        static_cast<std::uint32_t>(std::lround(r.packets_announced * (1.0 - loss)));
    r.reception_period_us = kBlockUs;
    r.queue_delay_us = end;
    PathMeasurement p;
    p.bytes_received = static_cast<std::uint64_t>(received * kBlockUs);
    p.queue_min_us = stand;
    p.queue_max_us = std::fmax(end, stand) + 5'000;
    if (dispersion > 0.0) {
      p.dispersion_bytes = 2'500;
      p.dispersion_us = static_cast<std::uint64_t>(2'500 / dispersion);
    }
    r.path = p;
    auto d = policy.on_report(r);
    EXPECT_TRUE(d.ok());
    return d.ok() ? *d : Decision{};
  }
  /// A clean report of a block that went through whole at what it sent.
  Decision clean(double dispersion = 0.0) {
    const std::uint32_t s = reported_;
    return report(kBlockBytes * (1.0 - rates_[s]) / kBlockUs, 0.0, 0.0, 0.0, dispersion);
  }

  CapacityPolicy policy;
  /// The sender's discard order, when a test gives one (StageStart::removable).
  std::vector<std::uint64_t> removable;

 private:
  std::uint32_t disposable_ = 0;
  std::uint32_t stage_ = 0;
  std::uint32_t reported_ = 0;
  std::uint64_t sent_ = 0;
  std::vector<double> rates_;
};

double per_us(double bits_per_s) {
  return bits_per_s / 8e6;
}

/// An onset, two clean blocks and an overuse, every one reading the bottleneck's rate `c`, and a
/// clean block: the session has the bottleneck to itself and knows it.
void settle_alone(Feed& f, double c) {
  (void)f.report(c, 0.3, 0.0, 0.0, c);
  (void)f.clean(c);
  (void)f.clean(c);
  (void)f.report(c, 0.0, 40'000, 50'000, c);
  (void)f.clean(c);
}

TEST(CapacityPolicy, AnOpenPathKeepsRAtZeroAndPacesNothing) {
  Feed f;
  for (int i = 0; i < 10; ++i) {
    const Decision d = f.clean();
    EXPECT_EQ(d.rate, 0.0);
  }
  EXPECT_EQ(f.policy.mode(), CapacityPolicy::Mode::kOpen);
  EXPECT_FALSE(f.policy.pacing().has_value());
}

TEST(CapacityPolicy, AnOnsetWithLossTakesTheReceivedRateLessHalfTheLoss) {
  Feed f;
  // 1.2 Mbit/s into 0.8: a third lost, the queue empty at the end (the onset's block).
  const Decision d = f.report(per_us(0.8e6), 0.33, 0.0, 0.0, per_us(0.8e6));
  EXPECT_EQ(f.policy.mode(), CapacityPolicy::Mode::kDelay);
  EXPECT_NEAR(d.capacity_estimate, per_us(0.8e6) * (1.0 - 0.165), 0.01 * per_us(0.8e6));
  EXPECT_GT(d.rate, 0.25);
}

TEST(CapacityPolicy, OveruseWithTheBottleneckBusyCutsToTheDecreaseFactorOfTheReceivedRate) {
  Feed f;
  (void)f.report(per_us(0.8e6), 0.3, 0.0, 0.0, 0.0);
  // A queue that stood through the block: overuse; the bottleneck was busy, so what came
  // through is this session's share of it.
  const Decision d = f.report(per_us(0.6e6), 0.0, 50'000, 60'000, 0.0);
  // Received over the block plus the queue it added (60 ms): the bottleneck carried the block's
  // bytes in T + 60 ms.
  EXPECT_NEAR(d.capacity_estimate, 0.9 * per_us(0.6e6) / 1.06, 1e-9);
}

TEST(CapacityPolicy, CleanBlocksNearTheLastOveruseGrowByTheSameStepForEverySession) {
  // Two sessions of the same stream at different estimates: after a clean block both grow by
  // increase_step of the stream's rate (AIMD's equal increments, which even out their shares).
  Feed a;
  Feed b;
  // The onset, and the block already in flight when its report came (sent whole, lossy too).
  for (int i = 0; i < 2; ++i) {
    (void)a.report(per_us(0.5e6), 0.3, 0.0, 0.0, 0.0);
    (void)b.report(per_us(0.7e6), 0.3, 0.0, 0.0, 0.0);
  }
  const double ea = a.policy.capacity_estimate();
  const double eb = b.policy.capacity_estimate();
  (void)a.clean();
  (void)b.clean();
  const double step = 0.03 * kBlockBytes / kBlockUs;
  EXPECT_NEAR(a.policy.capacity_estimate() - ea, step, 0.05 * step);
  EXPECT_NEAR(b.policy.capacity_estimate() - eb, step, 0.05 * step);
}

TEST(CapacityPolicy, AloneTheEstimateIsTheBottlenecksRateFromItsLeadingBursts) {
  Feed f;
  const double c = per_us(0.8e6);
  (void)f.report(c, 0.3, 0.0, 0.0, c);
  // Three steady readings, then an overuse where all of the bottleneck was this session's.
  (void)f.clean(c);
  (void)f.clean(c);
  (void)f.report(c, 0.0, 40'000, 50'000, c);
  for (int i = 0; i < 3; ++i)
    (void)f.clean(c);
  EXPECT_NEAR(f.policy.capacity_estimate(), c, 1e-9);
  // Paced at the estimate after a burst of a few packets (the leading pair that reads d).
  ASSERT_TRUE(f.policy.pacing().has_value());
  EXPECT_GE(f.policy.pacing()->rate, c);
  EXPECT_GE(f.policy.pacing()->burst_bytes, 2'500.0);
}

TEST(CapacityPolicy, WhenTheLeadingBurstsStopQueueingTheBottleneckHasGrown) {
  Feed f;
  const double c = per_us(0.8e6);
  settle_alone(f, c);
  const double before = f.policy.capacity_estimate();
  // The bottleneck's bucket now refills between the paced packets: no pair queues. Once may
  // be a reading that failed (the estimate holds); twice in a row, the bottleneck has grown.
  (void)f.clean();
  EXPECT_EQ(f.policy.capacity_estimate(), before);
  (void)f.clean();
  EXPECT_NEAR(f.policy.capacity_estimate(), before * 1.5, 1e-9);
}

TEST(CapacityPolicy, AloneAPairCompressedAfterTheBottleneckCostsOneBlockAtMost) {
  Feed f;
  const double c = per_us(0.8e6);
  settle_alone(f, c);
  ASSERT_NEAR(f.policy.capacity_estimate(), c, 1e-9);
  // The bed after an idle block end: the delay line let the leading pair go together, 300x the
  // path. Taken as the bottleneck's rate it would have been the cap for eight blocks; now one
  // block goes towards it by probe_gain, and the next reading puts the estimate back.
  (void)f.clean(300.0 * c);
  EXPECT_NEAR(f.policy.bottleneck_rate(), c, 1e-9);
  EXPECT_NEAR(f.policy.capacity_estimate(), 1.5 * c, 1e-9);
  (void)f.clean(c);
  EXPECT_NEAR(f.policy.capacity_estimate(), c, 1e-9);
  for (int i = 0; i < 3; ++i)
    (void)f.clean(c);
  EXPECT_NEAR(f.policy.capacity_estimate(), c, 1e-9);
  // The bottleneck did double: the first reading probes towards it, the second confirms it.
  (void)f.clean(2.0 * c);
  EXPECT_NEAR(f.policy.capacity_estimate(), 1.5 * c, 1e-9);
  (void)f.clean(2.0 * c);
  EXPECT_NEAR(f.policy.capacity_estimate(), 2.0 * c, 1e-9);
}

TEST(CapacityPolicy, AQueueThatStandsThroughDrainBlocksIsAnotherFlowsAndIsNotCededTo) {
  Feed f;
  (void)f.report(per_us(0.8e6), 0.2, 0.0, 0.0, 0.0);  // onset
  const double at_onset = f.policy.capacity_estimate();
  // A loss-based flow keeps 250 ms standing whatever this session sends.
  for (int i = 0; i < 6 && f.policy.mode() != CapacityPolicy::Mode::kCompete; ++i) {
    (void)f.report(per_us(0.5e6), 0.0, 250'000, 260'000, 0.0);
  }
  ASSERT_EQ(f.policy.mode(), CapacityPolicy::Mode::kCompete);
  // The cuts that read its queue as this session's are undone, and the queue is not drained.
  EXPECT_GE(f.policy.capacity_estimate(), at_onset * 0.99);
  const double entry = f.policy.capacity_estimate();
  // Little loss: the estimate grows by compete_gain per block.
  (void)f.report(per_us(0.6e6), 0.005, 250'000, 260'000, 0.0);
  EXPECT_NEAR(f.policy.capacity_estimate(), entry * 1.08, 1e-9);
  // Heavy loss cuts, but never below half of the entry estimate.
  for (int i = 0; i < 20; ++i)
    (void)f.report(per_us(0.3e6), 0.4, 250'000, 260'000, 0.0);
  EXPECT_NEAR(f.policy.capacity_estimate(), 0.5 * entry, 1e-9);
  // The other flow ends: two reports without a standing queue return to delay mode.
  (void)f.clean();
  (void)f.clean();
  EXPECT_EQ(f.policy.mode(), CapacityPolicy::Mode::kDelay);
}

TEST(CapacityPolicy, CompeteModeNeitherRestoresNorHoldsARateAboveTheBottleneck) {
  // The session had 1.6 Mbit/s before the onset; the bottleneck now serves 0.5 (its pairs read
  // d). Compete mode entered on a queue that stood through the drain blocks undoes the cuts,
  // but not above d: a rate from before the drop is one the path has since refused.
  const double d = per_us(0.5e6);
  Feed f;
  (void)f.report(per_us(1.6e6), 0.2, 0.0, 0.0, 0.0);  // onset
  for (int i = 0; i < 6 && f.policy.mode() != CapacityPolicy::Mode::kCompete; ++i) {
    (void)f.report(per_us(0.25e6), 0.0, 250'000, 260'000, d);
  }
  ASSERT_EQ(f.policy.mode(), CapacityPolicy::Mode::kCompete);
  EXPECT_LE(f.policy.capacity_estimate(), d * (1.0 + 1e-9));
  // A loss-based flow beside it takes a share: the received rate stays well below d, and
  // compete mode holds.
  (void)f.report(0.5 * d, 0.3, 250'000, 260'000, d);
  EXPECT_EQ(f.policy.mode(), CapacityPolicy::Mode::kCompete);
  // Nobody else is there: the session receives all the bottleneck serves and still loses 40 %.
  // The queue is its own: delay mode, the estimate below d.
  (void)f.report(0.97 * d, 0.4, 250'000, 260'000, d);
  EXPECT_EQ(f.policy.mode(), CapacityPolicy::Mode::kDelay);
  EXPECT_LT(f.policy.capacity_estimate(), d);
}

TEST(CapacityPolicy, CompeteModesFirstEntryAfterADropRestoresNoRateFromBeforeIt) {
  // The bed's browser behind §5.1: the open phase's pairs read 1.8 Mbit/s, then the bottleneck
  // falls to 0.5 and the queue stands through the drain blocks. The max filter still holds the
  // open phase's readings; the entry must take what the pairs read while the queue stood.
  const double before = per_us(1.8e6);
  const double d = per_us(0.5e6);
  for (const bool read_while_stuck : {true, false}) {
    SCOPED_TRACE(read_while_stuck ? "pairs read while the queue stood" : "no pair read");
    Feed f;
    for (int i = 0; i < 3; ++i)
      (void)f.clean(before);
    (void)f.report(d, 0.2, 0.0, 200'000, d);  // onset
    // Heavy loss breaks the pairs (the browser lost 45-54 % per block there): no reading at all.
    for (int i = 0; i < 6 && f.policy.mode() != CapacityPolicy::Mode::kCompete; ++i) {
      (void)f.report(0.8 * d, 0.0, 250'000, 260'000, read_while_stuck ? d : 0.0);
    }
    ASSERT_EQ(f.policy.mode(), CapacityPolicy::Mode::kCompete);
    EXPECT_LE(f.policy.capacity_estimate(), d * (1.0 + 1e-9));
  }
}

TEST(CapacityPolicy, TheLeadingBurstIsPaidBackOnlyWhenTheQueueIsThisSessionsOwn) {
  CapacityParams p;
  p.repaid_burst_bytes = 8'000;
  Feed f(p);
  (void)f.report(per_us(0.8e6), 0.2, 0.0, 0.0, 0.0);  // onset: delay mode
  ASSERT_EQ(f.policy.mode(), CapacityPolicy::Mode::kDelay);
  ASSERT_TRUE(f.policy.pacing().has_value());
  EXPECT_TRUE(f.policy.pacing()->repay_burst);
  EXPECT_EQ(f.policy.pacing()->burst_bytes, 8'000.0);
  // Another flow's queue stands: a pause would only hand it the slot, so the burst is free
  // again and of the usual size.
  for (int i = 0; i < 6 && f.policy.mode() != CapacityPolicy::Mode::kCompete; ++i) {
    (void)f.report(per_us(0.5e6), 0.0, 250'000, 260'000, 0.0);
  }
  ASSERT_EQ(f.policy.mode(), CapacityPolicy::Mode::kCompete);
  ASSERT_TRUE(f.policy.pacing().has_value());
  EXPECT_FALSE(f.policy.pacing()->repay_burst);
  EXPECT_EQ(f.policy.pacing()->burst_bytes, p.pacing_burst_bytes);
  // Off by default.
  Feed g;
  (void)g.report(per_us(0.8e6), 0.2, 0.0, 0.0, 0.0);
  ASSERT_TRUE(g.policy.pacing().has_value());
  EXPECT_FALSE(g.policy.pacing()->repay_burst);
}

TEST(CapacityPolicy, WithTheBurstRepaidTheBlockIsPacedAtTheEstimateNotAbove) {
  // 125 packets of 1200 bytes; the first 25 (the key frame) are never discarded.
  std::vector<std::uint64_t> order;
  for (std::uint64_t k = 0; k <= 100; ++k)
    order.push_back(k * 1'200);
  const auto pace_over_estimate = [&](double repaid) {
    CapacityParams p;
    p.repaid_burst_bytes = repaid;
    Feed f(p);
    f.removable = order;
    (void)f.report(per_us(0.8e6), 0.2, 0.0, 0.0, 0.0);  // onset: delay mode
    for (int i = 0; i < 4; ++i)
      (void)f.report(per_us(0.6e6), 0.0, 0.0, 0.0, 0.0);
    EXPECT_EQ(f.policy.mode(), CapacityPolicy::Mode::kDelay);
    (void)f.start();  // planned on the estimate as it is now
    EXPECT_TRUE(f.policy.pacing().has_value());
    return f.policy.pacing() ? f.policy.pacing()->rate / f.policy.capacity_estimate() : 0.0;
  };
  // The block's kept bytes are margin x Ĉ x T: over margin x T the pace is Ĉ, and the queue
  // the repaid burst left drains; over 0.9 T (the rule without a repaid burst) it is 1.08 Ĉ.
  EXPECT_NEAR(pace_over_estimate(8'000), 1.0, 0.015);
  EXPECT_NEAR(pace_over_estimate(0.0), 0.97 / 0.9, 0.015);
}

TEST(CapacityPolicy, SessionsDrainingTheirOwnQueueDoNotMistakeItForAnotherFlows) {
  Feed f;
  (void)f.report(per_us(0.8e6), 0.2, 0.0, 0.0, 0.0);
  // The queue stands but shrinks by more than a fifth per drain block: it is being drained.
  double q = 250'000;
  for (int i = 0; i < 6; ++i) {
    (void)f.report(per_us(0.5e6), 0.0, q, q + 10'000, 0.0);
    q *= 0.7;
  }
  EXPECT_EQ(f.policy.mode(), CapacityPolicy::Mode::kDelay);
}

// The interim alert (bench/README.md "The interim alert", an experiment of the simulator): a
// queue rising within the stage in flight cuts the estimate to decrease_factor times the rate
// its last packets arrived at, once per stage, and the re-plan of the rest gives the queue back.
TEST(CapacityPolicy, AnAlertCutsToTheArrivalRateOncePerStageAndOnlyOnAnOnset) {
  {
    // Before the first report: the session started above a slower bottleneck (a browser's or a
    // player's starts at R = 0), and the queue is its own; it is cut before its first report.
    // Its packets arrive at the rate its back-to-back pairs left the bottleneck: it is alone
    // there. Arriving at half that rate, another flow (a download there first) takes the rest:
    // no cut before a report says how to share.
    Feed start;
    EXPECT_FALSE(start.policy.on_alert(StageAlert{0, 80'000, per_us(0.5e6), per_us(1e6)}));
    EXPECT_FALSE(start.policy.on_alert(StageAlert{0, 80'000, per_us(0.5e6), 0.0})) << "no pair";
    EXPECT_EQ(start.policy.mode(), CapacityPolicy::Mode::kOpen);
    EXPECT_TRUE(start.policy.on_alert(StageAlert{1, 80'000, per_us(0.5e6), per_us(0.52e6)}));
    EXPECT_EQ(start.policy.mode(), CapacityPolicy::Mode::kDelay);
    EXPECT_NEAR(start.policy.capacity_estimate(), 0.9 * per_us(0.5e6), 1e-12);
  }
  Feed f;
  (void)f.clean();  // the path is open: R = 0
  ASSERT_EQ(f.policy.mode(), CapacityPolicy::Mode::kOpen);
  // The capacity falls: the alert on the stage in flight (stage 1) limits the session at once.
  EXPECT_TRUE(f.policy.on_alert(StageAlert{1, 80'000, per_us(0.5e6)}));
  EXPECT_EQ(f.policy.mode(), CapacityPolicy::Mode::kDelay);
  EXPECT_NEAR(f.policy.capacity_estimate(), 0.9 * per_us(0.5e6), 1e-12);
  EXPECT_FALSE(f.policy.on_alert(StageAlert{1, 150'000, per_us(0.3e6)}));  // once per stage
  // The rest of the stage in flight gives the alert's queue back: R is well above 0.
  StageProgress p;
  p.stage = 1;
  p.elapsed_us = 300'000;
  p.duration_us = kBlockUs;
  p.sent_bytes = static_cast<std::uint64_t>(0.3 * kBlockBytes);
  p.rest_bytes = static_cast<std::uint64_t>(0.7 * kBlockBytes);
  p.rest_packets = 88;
  const auto rest = f.policy.rate_for_rest(p);
  ASSERT_TRUE(rest.has_value());
  EXPECT_GT(*rest, 0.5);
  // An alert at a higher rate than the estimate changes nothing.
  EXPECT_FALSE(f.policy.on_alert(StageAlert{3, 80'000, per_us(2e6)}));
}

TEST(CapacityPolicy, AlertsAreIgnoredBesideAStandingQueueAndAfterCompeteMode) {
  Feed f;
  (void)f.report(per_us(0.8e6), 0.2, 0.0, 0.0, 0.0);  // onset
  // A queue that stood through the last reported stage: not an onset.
  (void)f.report(per_us(0.5e6), 0.0, 250'000, 260'000, 0.0);
  EXPECT_FALSE(f.policy.on_alert(StageAlert{3, 270'000, per_us(0.4e6)}));
  for (int i = 0; i < 6 && f.policy.mode() != CapacityPolicy::Mode::kCompete; ++i) {
    (void)f.report(per_us(0.5e6), 0.0, 250'000, 260'000, 0.0);
  }
  ASSERT_EQ(f.policy.mode(), CapacityPolicy::Mode::kCompete);
  EXPECT_FALSE(f.policy.on_alert(StageAlert{20, 270'000, per_us(0.4e6)}));
  // The loss-based flow leaves: back in delay mode, but its queue may come back with its next
  // cycle, so alerts wait kAlertQuietReports clean reports.
  (void)f.clean();
  (void)f.clean();
  ASSERT_EQ(f.policy.mode(), CapacityPolicy::Mode::kDelay);
  EXPECT_FALSE(f.policy.on_alert(StageAlert{40, 90'000, per_us(0.3e6)}));
  for (unsigned i = 0; i < CapacityPolicy::kAlertQuietReports; ++i)
    (void)f.clean();
  EXPECT_TRUE(f.policy.on_alert(StageAlert{100, 90'000, per_us(0.3e6)}));
}

// With the bottleneck's rate known (dispersion readings), an alert counts only when the stage's
// back-to-back pairs show the bottleneck itself slower: a competitor's queue leaves them at its
// rate, a capacity drop spreads them.
TEST(CapacityPolicy, WithTheBottlenecksRateKnownOnlyASlowerBottleneckRaisesAnAlert) {
  Feed f;
  const double d = per_us(2e6);
  (void)f.report(per_us(0.8e6), 0.2, 0.0, 0.0, d);  // onset; the pairs read 2 Mbit/s
  for (unsigned i = 0; i < CapacityPolicy::kAlertQuietReports; ++i)
    (void)f.clean(d);
  ASSERT_GT(f.policy.bottleneck_rate(), 0.0);
  EXPECT_FALSE(f.policy.on_alert(StageAlert{40, 90'000, per_us(0.3e6), 0.0})) << "no pair yet";
  EXPECT_FALSE(f.policy.on_alert(StageAlert{40, 90'000, per_us(0.3e6), 0.95 * d}));
  EXPECT_TRUE(f.policy.on_alert(StageAlert{40, 90'000, per_us(0.3e6), 0.5 * d}));
}

// A PAUSE (RFC 8867 §5.8): after it the queue the last reports read has drained; the estimate
// (the share the session had) is the guess for the blocks after the resume.
TEST(CapacityPolicy, AfterAPauseTheOldQueueIsNotGivenBackButTheEstimateStays) {
  Feed paused;
  Feed playing;
  for (Feed* f : {&paused, &playing}) {
    (void)f->report(per_us(0.8e6), 0.2, 0.0, 0.0, 0.0);          // onset
    (void)f->report(per_us(0.7e6), 0.0, 100'000, 120'000, 0.0);  // a queue stood through it
  }
  paused.policy.on_resume(20e6);
  EXPECT_EQ(paused.policy.capacity_estimate(), playing.policy.capacity_estimate());
  EXPECT_EQ(paused.policy.predicted_queue_us(), 0.0);
  EXPECT_GT(playing.policy.predicted_queue_us(), 100'000.0);
  EXPECT_LT(paused.policy.rate(), playing.policy.rate()) << "no queue of 20 s ago to give back";
  EXPECT_GT(paused.policy.rate(), 0.0) << "the estimate still limits the block";
  EXPECT_EQ(paused.policy.mode(), CapacityPolicy::Mode::kDelay);
}

TEST(CapacityPolicy, AStartBelowTheStreamIsLeftByTheFirstReport) {
  CapacityParams p;
  p.start_rate = 0.5;
  // Blocks with disposable frames (a third of their packets) start at the start rate; the
  // first report reads no bottleneck: from then on R is initial_rate (0).
  Feed open(p, kPackets / 3);
  EXPECT_DOUBLE_EQ(open.policy.rate(), 0.5);
  (void)open.clean();
  EXPECT_EQ(open.policy.mode(), CapacityPolicy::Mode::kOpen);
  EXPECT_DOUBLE_EQ(open.policy.rate(), 0.0);
  // The first report is clean, but the block's pairs left a bottleneck slower than the stream
  // (0.8 of its 1.2 Mbit/s): R = 0 would queue there for a block before a report said so. The
  // estimate starts at the bottleneck's rate, and the plan keeps margin x of it.
  const double c = per_us(0.8e6);
  Feed slow(p, kPackets / 3);
  const Decision d = slow.clean(c);
  EXPECT_EQ(slow.policy.mode(), CapacityPolicy::Mode::kDelay) << d.reason;
  EXPECT_NEAR(slow.policy.capacity_estimate(), c, 1e-9);
  EXPECT_GT(slow.policy.rate(), 0.2);
  EXPECT_LT(slow.policy.rate(), 0.5);
  // Only the first report: later a clean block at R = 0 that reads such a pair is a probe's
  // matter (on_clean), not a start's.
  Feed later;
  (void)later.clean();
  (void)later.clean(c);
  EXPECT_EQ(later.policy.mode(), CapacityPolicy::Mode::kOpen);
  // A block without disposable frames starts at initial_rate: discarding would cut its GOP.
  EXPECT_DOUBLE_EQ(Feed(p, 0).policy.rate(), 0.0);
  // Without a start rate the first stage is at initial_rate, as before.
  EXPECT_DOUBLE_EQ(Feed({}, kPackets / 3).policy.rate(), 0.0);
  p.start_rate = 0.95;
  EXPECT_FALSE(validate(p).ok()) << "above rmax";
}

TEST(CapacityPolicy, MissingReportsBackOffFromTheSecondInARow) {
  Feed f;
  (void)f.report(per_us(0.8e6), 0.2, 0.0, 0.0, 0.0);
  const double before = f.policy.capacity_estimate();
  (void)f.policy.on_report_missing(1);
  EXPECT_EQ(f.policy.capacity_estimate(), before);
  (void)f.policy.on_report_missing(2);
  EXPECT_NEAR(f.policy.capacity_estimate(), before * 0.85, 1e-12);
}

TEST(CapacityPolicy, TheDiscardCurveTurnsTheByteBudgetIntoR) {
  // Limited at a known estimate, then a 150 kB block of 100 packets whose priority order
  // removes 300 bytes per packet for the first 60 (disposable frames), 3000 after: R is the
  // fewest packets whose discard brings the block within the budget.
  Feed f;
  (void)f.report(per_us(0.8e6), 0.0, 50'000, 60'000, 0.0);
  std::vector<std::uint64_t> removable(101, 0);
  for (std::size_t k = 1; k <= 100; ++k)
    removable[k] = removable[k - 1] + (k <= 60 ? 300 : 3'000);
  StageStart next{2, 150'000, kBlockUs, 300'000, 100, removable};
  const double r = f.policy.rate_for_next(next);
  const double keep = 0.97 * f.policy.capacity_estimate() * kBlockUs -
                      f.policy.capacity_estimate() * f.policy.predicted_queue_us();
  std::size_t k = 0;
  while (k < 100 && static_cast<double>(removable[k]) < 150'000 - keep)
    ++k;
  EXPECT_DOUBLE_EQ(r, std::min(0.9, static_cast<double>(k) / 100.0));
}

TEST(CapacityPolicy, WithoutPathMeasurementsCleanWholeBlocksEndTheEpisode) {
  // A player's RTCP RR: no PDFB v1.1. Loss finds the bottleneck; whole clean blocks release it.
  CapacityPolicy c(CapacityParams{});
  std::uint64_t sent = 0;
  for (std::uint32_t s = 0; s < 12; ++s) {
    const double r =
        c.rate_for_next(StageStart{s + 1, static_cast<std::uint64_t>(kBlockBytes), kBlockUs, sent});
    sent += static_cast<std::uint64_t>(kBlockBytes * (1.0 - r));
    StageReport rep;
    rep.stage = s;
    rep.packets_announced = 100;
    rep.packets_received = s < 2 ? 70 : 100;
    rep.reception_period_us = kBlockUs;
    rep.queue_delay_us = s < 2 ? 80'000.0 : 0.0;
    rep.rate_used = s < 3 ? 0.3 : 0.0;
    ASSERT_TRUE(c.on_report(rep).ok());
  }
  EXPECT_FALSE(c.limited());
  EXPECT_EQ(c.rate(), 0.0);
}

TEST(CapacityPolicy, WorksWithoutTheSenderHook) {
  // rate() only (as the DDL relay asks): a block is one unit, T the base reception period.
  CapacityPolicy c(CapacityParams{});
  StageReport rep;
  rep.stage = 0;
  rep.packets_announced = 100;
  rep.packets_received = 60;
  rep.reception_period_us = 1'300'000;
  rep.queue_delay_us = 150'000;
  ASSERT_TRUE(c.on_report(rep).ok());
  EXPECT_TRUE(c.limited());
  EXPECT_GT(c.rate(), 0.0);
  EXPECT_LE(c.rate(), 0.9);
}

TEST(CapacityPolicy, FactoryBuildsItAndValidatesParameters) {
  PolicyConfig cfg;
  cfg.policy = "capacity";
  auto made = make_rate_controller(cfg);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ((*made)->name(), "capacity");
  const auto rejects = [&](const char* name) {
    auto bad = make_rate_controller(cfg);
    ASSERT_FALSE(bad.ok()) << name;
    EXPECT_NE(bad.error().message.find(name), std::string::npos) << bad.error().message;
    cfg.capacity = CapacityParams{};
  };
  cfg.capacity.margin = 1.5;
  rejects("control.capacity.margin");
  cfg.capacity.increase_step = 0.0;
  rejects("control.capacity.increase_step");
  cfg.capacity.probe_gain = 1.0;
  rejects("control.capacity.probe_gain");
  cfg.capacity.pacing_gain = 0.5;
  rejects("control.capacity.pacing_gain");
  cfg.capacity.compete_loss_low = 0.5;
  rejects("control.capacity.compete_loss_low");
  cfg.capacity.decrease_factor = 0.2;
  rejects("control.capacity.decrease_factor");
  cfg.capacity.initial_rate = 0.95;
  rejects("control.r0");
}

TEST(CapacityPolicy, OtherPoliciesAnswerTheHookWithRateAndDoNotPace) {
  PolicyConfig cfg;
  cfg.policy = "fixed";
  cfg.fixed_rate = 0.3;
  auto made = make_rate_controller(cfg);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ((*made)->rate_for_next(StageStart{0, 1000, kBlockUs, 0}), 0.3);
  EXPECT_FALSE((*made)->pacing().has_value());
}

}  // namespace
}  // namespace predrop::core

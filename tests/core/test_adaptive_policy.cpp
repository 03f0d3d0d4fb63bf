// The adaptive policy against scripted report sequences, including the ones where docs/design.md §2
// says the exact rule fails, and a fluid model of a tail-drop bottleneck for the whole cycle
// (onset, standing congestion, end).
#include "predrop/core/adaptive_policy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "predrop/core/exact_rule.hpp"

namespace predrop::core {
namespace {

constexpr double kBlockUs = 1'000'000;

StageReport stage(std::uint32_t s, double rate_used, double loss, double psnr = 40.0,
                  double queue_us = 0.0, double l_us = kBlockUs) {
  StageReport r;
  r.stage = s;
  r.reception_period_us = l_us;
  r.performance = psnr;
  r.packets_announced = 1000;
  r.packets_received = static_cast<std::uint32_t>(1000 * (1.0 - loss) + 0.5);
  r.queue_delay_us = queue_us;
  r.rate_used = rate_used;
  return r;
}

// A fluid model of a tail-drop bottleneck, in units of the full stream's bytes per stage: each
// stage offers 1 - R, the link drains `capacity`, the queue holds `queue_max` (0.1 = a 100 ms
// buffer at 1 s stages); what does not fit is lost. Queueing delay is the backlog over capacity.
struct Bottleneck {
  double capacity = 1.0;
  double queue_max = 0.1;
  double backlog = 0.0;
  /// Sends one stage at `rate`; returns {loss, queueing delay in µs at its end}.
  std::pair<double, double> send(double rate) {
    const double offered = 1.0 - rate;
    double q = backlog + offered - capacity;
    double loss = 0.0;
    if (q > queue_max) {
      loss = (q - queue_max) / offered;
      q = queue_max;
    }
    backlog = std::max(0.0, q);
    return {loss, backlog / capacity * kBlockUs};
  }
};

// Runs `stages` stages through the bottleneck with reports one stage late, as on the bed: the
// stage in flight already uses the R set before this report. `capacity_at(s)` scripts the path.
template <typename F>
std::vector<std::pair<double, double>> run(AdaptivePolicy& p, int stages, F capacity_at,
                                           std::vector<double>* rates = nullptr) {
  Bottleneck link;
  std::vector<std::pair<double, double>> out;  // (R used, loss) per stage
  double in_flight = p.rate();
  for (int s = 0; s < stages; ++s) {
    link.capacity = capacity_at(s);
    const double used = in_flight;
    in_flight = p.rate();  // the next stage started before this stage's report came back
    const auto [loss, queue] = link.send(used);
    auto d = p.on_report(stage(static_cast<std::uint32_t>(s), used, loss, 40.0, queue));
    EXPECT_TRUE(d.ok());
    out.emplace_back(used, loss);
    if (rates != nullptr) rates->push_back(used);
  }
  return out;
}

TEST(AdaptivePolicy, JumpsToReceivedFractionUnderLoss) {
  AdaptivePolicy p(AdaptiveParams{}, 0.0);
  // 30 Mbit/s into 20 Mbit/s: a third lost at R = 0.
  auto d = p.on_report(stage(0, 0.0, 1.0 / 3.0, 18.0, 100000));
  ASSERT_TRUE(d.ok());
  // Capacity 2/3 of the stream; with a standing queue the drain margin 0.90 applies.
  EXPECT_NEAR(d->rate, 1.0 - (2.0 / 3.0) * 0.90, 1e-3);  // 667 of 1000 packets arrived
  // Without a standing queue (loss in a burst), the normal margin.
  AdaptivePolicy q(AdaptiveParams{}, 0.0);
  EXPECT_NEAR(q.on_report(stage(0, 0.0, 0.25, 18.0, 0)).value().rate, 1.0 - 0.75 * 0.93, 1e-3);
}

TEST(AdaptivePolicy, QualityDropWithLossIsCongestionNotOverDiscarding) {
  RuleParams rp;
  rp.rp = 0.05;
  ExactRule exact(rp);
  AdaptivePolicy adaptive(AdaptiveParams{}, 0.0);
  ASSERT_TRUE(exact.on_report(stage(0, 0.0, 0.0, 45.0)).ok());
  ASSERT_TRUE(adaptive.on_report(stage(0, 0.0, 0.0, 45.0)).ok());
  auto e = exact.on_report(stage(1, 0.05, 0.30, 20.0));
  auto a = adaptive.on_report(stage(1, 0.0, 0.30, 20.0));
  EXPECT_LT(e->rate, 0.05);  // the exact rule lowers R under congestion ...
  EXPECT_GT(a->rate, 0.3);   // ... the adaptive policy raises it to what the path carries
}

TEST(AdaptivePolicy, NeverLowersRateOnALateCongestionReport) {
  AdaptivePolicy p(AdaptiveParams{}, 0.0);
  ASSERT_NEAR(p.on_report(stage(0, 0.0, 0.30)).value().rate, 1.0 - 0.7 * 0.93, 1e-3);
  // The next report is about a stage sent at R = 0 with less loss (onset mid-stage): R stays.
  EXPECT_NEAR(p.on_report(stage(1, 0.0, 0.10)).value().rate, 1.0 - 0.7 * 0.93, 1e-3);
}

TEST(AdaptivePolicy, LossWhileTheOldQueueDrainsDoesNotRaise) {
  AdaptivePolicy p(AdaptiveParams{}, 0.0);
  // Onset: a third lost with a full queue at the end of the stage.
  const double r1 = p.on_report(stage(0, 0.0, 0.30, 20.0, 120000)).value().rate;
  ASSERT_GT(r1, 0.3);
  // The first stage at r1 still loses 7 % (its I-frame met the old queue) but ends with the queue
  // draining: r1 carries the path, R stays.
  auto d = p.on_report(stage(1, r1, 0.07, 21.0, 800));
  EXPECT_DOUBLE_EQ(d->rate, r1);
  EXPECT_EQ(d->reason, "loss while the old queue drained: hold");
  // The same loss with the queue standing at the end is congestion: R goes up.
  EXPECT_GT(p.on_report(stage(2, r1, 0.07, 21.0, 110000)).value().rate, r1);
  // A queue that halved is draining even above queue_high_us (seen on the bed: 116 -> 32 ms).
  AdaptivePolicy q(AdaptiveParams{}, 0.0);
  const double q1 = q.on_report(stage(0, 0.0, 0.30, 20.0, 116000)).value().rate;
  EXPECT_DOUBLE_EQ(q.on_report(stage(1, q1, 0.066, 20.0, 32000)).value().rate, q1);
}

TEST(AdaptivePolicy, ConvergesOnABottleneckPulsesRarelyAndComesBackDown) {
  AdaptivePolicy p(AdaptiveParams{}, 0.0);
  std::vector<double> rates;
  // The stream at 1.5x the bottleneck from stage 10 to 39, as in the bed's onoff scenario.
  auto trace = run(
      p, 60, [](int s) { return (s >= 10 && s < 40) ? 2.0 / 3.0 : 1.0; }, &rates);
  // Loss is gone within 3 stages of onset (the report of stage 10 arrives during stage 11).
  int first_clean = -1;
  for (int s = 10; s < 20; ++s) {
    if (trace[s].second == 0.0) {
      first_clean = s;
      break;
    }
  }
  ASSERT_GE(first_clean, 0);
  EXPECT_LE(first_clean - 10, 3);
  // During the standing congestion, only failed pulses (and the stage after each, which starts
  // on the queue the pulse left) lose packets.
  int lossy = 0;
  for (int s = first_clean; s < 40; ++s)
    lossy += trace[s].second > 0;
  EXPECT_LE(lossy, 8);
  // Between pulses R stays near the cliff (1/3): the creep takes it down while the queue is empty,
  // a building queue takes it up.
  for (int s = first_clean; s < 40; ++s) {
    if (rates[s] == 0.0) continue;  // a pulse
    EXPECT_GE(rates[s], 0.30) << s;
    EXPECT_LE(rates[s], 0.45) << s;
  }
  // Back to R = 0 within 10 stages of the end of congestion (stage 40), and it stays there.
  int back = 60;
  while (back > 40 && rates[back - 1] == 0.0)
    --back;
  EXPECT_LE(back - 40, 10);
  EXPECT_LT(back, 55);
}

TEST(AdaptivePolicy, StaysAtZeroOnACleanPath) {
  AdaptivePolicy p(AdaptiveParams{}, 0.0);
  for (std::uint32_t s = 0; s < 20; ++s) {
    EXPECT_DOUBLE_EQ(p.on_report(stage(s, 0.0, 0.0, 40.0 - (s % 3))).value().rate, 0.0);
  }
}

TEST(AdaptivePolicy, QueueBuildingRaisesRateBeforeLoss) {
  AdaptivePolicy p(AdaptiveParams{}, 0.0);
  ASSERT_TRUE(p.on_report(stage(0, 0.0, 0.0)).ok());
  auto d = p.on_report(stage(1, 0.0, 0.0, 40.0, 60000));
  EXPECT_DOUBLE_EQ(d->rate, 0.05);
}

TEST(AdaptivePolicy, StretchedReceptionPeriodSizesRateWhereNoQueueIsMeasured) {
  AdaptivePolicy p(AdaptiveParams{}, 0.0);
  auto burst = [](std::uint32_t s, double l_us) {
    StageReport r = stage(s, 0.0, 0.0, 1.0, 0, l_us);
    r.queue_delay_us.reset();  // a burst sender's receiver (DDL) reports no queueing delay
    return r;
  };
  ASSERT_TRUE(p.on_report(burst(0, 100000)).ok());
  // A burst that took twice as long: the path carries half; margin 0.93.
  auto d = p.on_report(burst(1, 200000));
  EXPECT_NEAR(d->rate, 1.0 - 0.5 * 0.93, 1e-9);
}

TEST(AdaptivePolicy, StretchWithinTheNoiseOfAFreePathIsNoSignal) {
  // A DDL peer next to the relay: L of a few hundred µs that jitters by a factor of 3 with the
  // scheduler. 10 % of that is not congestion; R stays at 0 (it used to go to rmax).
  AdaptivePolicy p(AdaptiveParams{}, 0.0);
  auto burst = [](std::uint32_t s, double l_us) {
    StageReport r = stage(s, 0.0, 0.0, 1.0, 0, l_us);
    r.queue_delay_us.reset();
    return r;
  };
  ASSERT_TRUE(p.on_report(burst(0, 150)).ok());
  for (std::uint32_t s = 1; s < 20; ++s) {
    EXPECT_DOUBLE_EQ(p.on_report(burst(s, s % 2 ? 450 : 2'900)).value().rate, 0.0) << s;
  }
  // A stretch beyond the noise still counts.
  EXPECT_GT(p.on_report(burst(20, 10'000)).value().rate, 0.5);
}

TEST(AdaptivePolicy, PacedReportsWithQueueDelayIgnoreLStretch) {
  AdaptivePolicy p(AdaptiveParams{}, 0.0);
  // Paced 1 s blocks: one clean block was short (its first packets were lost), the next is
  // 12 % longer with an empty queue. That is frame timing, not congestion.
  ASSERT_TRUE(p.on_report(stage(0, 0.0, 0.0, 60.0, 200, 884000)).ok());
  EXPECT_DOUBLE_EQ(p.on_report(stage(1, 0.0, 0.0, 60.0, 300, 990000)).value().rate, 0.0);
}

TEST(AdaptivePolicy, QualityFloorLowersRateWithoutLoss) {
  AdaptiveParams ap;
  ap.quality_floor = 35.0;
  AdaptivePolicy p(ap, 0.2);
  auto d = p.on_report(stage(0, 0.2, 0.0, 30.0));
  EXPECT_NEAR(d->rate, 0.15, 1e-12);
}

TEST(AdaptivePolicy, CapacityPulseLastsOneStageAndFailureKeepsTheSettledRate) {
  AdaptivePolicy p(AdaptiveParams{}, 0.4);
  std::uint32_t s = 0;
  // Clean stages with a queue of 5 ms: clean, but too full to creep.
  for (int i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(p.on_report(stage(s++, 0.4, 0.0, 25.0, 5000)).value().rate, 0.4);
  }
  // The 3rd clean stage (hold 3): one stage at the pulse rate 0.
  auto d = p.on_report(stage(s++, 0.4, 0.0, 25.0, 5000));
  EXPECT_DOUBLE_EQ(d->rate, 0.0);
  EXPECT_EQ(d->reason, "capacity pulse: one stage at the pulse rate");
  // The next report is about a stage sent before the pulse: back to 0.4 at once.
  EXPECT_DOUBLE_EQ(p.on_report(stage(s++, 0.4, 0.0, 25.0, 5000)).value().rate, 0.4);
  // The pulse stage itself: 30 % lost. The pulse understates the excess (it started on a drained
  // queue), so R does not go below the settled 0.4; the hold doubles (3 -> 5, the cap).
  d = p.on_report(stage(s++, 0.0, 0.30, 20.0, 100000));
  EXPECT_DOUBLE_EQ(d->rate, 0.4);
  EXPECT_EQ(p.hold(), 5u);
  // The two stages after it start on the queue the pulse left: their loss does not raise R.
  EXPECT_DOUBLE_EQ(p.on_report(stage(s++, 0.4, 0.05, 18.0, 80000)).value().rate, 0.4);
  EXPECT_DOUBLE_EQ(p.on_report(stage(s++, 0.4, 0.0, 24.0, 20000)).value().rate, 0.4);
  // Loss after that is congestion again.
  EXPECT_GT(p.on_report(stage(s++, 0.4, 0.05, 18.0, 80000)).value().rate, 0.4);
}

TEST(AdaptivePolicy, CleanPulseEndsTheEpisode) {
  AdaptivePolicy p(AdaptiveParams{}, 0.4);
  std::uint32_t s = 0;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(p.on_report(stage(s++, 0.4, 0.0, 25.0, 5000)).ok());
  ASSERT_DOUBLE_EQ(p.rate(), 0.0);
  ASSERT_DOUBLE_EQ(p.on_report(stage(s++, 0.4, 0.0, 25.0, 5000)).value().rate, 0.4);
  auto d = p.on_report(stage(s++, 0.0, 0.0, 60.0, 300));
  EXPECT_DOUBLE_EQ(d->rate, 0.0);
  EXPECT_DOUBLE_EQ(p.settled_rate(), 0.0);
  for (int i = 0; i < 10; ++i) {
    EXPECT_DOUBLE_EQ(p.on_report(stage(s++, 0.0, 0.0, 60.0, 300)).value().rate, 0.0);
  }
}

TEST(AdaptivePolicy, CreepsDownWhileTheQueueIsEmptyAndStopsAboveWhereLossWas) {
  AdaptiveParams ap;
  ap.hold_stages = ap.max_hold_stages = 100;  // no pulse in this test
  AdaptivePolicy p(ap, 0.40);
  std::uint32_t s = 0;
  double used = 0.40;
  // Clean, empty queue: every report that shows the current rate takes R down one creep step;
  // reports of stages sent before the change only wait.
  auto d = p.on_report(stage(s++, used, 0.0, 25.0, 300));
  EXPECT_NEAR(d->rate, 0.38, 1e-9);
  EXPECT_EQ(p.on_report(stage(s++, used, 0.0, 25.0, 300)).value().reason,
            "waiting for the last change to take effect");
  used = 0.38;
  EXPECT_NEAR(p.on_report(stage(s++, used, 0.0, 25.0, 300)).value().rate, 0.36, 1e-9);
  used = 0.36;
  // One packet lost at 0.36: the tail of an I-frame met a queue; back up one step, and 0.38
  // becomes the floor of the creep for this episode.
  d = p.on_report(stage(s++, used, 0.001, 18.0, 300));
  EXPECT_NEAR(d->rate, 0.38, 1e-9);
  EXPECT_EQ(d->reason, "mild loss at the current rate: R up a little");
  used = 0.38;
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(p.on_report(stage(s++, used, 0.0, 25.0, 300)).value().rate, 0.38, 1e-9);
  }
}

TEST(AdaptivePolicy, ANeverSentPulseIsGivenUp) {
  AdaptivePolicy p(AdaptiveParams{}, 0.4);
  std::uint32_t s = 0;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(p.on_report(stage(s++, 0.4, 0.0, 25.0, 5000)).ok());
  ASSERT_DOUBLE_EQ(p.rate(), 0.0);
  // Two reports came before the next stage started: the pulse was withdrawn unsent, and no
  // report at the pulse rate ever comes. After a few reports the policy stops waiting for it
  // and pulses again after the hold.
  int pulses = 0;
  for (int i = 0; i < 12; ++i)
    pulses += p.on_report(stage(s++, 0.4, 0.0, 25.0, 5000)).value().rate == 0.0;
  EXPECT_EQ(pulses, 1);
}

TEST(AdaptivePolicy, MissingReportsRaiseRateAfterTheFirst) {
  AdaptivePolicy p(AdaptiveParams{}, 0.0);
  EXPECT_DOUBLE_EQ(p.on_report_missing(0).rate, 0.0);
  EXPECT_DOUBLE_EQ(p.on_report_missing(1).rate, 0.05);
  EXPECT_DOUBLE_EQ(p.on_report_missing(2).rate, 0.10);
}

TEST(AdaptivePolicy, RejectsBadParameters) {
  AdaptiveParams ap;
  ap.clean_loss = 0.5;
  EXPECT_FALSE(validate(ap).ok());
  ap = {};
  ap.margin = 0;
  EXPECT_FALSE(validate(ap).ok());
  ap = {};
  ap.hold_stages = 0;
  EXPECT_FALSE(validate(ap).ok());
  ap = {};
  ap.pulse_rate = 0.9;  // above rmax
  EXPECT_FALSE(validate(ap).ok());
  ap = {};
  ap.creep_queue_us = ap.queue_low_us + 1;
  EXPECT_FALSE(validate(ap).ok());
  EXPECT_TRUE(validate(AdaptiveParams{}).ok());
}

}  // namespace
}  // namespace predrop::core

// The exact control rule, claim by claim (JP7684261B2 claims 1-7, docs/design.md §2).
#include "predrop/core/exact_rule.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "predrop/core/policy_factory.hpp"

namespace predrop::core {
namespace {

RuleParams params(unsigned k = 1) {
  RuleParams p;
  p.r0 = 0.0;
  p.rp = 0.10;
  p.rp1 = 0.05;  // increase step, deliberately different from the decrease step
  p.rp2 = 0.02;
  p.rmax = 0.30;
  p.t1 = Threshold::absolute(0.5);   // dB
  p.t2 = Threshold::absolute(1000);  // µs
  p.k = k;
  return p;
}

StageReport report(std::uint32_t stage, double l_us, double p) {
  StageReport r;
  r.stage = stage;
  r.reception_period_us = l_us;
  r.performance = p;
  return r;
}

double feed(ExactRule& c, std::uint32_t stage, double l_us, double p) {
  auto d = c.on_report(report(stage, l_us, p));
  EXPECT_TRUE(d.ok());
  return d->rate;
}

// Claim 1 and the seed's Fig. 2: stage 0 runs at R0, and its report sets R1 = Rp.
TEST(ExactRuleClaims, Claim1_Stage0UsesR0ThenRp) {
  auto p = params();
  p.r0 = 0.01;
  ExactRule c(p);
  EXPECT_DOUBLE_EQ(c.rate(), 0.01);
  auto d = c.on_report(report(0, 100000, 40.0));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, DecisionKind::kInitial);
  EXPECT_DOUBLE_EQ(c.rate(), 0.10);
}

// Claim 2: P worse than the previous stage by more than T1 -> R decreases by Rp2.
TEST(ExactRuleClaims, Claim2_QualityDropLowersRate) {
  ExactRule c(params());
  feed(c, 0, 100000, 40.0);
  auto d = c.on_report(report(1, 100000, 39.0));  // 1 dB worse > 0.5 dB
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, DecisionKind::kDecrease);
  EXPECT_DOUBLE_EQ(d->rate, 0.08);
}

// Claim 2 wins over claim 3: P is checked first even when L also grew.
TEST(ExactRuleClaims, Claim2_QualityCheckedBeforeDelay) {
  ExactRule c(params());
  feed(c, 0, 100000, 40.0);
  EXPECT_DOUBLE_EQ(feed(c, 1, 200000, 30.0), 0.08);
}

// Claim 3: P not worse by more than T1, L grew against the previous stage by more than T2 ->
// R increases by Rp1.
TEST(ExactRuleClaims, Claim3_DelayGrowthRaisesRate) {
  ExactRule c(params());
  feed(c, 0, 100000, 40.0);
  auto d = c.on_report(report(1, 101001, 39.6));  // +1001 µs > 1000; -0.4 dB within T1
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, DecisionKind::kIncrease);
  EXPECT_DOUBLE_EQ(d->rate, 0.15);
}

// Claim 4: with k > 1, L exceeding ANY of the last k reception periods by more than T2 -> up.
TEST(ExactRuleClaims, Claim4_DelayGrowthAgainstAnyOfLastK) {
  ExactRule c(params(3));
  feed(c, 0, 100000, 40.0);  // R = 0.10
  feed(c, 1, 103000, 40.0);  // > L0 by 3000: up to 0.15
  feed(c, 2, 103500, 40.0);  // > L0 by 3500: up to 0.20 (L1 alone would say keep)
  // Stage 3 is within T2 of L2 and L1 but exceeds L0 by 3400 > T2: still an increase.
  auto d = c.on_report(report(3, 103400, 40.0));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, DecisionKind::kIncrease);
  EXPECT_DOUBLE_EQ(d->rate, 0.25);
  // Stage 4: L0 has left the window of k = 3 (L1..L3 remain) and 103900 is within T2 of all.
  EXPECT_EQ(c.on_report(report(4, 103900, 40.0))->kind, DecisionKind::kKeep);
}

// The same sequence under the basic rule (k = 1) keeps R at stage 3: claim 4 differs from 3.
TEST(ExactRuleClaims, Claim3vs4_BasicRuleSeesOnlyPreviousStage) {
  ExactRule c(params(1));
  feed(c, 0, 100000, 40.0);
  feed(c, 1, 103000, 40.0);
  feed(c, 2, 103500, 40.0);
  auto d = c.on_report(report(3, 103400, 40.0));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, DecisionKind::kKeep);
  EXPECT_DOUBLE_EQ(d->rate, 0.15);
}

// Claim 5: neither P worse by more than T1 nor L grown by more than T2 -> R unchanged.
TEST(ExactRuleClaims, Claim5_KeepWhenNothingChanged) {
  ExactRule c(params());
  feed(c, 0, 100000, 40.0);
  auto d = c.on_report(report(1, 100900, 39.7));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, DecisionKind::kKeep);
  EXPECT_DOUBLE_EQ(d->rate, 0.10);
}

// Claim 6: with k > 1, keep only when L exceeds NONE of the last k stages by more than T2.
TEST(ExactRuleClaims, Claim6_KeepWhenWithinAllOfLastK) {
  ExactRule c(params(3));
  feed(c, 0, 100000, 40.0);
  feed(c, 1, 100500, 40.0);
  feed(c, 2, 100800, 40.0);
  auto d = c.on_report(report(3, 100999, 40.0));  // within 1000 of 100000, 100500, 100800
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, DecisionKind::kKeep);
  EXPECT_DOUBLE_EQ(d->rate, 0.10);
}

// Claim 7 is the program claim: this library is that program; the factory is its entry point.
TEST(ExactRuleClaims, Claim7_ProgramSelectsTheRuleByName) {
  PolicyConfig cfg;
  cfg.rule = params(1);
  cfg.policy = "basic";
  auto basic = make_rate_controller(cfg);
  ASSERT_TRUE(basic.ok());
  EXPECT_EQ((*basic)->name(), "basic");
  cfg.policy = "history";
  cfg.rule.k = 4;
  auto history = make_rate_controller(cfg);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ((*history)->name(), "history");
}

TEST(ExactRuleEdges, FirstStagesBeforeKExistCompareWithThoseThatExist) {
  ExactRule c(params(5));
  feed(c, 0, 100000, 40.0);
  // Only L0 exists: exceeding it is enough, the empty slots of the window do not count as 0.
  EXPECT_EQ(c.on_report(report(1, 100500, 40.0))->kind, DecisionKind::kKeep);
  EXPECT_EQ(c.on_report(report(2, 101100, 40.0))->kind, DecisionKind::kIncrease);
}

TEST(ExactRuleEdges, ClampsAtZero) {
  ExactRule c(params());
  feed(c, 0, 100000, 40.0);  // R = 0.10
  double p = 40.0;
  for (std::uint32_t s = 1; s <= 10; ++s) {
    p -= 1.0;
    feed(c, s, 100000, p);
  }
  EXPECT_DOUBLE_EQ(c.rate(), 0.0);
}

TEST(ExactRuleEdges, ClampsAtRmax) {
  ExactRule c(params());
  feed(c, 0, 100000, 40.0);
  double l = 100000;
  for (std::uint32_t s = 1; s <= 10; ++s) {
    l += 5000;
    feed(c, s, l, 40.0);
  }
  EXPECT_DOUBLE_EQ(c.rate(), 0.30);
}

TEST(ExactRuleEdges, ValuesExactlyAtTheThresholdsKeep) {
  ExactRule c(params());
  feed(c, 0, 100000, 40.0);
  // P exactly 0.5 dB worse and L exactly 1000 µs longer: "more than" is strict, so keep.
  auto d = c.on_report(report(1, 101000, 39.5));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, DecisionKind::kKeep);
}

TEST(ExactRuleEdges, RelativeThresholds) {
  auto p = params();
  p.t1 = Threshold::fraction(0.02);  // 2 % of P
  p.t2 = Threshold::fraction(0.05);  // 5 % of L
  ExactRule c(p);
  feed(c, 0, 1000000, 40.0);
  EXPECT_EQ(c.on_report(report(1, 1049000, 39.3))->kind, DecisionKind::kKeep);      // -1.75 %
  EXPECT_EQ(c.on_report(report(2, 1102000, 39.3))->kind, DecisionKind::kIncrease);  // +5.05 %
  EXPECT_EQ(c.on_report(report(3, 1102000, 38.0))->kind, DecisionKind::kDecrease);  // -3.3 %
}

TEST(ExactRuleEdges, InvalidReportsRejectedWithReasonAndNoChange) {
  ExactRule c(params());
  feed(c, 0, 100000, 40.0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (auto bad : {report(1, nan, 40.0), report(1, -5, 40.0), report(1, 100000, nan),
                   report(1, inf, 40.0), report(1, 100000, -inf)}) {
    auto d = c.on_report(bad);
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().message.find("stage 1"), std::string::npos) << d.error().message;
  }
  EXPECT_DOUBLE_EQ(c.rate(), 0.10);
  EXPECT_EQ(c.stats().rejected, 5u);
  // The rejected reports did not become history: stage 1 is still accepted and compared with 0.
  EXPECT_EQ(c.on_report(report(1, 100000, 40.0))->kind, DecisionKind::kKeep);
}

TEST(ExactRuleEdges, StaleAndDuplicateReportsIgnored) {
  ExactRule c(params());
  feed(c, 0, 100000, 40.0);
  feed(c, 2, 100000, 40.0);
  auto dup = c.on_report(report(2, 900000, 10.0));
  ASSERT_TRUE(dup.ok());
  EXPECT_EQ(dup->kind, DecisionKind::kStale);
  auto old = c.on_report(report(1, 900000, 10.0));
  EXPECT_EQ(old->kind, DecisionKind::kStale);
  EXPECT_DOUBLE_EQ(c.rate(), 0.10);
  EXPECT_EQ(c.stats().stale, 2u);
}

// Decision (docs/design.md §2 "missing reports"): a stage whose report never came keeps R and
// leaves the history alone; the next report is compared with the newest stage that did report.
TEST(ExactRuleEdges, MissingReportKeepsRateAndHistory) {
  ExactRule c(params());
  feed(c, 0, 100000, 40.0);
  auto m = c.on_report_missing(1);
  EXPECT_EQ(m.kind, DecisionKind::kMissing);
  EXPECT_DOUBLE_EQ(m.rate, 0.10);
  // Stage 2 compared with stage 0 (the newest known): 0.4 dB worse and +900 µs -> keep.
  EXPECT_EQ(c.on_report(report(2, 100900, 39.6))->kind, DecisionKind::kKeep);
  EXPECT_EQ(c.stats().missing, 1u);
}

TEST(ExactRuleEdges, MissingReportActionIsConfigurable) {
  auto p = params();
  p.missing = MissingReportAction::kIncrease;
  ExactRule up(p);
  feed(up, 0, 100000, 40.0);
  EXPECT_DOUBLE_EQ(up.on_report_missing(1).rate, 0.15);
  p.missing = MissingReportAction::kDecrease;
  ExactRule down(p);
  feed(down, 0, 100000, 40.0);
  EXPECT_DOUBLE_EQ(down.on_report_missing(1).rate, 0.08);
}

// If stage 0's report is lost, the first report that arrives plays its role (R = Rp).
TEST(ExactRuleEdges, FirstArrivingReportActsAsStageZero) {
  ExactRule c(params());
  c.on_report_missing(0);
  EXPECT_DOUBLE_EQ(c.rate(), 0.0);
  auto d = c.on_report(report(1, 100000, 40.0));
  EXPECT_EQ(d->kind, DecisionKind::kInitial);
  EXPECT_DOUBLE_EQ(c.rate(), 0.10);
}

// The weakness docs/design.md §2 describes, pinned so nobody "fixes" the exact rule silently: under
// a quality drop that is really network loss, the exact rule lowers R.
TEST(ExactRuleEdges, ExactRuleReadsCongestionLossAsOverDiscarding) {
  ExactRule c(params());
  feed(c, 0, 1000000, 45.0);
  StageReport congested = report(1, 1000000, 18.0);
  congested.packets_announced = 1000;
  congested.packets_received = 650;
  EXPECT_EQ(c.on_report(congested)->kind, DecisionKind::kDecrease);
}

}  // namespace
}  // namespace predrop::core

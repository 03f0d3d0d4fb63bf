// The block trace's row of one stage (server/src/block_trace.hpp): the record's counts, the
// report and the decision, and the kPaused verdict of a stage a PAUSE cut.
#include "block_trace.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace predrop::server::detail {
namespace {

TEST(BlockTrace, TheRowCarriesTheRecordTheReportAndTheDecision) {
  chain::StageRecord r;
  r.stage = 12;
  r.rate = 0.25;
  r.packets = 40;
  r.discarded = 10;
  r.sent = 30;
  core::StageReport report;
  report.stage = 12;
  report.performance = 0.9;
  const core::Decision d{0.3, core::DecisionKind::kIncrease, "L grew", 0.125};
  const BlockTrace t = block_trace("s1", r, 7, true, report, d);
  EXPECT_EQ(t.session, "s1");
  EXPECT_EQ(t.stage, 12u);
  EXPECT_EQ(t.block, 7u);
  EXPECT_EQ(t.rate, 0.25);
  EXPECT_EQ(t.packets, 40u);
  EXPECT_EQ(t.discarded, 10u);
  EXPECT_EQ(t.sent, 30u);
  EXPECT_TRUE(t.reported);
  EXPECT_EQ(t.report.performance, 0.9);
  EXPECT_EQ(t.decision, core::DecisionKind::kIncrease);
  EXPECT_EQ(t.reason, "L grew");
  EXPECT_EQ(t.next_rate, 0.3);
  EXPECT_EQ(t.capacity_estimate, 0.125);
}

TEST(BlockTrace, AStageCutByPauseKeepsRAndSaysWhy) {
  const core::Decision d = paused_decision(0.4);
  EXPECT_EQ(d.kind, core::DecisionKind::kPaused);
  EXPECT_EQ(d.rate, 0.4);
  EXPECT_NE(d.reason.find("PAUSE"), std::string_view::npos);
  EXPECT_TRUE(std::isnan(d.capacity_estimate));
}

}  // namespace
}  // namespace predrop::server::detail

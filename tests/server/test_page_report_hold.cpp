// Browser block reports held for the page's P, their deadline and their release in stage order
// (server/src/page_report_hold.hpp, docs/webrtc.md "Quality in the page"). Times are passed in;
// nothing sleeps.
#include "page_report_hold.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace predrop::server::detail {
namespace {

constexpr std::uint32_t kBlock = 90'000;  // 1 s blocks at 90 kHz
constexpr std::uint64_t kWait = PageReportHold::kWaitUs;

core::StageReport report(std::uint32_t stage) {
  core::StageReport r;
  r.stage = stage;
  r.reception_period_us = 980'000;
  return r;
}

// What the session would apply: (stage, P) with P negative - 1 when not the page's.
using Applied = std::vector<std::pair<std::uint32_t, double>>;
void take(Applied& out, std::span<const HandedReport> handed) {
  for (const HandedReport& h : handed) {
    out.emplace_back(h.report.stage,
                     h.from_page ? h.report.performance : -h.report.performance - 1);
    EXPECT_EQ(h.report.reception_period_us, 980'000);  // the report itself goes unchanged
  }
}

TEST(PageReportHold, ReportsWaitForTheirPInStageOrderAndGoWithoutItAtTheirDeadline) {
  PageReportHold h;
  h.join().begin_block(0, 0);
  h.join().begin_block(1, kBlock);
  h.join().begin_block(2, 2 * kBlock);
  Applied out;
  take(out, h.hold(report(0), 0, true));
  take(out, h.hold(report(1), 100'000, true));
  take(out, h.release(kWait - 500'000));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(h.held(), 2u);
  // The page played past block 0's end: stage 0 goes with its P; stage 1 still waits.
  EXPECT_TRUE(h.join().add({0.9, 0, kBlock + 100}));
  take(out, h.release(kWait - 400'000));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, 0u);
  EXPECT_NEAR(out[0].second, 0.9, 1e-9);
  EXPECT_EQ(h.last_p(), 0.9);
  // Stage 1's P never comes: at its deadline it goes with the last P handed (no change for
  // the P comparison), not stalling the ones behind it.
  take(out, h.hold(report(2), 200'000, true));
  take(out, h.release(100'000 + kWait - 1));
  EXPECT_EQ(out.size(), 1u);
  take(out, h.release(100'000 + kWait));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].first, 1u);
  EXPECT_NEAR(out[1].second, -0.9 - 1, 1e-9);  // not from the page, P = 0.9 held
  EXPECT_EQ(h.held(), 1u);
  take(out, h.release(200'000 + kWait));
  EXPECT_EQ(h.held(), 0u);
  EXPECT_EQ(out.size(), 3u);
}

TEST(PageReportHold, APolicyThatDoesNotReadPWaitsNot) {
  PageReportHold h;
  h.join().begin_block(4, 0);
  h.join().begin_block(5, kBlock);
  Applied out;
  // Its wait ends when it comes: the next release hands it on, with the last P (0).
  take(out, h.hold(report(4), 1'000, false));
  EXPECT_TRUE(out.empty());
  take(out, h.release(1'000));
  EXPECT_EQ(out, (Applied{{4, -1.0}}));
  // The page's P, when it came first, goes with it.
  EXPECT_TRUE(h.join().add({0.5, 0, kBlock}));
  take(out, h.hold(report(4), 2'000, false));
  take(out, h.release(2'000));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NEAR(out[1].second, 0.5, 1e-9);
}

TEST(PageReportHold, AReportWhosePIsFinalGoesAtTheNextReleaseBeforeItsDeadline) {
  PageReportHold h;
  h.join().begin_block(0, 0);
  h.join().begin_block(1, kBlock);
  EXPECT_TRUE(h.join().add({0.7, 0, kBlock}));
  Applied out;
  take(out, h.hold(report(0), 0, true));
  take(out, h.release(0));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NEAR(out[0].second, 0.7, 1e-9);
}

TEST(PageReportHold, BeforeAnyPageReportTheLastPIsZeroAndAFullQueueHandsOnTheOldest) {
  PageReportHold h;
  Applied out;
  for (std::uint32_t s = 0; s < PageReportHold::kHeld + 2; ++s) {
    const auto handed = h.hold(report(s), 10, true);
    EXPECT_EQ(handed.size(), s < PageReportHold::kHeld ? 0u : 1u);
    take(out, handed);
  }
  EXPECT_EQ(out, (Applied{{0, -1.0}, {1, -1.0}}));  // P 0, not the page's
  EXPECT_EQ(h.held(), PageReportHold::kHeld);
  take(out, h.release(10 + kWait));
  EXPECT_EQ(out.size(), PageReportHold::kHeld + 2);
  for (std::uint32_t s = 0; s < out.size(); ++s)
    EXPECT_EQ(out[s].first, s);
}

}  // namespace
}  // namespace predrop::server::detail

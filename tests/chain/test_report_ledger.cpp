// chain::StageLedger / ReportLedger: each stage is settled exactly once — by its report, by an RR
// interval that covers it, or as missing at its deadline or when its slot is needed again — and
// a report for a later stage never settles the ones before it (docs/design.md §2.4).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "predrop/chain/report_ledger.hpp"

namespace predrop {
namespace {

using chain::StageLedger;
using chain::StageRecord;

// Opens stages [first, first + n) with deadline stage * 10 (a unit of the test's own).
struct Ledger {
  chain::ReportLedger<int> ledger;
  std::vector<std::uint32_t> missing;

  void open(std::uint32_t stage) {
    ledger.open(stage, std::uint64_t{stage} * 10 + 25,
                [&](const StageRecord& r) { missing.push_back(r.stage); });
  }
  void overdue(std::uint32_t end, std::uint64_t now) {
    ledger.settle_overdue(end, now, [&](const StageRecord& r) { missing.push_back(r.stage); });
  }
};

TEST(ReportLedger, FindsOnlyTheStagesItHolds) {
  Ledger l;
  EXPECT_EQ(l.ledger.find(0), nullptr);
  EXPECT_EQ(l.ledger.oldest_unsettled(), chain::kNoStage);
  l.open(0);
  l.open(1);
  ASSERT_NE(l.ledger.find(1), nullptr);
  EXPECT_EQ(l.ledger.find(1)->stage, 1u);
  EXPECT_EQ(l.ledger.find(2), nullptr) << "not opened yet";
  EXPECT_EQ(l.ledger.find(65), nullptr) << "same slot as 1, another stage";
  l.ledger.extra(*l.ledger.find(1)) = 7;
  EXPECT_EQ(l.ledger.extra(*l.ledger.find(1)), 7);
}

TEST(ReportLedger, AReportSettlesItsStageOnly) {
  Ledger l;
  for (std::uint32_t s = 0; s < 4; ++s)
    l.open(s);
  l.ledger.settle(*l.ledger.find(2));
  EXPECT_EQ(l.ledger.oldest_unsettled(), 0u) << "0 and 1 still wait for their reports";
  EXPECT_EQ(l.ledger.next_due(4), 25u);
  // Their deadlines pass: each is declared missing, 2 is not.
  l.overdue(4, 1000);
  EXPECT_EQ(l.missing, (std::vector<std::uint32_t>{0, 1, 3}));
  EXPECT_EQ(l.ledger.next_due(4), UINT64_MAX);
}

TEST(ReportLedger, MissingOnlyOnceTheDeadlineIsReached) {
  Ledger l;
  for (std::uint32_t s = 0; s < 3; ++s)
    l.open(s);
  l.overdue(3, 24);
  EXPECT_TRUE(l.missing.empty());
  l.overdue(3, 25);
  EXPECT_EQ(l.missing, (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(l.ledger.oldest_unsettled(), 1u);
  EXPECT_EQ(l.ledger.next_due(3), 35u);
  // Stages at or after `end` (the one being sent) are not judged, whatever the time.
  l.overdue(1, 1000);
  EXPECT_EQ(l.missing.size(), 1u);
}

TEST(ReportLedger, SettledStagesAreNeverMissing) {
  Ledger l;
  for (std::uint32_t s = 0; s < 3; ++s)
    l.open(s);
  for (std::uint32_t s = 0; s < 3; ++s)
    l.ledger.settle(*l.ledger.find(s));
  EXPECT_EQ(l.ledger.oldest_unsettled(), 3u);
  l.overdue(3, 1000);
  EXPECT_TRUE(l.missing.empty());
}

TEST(ReportLedger, ASlotNeededAgainDeclaresItsStageMissing) {
  Ledger l;
  for (std::uint32_t s = 0; s < StageLedger::kStages; ++s)
    l.open(s);
  l.ledger.settle(*l.ledger.find(1));
  l.open(StageLedger::kStages);  // slot of 0: never settled
  EXPECT_EQ(l.missing, (std::vector<std::uint32_t>{0}));
  l.open(StageLedger::kStages + 1);  // slot of 1: reported
  EXPECT_EQ(l.missing.size(), 1u);
  EXPECT_EQ(l.ledger.find(0), nullptr);
  EXPECT_EQ(l.ledger.oldest_unsettled(), 2u);
}

TEST(ReportLedger, AnRrIntervalSettlesEveryStageItCovers) {
  Ledger l;
  for (std::uint32_t s = 0; s < 6; ++s)
    l.open(s);
  l.ledger.settle_through(3);
  EXPECT_EQ(l.ledger.oldest_unsettled(), 4u);
  for (std::uint32_t s = 0; s <= 3; ++s)
    EXPECT_TRUE(l.ledger.find(s)->settled) << s;
  EXPECT_FALSE(l.ledger.find(4)->settled);
  l.overdue(6, 1000);
  EXPECT_EQ(l.missing, (std::vector<std::uint32_t>{4, 5}));
}

TEST(ReportLedger, AJoinerMidJobStartsAtItsFirstStage) {
  // The relay opens a worker's records from the stage it joined at, with deadlines in stages.
  chain::StageLedger ledger;
  std::vector<std::uint32_t> missing;
  for (std::uint32_t s = 1000; s < 1004; ++s) {
    ledger.open(s, s + 2, [&](const StageRecord& r) { missing.push_back(r.stage); });
    ledger.settle_overdue(s + 1, s, [&](const StageRecord& r) { missing.push_back(r.stage); });
  }
  EXPECT_EQ(missing, (std::vector<std::uint32_t>{1000, 1001}));
}

TEST(ReportLedger, StageIdsMayWrap) {
  Ledger l;
  const std::uint32_t first = UINT32_MAX - 3;  // kNoStage itself is never a stage id
  for (std::uint32_t s = first; s != 2; ++s) {
    if (s == chain::kNoStage) continue;
    l.ledger.open(s, 0, [](const StageRecord&) {});
  }
  EXPECT_TRUE(StageLedger::before(UINT32_MAX - 1, 1));
  l.ledger.settle_overdue(2, 0, [&](const StageRecord& r) { l.missing.push_back(r.stage); });
  EXPECT_EQ(l.missing.size(), 5u);
}

TEST(ReportLedger, RateUsedFollowsAReplannedRest) {
  StageRecord r;
  r.rate = 0.2;
  r.packets = 100;
  r.discarded = 30;
  EXPECT_DOUBLE_EQ(r.rate_used(), 0.2);
  r.replans = 1;
  EXPECT_DOUBLE_EQ(r.rate_used(), 0.3);
}

}  // namespace
}  // namespace predrop

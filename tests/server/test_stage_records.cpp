// What the ledger keeps of a stage (server/src/stage_records.hpp): R, the plan's counts and the
// duration at its start, what it sent and that it ended at its end, and per track the packets
// sent before and through it (at most chain::kLedgerTracks tracks).
#include "stage_records.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace predrop::server::detail {
namespace {

TEST(StageRecords, ABeginningStageKeepsItsPlanAndThePacketsSentBeforeIt) {
  chain::StagePlan plan;
  plan.packets = 40;
  plan.discarded = 12;
  plan.to_send = 28;
  const std::array<chain::TrackCounters, 2> before{chain::TrackCounters{100, 0},
                                                   chain::TrackCounters{30, 0}};
  chain::StageRecord r;
  record_begin(r, 0.3, plan, 1e6, before);
  EXPECT_EQ(r.rate, 0.3);
  EXPECT_EQ(r.packets, 40u);
  EXPECT_EQ(r.discarded, 12u);
  EXPECT_EQ(r.duration_us, 1e6);
  EXPECT_EQ(r.first_packet[0], 100u);
  EXPECT_EQ(r.first_packet[1], 30u);
  EXPECT_FALSE(r.ended);
}

TEST(StageRecords, AnEndingStageKeepsWhatItSentAndThePacketsThroughIt) {
  chain::StagePlan plan;
  plan.to_send = 25;  // its rest planned anew
  const std::array<chain::TrackCounters, 2> through{chain::TrackCounters{125, 0},
                                                    chain::TrackCounters{31, 0}};
  chain::StageRecord r;
  record_end(r, plan, through);
  EXPECT_TRUE(r.ended);
  EXPECT_EQ(r.sent, 25u);
  EXPECT_EQ(r.end_packet[0], 125u);
  EXPECT_EQ(r.end_packet[1], 31u);
}

TEST(StageRecords, OnlyTheFirstLedgerTracksAreCounted) {
  std::vector<chain::TrackCounters> sent(chain::kLedgerTracks + 1);
  for (std::size_t t = 0; t < sent.size(); ++t)
    sent[t].packets = 10 * (t + 1);
  const TrackPackets p = packets_sent(sent);
  ASSERT_EQ(p.tracks().size(), chain::kLedgerTracks);
  EXPECT_EQ(p.tracks()[0], 10u);
  EXPECT_EQ(p.tracks()[chain::kLedgerTracks - 1], 10u * chain::kLedgerTracks);
  EXPECT_TRUE(packets_sent({}).tracks().empty());
}

}  // namespace
}  // namespace predrop::server::detail

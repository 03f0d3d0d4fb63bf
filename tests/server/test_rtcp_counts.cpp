// What one RTCP datagram, as the intake read it, adds to the session's counters and to the
// counts the server totals (server/src/rtcp_counts.hpp).
#include "rtcp_counts.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace predrop::server::detail {
namespace {

TEST(RtcpCounts, AFailedDatagramCountsAsAnErrorAndNothingElse) {
  chain::Intake in;
  in.error = true;
  in.unknown_stages = 3;
  in.alerts_refused = 1;
  in.nacks = 2;
  SessionStats stats;
  RtcpCounts counts;
  EXPECT_FALSE(count_rtcp(in, stats, counts));
  EXPECT_EQ(stats.rtcp_errors, 1u);
  EXPECT_EQ(stats.reports_rejected, 0u);
  EXPECT_EQ(stats.alerts_refused, 0u);
  EXPECT_EQ(stats.nacks, 0u);
  EXPECT_EQ(counts.nacks, 0u);
}

TEST(RtcpCounts, AnUnprotectedReceiverReportCountsEvenWithTheErrorSet) {
  chain::Intake in;
  in.error = true;
  in.unprotected_rr = true;
  in.rtt_us = 12'000.0;
  SessionStats stats;
  RtcpCounts counts;
  EXPECT_TRUE(count_rtcp(in, stats, counts));
  EXPECT_EQ(stats.receiver_reports, 1u);
  EXPECT_EQ(stats.rr_unprotected, 1u);
  EXPECT_EQ(stats.rtcp_errors, 0u);
  EXPECT_EQ(stats.last_rtt_us, 12'000.0);
}

TEST(RtcpCounts, TransportCcNacksAndKeyFrameRequestsAddToBoth) {
  const std::array<core::StageReport, 2> reports{};
  const std::array<std::uint16_t, 3> nacked{7, 8, 9};
  chain::Intake in;
  in.authenticated = true;
  in.receiver_report = true;
  in.fraction_lost = 25;
  in.transport_cc = 2;
  in.reports = reports;
  in.nacks = 1;
  in.nacked = nacked;
  in.nacked_truncated = 4;
  in.plis = 1;
  in.firs = 1;
  in.unknown_stages = 1;
  in.alerts_refused = 2;
  SessionStats stats;
  stats.nacks = 10;  // earlier datagrams
  RtcpCounts counts;
  EXPECT_TRUE(count_rtcp(in, stats, counts));
  EXPECT_EQ(stats.receiver_reports, 1u);
  EXPECT_EQ(stats.last_fraction_lost, 25);
  EXPECT_EQ(counts.twcc_feedback, 2u);
  EXPECT_EQ(counts.twcc_reports, 2u);
  EXPECT_EQ(stats.twcc_reports, 2u);
  EXPECT_EQ(counts.nacks, 1u);
  EXPECT_EQ(stats.nacks, 11u);
  EXPECT_EQ(counts.nacked_packets, 7u);  // the 3 read and the 4 beyond kMaxNacked
  EXPECT_EQ(stats.rtx_repeated, 4u);
  EXPECT_EQ(counts.key_frame_requests, 2u);
  EXPECT_EQ(stats.key_frame_requests, 2u);
  EXPECT_EQ(stats.reports_rejected, 1u);
  EXPECT_EQ(stats.alerts_refused, 2u);
}

TEST(RtcpCounts, OneRetransmitCallAddsItsDifferenceAndTheTruncatedNumbersAreRefused) {
  chain::RetransmitStats before;
  before.sent = 10;
  before.bytes = 12'000;
  before.unknown = 1;
  before.capped = 2;
  before.repeated = 3;
  chain::RetransmitStats after = before;
  after.sent += 4;
  after.bytes += 4'800;
  after.unknown += 1;
  after.capped += 2;
  after.repeated += 1;
  RtcpCounts counts;
  count_retransmits(before, after, 5, counts);
  EXPECT_EQ(counts.rtx_packets, 4u);
  EXPECT_EQ(counts.rtx_bytes, 4'800u);
  EXPECT_EQ(counts.rtx_unknown, 1u);
  EXPECT_EQ(counts.rtx_refused, 5u + 2 + 1);
}

TEST(RtcpCounts, TheShownRepeatedCountAddsTheIntakesTruncatedNumbers) {
  SessionStats stats;
  stats.rtx_repeated = 4;  // cut off by the intake (count_rtcp)
  chain::RetransmitStats rtx;
  rtx.sent = 9;
  rtx.bytes = 9'000;
  rtx.unknown = 2;
  rtx.capped = 1;
  rtx.repeated = 3;
  const SessionStats shown = with_retransmits(stats, rtx);
  EXPECT_EQ(shown.rtx_packets, 9u);
  EXPECT_EQ(shown.rtx_bytes, 9'000u);
  EXPECT_EQ(shown.rtx_unknown, 2u);
  EXPECT_EQ(shown.rtx_capped, 1u);
  EXPECT_EQ(shown.rtx_repeated, 7u);
  EXPECT_EQ(stats.rtx_repeated, 4u);  // the session's own counters unchanged
}

}  // namespace
}  // namespace predrop::server::detail

// chain::FeedbackIntake: one datagram in, the control unit's stage reports out. SRTCP opens with
// the session key or a key the receiver announced (MIKEY), a wrong key is an error; PDFB records
// become reports with the R their stage went with; RR intervals of a receiver without PDFB become
// one report per whole stage they cover; an unprotected RR counts only with an LSR of an SR the
// sender sent. Real SRTCP (libsrtp), no sockets.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "predrop/chain/feedback.hpp"
#include "predrop/chain/feedback_intake.hpp"
#include "predrop/chain/report_ledger.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/wire/rtcp.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop {
namespace {

constexpr wire::SrtpSuite kSuite = wire::SrtpSuite::AesCm128HmacSha1_80;
constexpr std::uint32_t kTrackSsrc = 0x1111;
constexpr std::uint16_t kInitialSeq = 1000;
constexpr std::uint32_t kReceiverSsrc = 0xBEEF;

// Three stages of 100 packets each on one track, ended, at R 0.1 / 0.2 / 0.3.
chain::StageLedger three_stages() {
  chain::StageLedger ledger;
  for (std::uint32_t s = 0; s < 3; ++s) {
    chain::StageRecord& r = ledger.open(s, 1'000'000 * (s + 4), [](const chain::StageRecord&) {});
    r.rate = 0.1 * (s + 1);
    r.packets = 100;
    r.duration_us = 1e6;
    r.first_packet[0] = 100 * s;
    r.end_packet[0] = 100 * (s + 1);
    r.ended = true;
  }
  return ledger;
}

chain::IntakeConfig config(bool pdfb, std::optional<wire::SrtpKeyMaterial> key) {
  chain::IntakeConfig c;
  if (key) {
    c.suite = kSuite;
    c.key = *key;
  }
  c.tracks.push_back(chain::IntakeTrack{kTrackSsrc, kInitialSeq, 90000, std::nullopt, {}});
  c.pdfb = pdfb;
  c.rr_reports = !pdfb;
  return c;
}

wire::PdfbFeedback pdfb(std::uint32_t stage) {
  wire::PdfbFeedback f;
  f.stage_id = stage;
  f.media_ssrc = kTrackSsrc;
  f.reception_period_us = 990'000;
  f.packets_received = 95;
  f.packets_announced = 100;
  f.performance_valid = true;
  f.performance = 41.5;
  return f;
}

// A datagram in a buffer with room for SRTCP.
struct Datagram {
  std::array<std::uint8_t, 4096 + net::kSrtpMaxTrailer> bytes{};
  std::size_t len = 0;
  std::span<std::uint8_t> buffer() { return bytes; }
};

Datagram feedback(std::span<const wire::PdfbFeedback> records, net::SrtpSession* srtp) {
  Datagram d;
  wire::ReceiverReport rr;
  rr.ssrc = kReceiverSsrc;
  auto n = wire::write_feedback_compound(std::span(d.bytes).first(4096), rr, records);
  EXPECT_TRUE(n.ok());
  d.len = *n;
  if (srtp != nullptr) {
    const net::SrtpResult r = srtp->protect_rtcp(d.bytes, d.len);
    EXPECT_TRUE(r);
    d.len = r.length;
  }
  return d;
}

Datagram receiver_report(const wire::ReportBlock& block, net::SrtpSession* srtp) {
  Datagram d;
  wire::ReceiverReport rr;
  rr.ssrc = kReceiverSsrc;
  rr.blocks.push_back(block);
  auto n = wire::write_receiver_report(std::span(d.bytes).first(4096), rr);
  EXPECT_TRUE(n.ok());
  d.len = *n;
  if (srtp != nullptr) {
    const net::SrtpResult r = srtp->protect_rtcp(d.bytes, d.len);
    EXPECT_TRUE(r);
    d.len = r.length;
  }
  return d;
}

// A block saying the receiver saw packets up to index `highest` and lost `lost` in all.
wire::ReportBlock block(std::uint64_t highest, std::int32_t lost, std::uint32_t lsr = 0) {
  wire::ReportBlock b;
  b.ssrc = kTrackSsrc;
  b.extended_highest_sequence = static_cast<std::uint32_t>(kInitialSeq + highest);
  b.cumulative_lost = lost;
  b.last_sr = lsr;
  b.delay_since_last_sr = 0;
  return b;
}

const std::array<std::uint64_t, 1> kSent{300};

TEST(FeedbackIntake, APdfbUnderTheSessionKeyBecomesAReportWithItsStagesRate) {
  const auto key = net::random_srtp_key(kSuite);
  chain::FeedbackIntake intake(config(true, key));
  net::SrtpSession client(net::SrtpDirection::Outbound, kSuite, key);
  const chain::StageLedger ledger = three_stages();
  const std::array records{pdfb(1), pdfb(7)};
  Datagram d = feedback(records, &client);
  const chain::Intake& in = intake.read(d.buffer(), d.len, 0, kSent, ledger);
  EXPECT_TRUE(in.authenticated);
  EXPECT_FALSE(in.error);
  EXPECT_FALSE(in.from_rr);
  ASSERT_EQ(in.reports.size(), 1u);
  EXPECT_EQ(in.reports[0].stage, 1u);
  EXPECT_EQ(in.reports[0].packets_received, 95u);
  EXPECT_DOUBLE_EQ(in.reports[0].performance, 41.5);
  EXPECT_DOUBLE_EQ(in.reports[0].rate_used.value_or(-1), 0.2);
  EXPECT_EQ(in.unknown_stages, 1u) << "stage 7 was never sent";
}

TEST(FeedbackIntake, AKeyTheReceiverAnnouncedOpensItsSrtcp) {
  const auto key = net::random_srtp_key(kSuite);
  const auto own = net::random_srtp_key(kSuite);
  auto c = config(true, key);
  c.tracks[0].client_suite = kSuite;
  c.tracks[0].client_key = own;
  chain::FeedbackIntake intake(std::move(c));
  net::SrtpSession client(net::SrtpDirection::Outbound, kSuite, own);
  const chain::StageLedger ledger = three_stages();
  const std::array records{pdfb(0)};
  Datagram d = feedback(records, &client);
  const chain::Intake& in = intake.read(d.buffer(), d.len, 0, kSent, ledger);
  EXPECT_TRUE(in.authenticated);
  ASSERT_EQ(in.reports.size(), 1u);
  EXPECT_DOUBLE_EQ(in.reports[0].rate_used.value_or(-1), 0.1);
}

TEST(FeedbackIntake, AnotherKeyIsAnErrorAndGivesNothing) {
  chain::FeedbackIntake intake(config(true, net::random_srtp_key(kSuite)));
  net::SrtpSession stranger(net::SrtpDirection::Outbound, kSuite, net::random_srtp_key(kSuite));
  const chain::StageLedger ledger = three_stages();
  const std::array records{pdfb(0)};
  Datagram d = feedback(records, &stranger);
  const chain::Intake& in = intake.read(d.buffer(), d.len, 0, kSent, ledger);
  EXPECT_TRUE(in.error);
  EXPECT_FALSE(in.authenticated);
  EXPECT_TRUE(in.reports.empty());
}

TEST(FeedbackIntake, APlainSessionReadsPlainRtcp) {
  chain::FeedbackIntake intake(config(true, std::nullopt));
  const chain::StageLedger ledger = three_stages();
  const std::array records{pdfb(2)};
  Datagram d = feedback(records, nullptr);
  const chain::Intake& in = intake.read(d.buffer(), d.len, 0, kSent, ledger);
  EXPECT_TRUE(in.authenticated);
  ASSERT_EQ(in.reports.size(), 1u);
  EXPECT_EQ(in.reports[0].stage, 2u);
  // Garbage is an error, not a crash.
  std::array<std::uint8_t, 64> junk{};
  junk.fill(0xA5);
  EXPECT_TRUE(intake.read(junk, 20, 0, kSent, ledger).error);
}

TEST(FeedbackIntake, AnRrIntervalGivesOneReportPerWholeStageItCovers) {
  const auto key = net::random_srtp_key(kSuite);
  chain::FeedbackIntake intake(config(false, key));
  net::SrtpSession client(net::SrtpDirection::Outbound, kSuite, key);
  const chain::StageLedger ledger = three_stages();
  // Up to packet 249 seen, 25 lost: stages 0 and 1 are covered whole, stage 2 is not.
  Datagram d = receiver_report(block(249, 25), &client);
  const chain::Intake& in = intake.read(d.buffer(), d.len, 0, kSent, ledger);
  EXPECT_TRUE(in.authenticated);
  EXPECT_TRUE(in.receiver_report);
  EXPECT_TRUE(in.from_rr);
  EXPECT_EQ(in.rr_blocks_passed, 1u);
  EXPECT_EQ(in.rr_intervals, 1u);
  ASSERT_EQ(in.reports.size(), 2u);
  for (std::uint32_t s = 0; s < 2; ++s) {
    EXPECT_EQ(in.reports[s].stage, s);
    EXPECT_EQ(in.reports[s].packets_announced, 100u);
    EXPECT_EQ(in.reports[s].packets_received, 90u) << "25 of 250 lost, spread evenly";
    EXPECT_DOUBLE_EQ(in.reports[s].reception_period_us, 1e6);
    EXPECT_DOUBLE_EQ(in.reports[s].performance, 0.0);
  }
  EXPECT_DOUBLE_EQ(in.reports[1].rate_used.value_or(-1), 0.2);
  ASSERT_TRUE(in.covered_through);
  EXPECT_EQ(*in.covered_through, 1u);
}

TEST(FeedbackIntake, AnRrInsideAStageKeepsItsBaselineForTheNext) {
  const auto key = net::random_srtp_key(kSuite);
  chain::FeedbackIntake intake(config(false, key));
  net::SrtpSession client(net::SrtpDirection::Outbound, kSuite, key);
  chain::StageLedger ledger = three_stages();
  Datagram first = receiver_report(block(49, 10), &client);
  const chain::Intake& in = intake.read(first.buffer(), first.len, 0, kSent, ledger);
  EXPECT_TRUE(in.reports.empty()) << "no whole stage covered yet";
  EXPECT_FALSE(in.covered_through);
  // The next RR covers stage 0 with the loss of both intervals.
  Datagram second = receiver_report(block(149, 20), &client);
  const chain::Intake& next = intake.read(second.buffer(), second.len, 0, kSent, ledger);
  ASSERT_EQ(next.reports.size(), 1u);
  EXPECT_EQ(next.reports[0].packets_announced, 100u);
  EXPECT_EQ(next.reports[0].packets_received, 87u) << "20 of 150 lost";
  ledger.settle_through(*next.covered_through);
  EXPECT_EQ(ledger.oldest_unsettled(), 1u);
}

TEST(FeedbackIntake, AnUnprotectedRrCountsOnlyWithTheLsrOfOurSr) {
  const auto key = net::random_srtp_key(kSuite);
  chain::FeedbackIntake intake(config(false, key));
  const chain::StageLedger ledger = three_stages();
  const std::uint32_t sr_time = 0x00100000;
  intake.note_sender_report(sr_time);
  // No LSR: nothing vouches for it.
  Datagram bare = receiver_report(block(99, 0), nullptr);
  const chain::Intake& refused = intake.read(bare.buffer(), bare.len, sr_time + 10, kSent, ledger);
  EXPECT_TRUE(refused.error);
  EXPECT_EQ(refused.rr_blocks_refused, 1u);
  EXPECT_TRUE(refused.reports.empty());
  // The LSR of our SR: read for the RR path, not a sign of life.
  Datagram signed_rr = receiver_report(block(99, 0, sr_time), nullptr);
  const chain::Intake& in =
      intake.read(signed_rr.buffer(), signed_rr.len, sr_time + 10, kSent, ledger);
  EXPECT_FALSE(in.error);
  EXPECT_FALSE(in.authenticated);
  EXPECT_TRUE(in.unprotected_rr);
  ASSERT_EQ(in.reports.size(), 1u);
  EXPECT_EQ(in.reports[0].stage, 0u);
  ASSERT_TRUE(in.rtt_us);
}

TEST(FeedbackIntake, AReceiverWithPdfbHasItsRrsShownNotMapped) {
  const auto key = net::random_srtp_key(kSuite);
  chain::FeedbackIntake intake(config(true, key));
  net::SrtpSession client(net::SrtpDirection::Outbound, kSuite, key);
  const chain::StageLedger ledger = three_stages();
  auto b = block(249, 25);
  b.fraction_lost = 26;
  Datagram d = receiver_report(b, &client);
  const chain::Intake& in = intake.read(d.buffer(), d.len, 0, kSent, ledger);
  EXPECT_TRUE(in.receiver_report);
  EXPECT_EQ(in.fraction_lost, 26);
  EXPECT_TRUE(in.reports.empty());
  EXPECT_EQ(in.rr_blocks_passed, 0u);
}

TEST(FeedbackIntake, AnInterimAlertUnderTheSessionKeyIsReadForAStageInFlight) {
  const auto key = net::random_srtp_key(kSuite);
  chain::FeedbackIntake intake(config(true, key));
  net::SrtpSession client(net::SrtpDirection::Outbound, kSuite, key);
  chain::StageLedger ledger = three_stages();
  // The client's own encoder: RR + PDAL as SRTCP. 0.0615 bytes/µs is 61 500 bytes/s.
  const auto alert = [&](std::uint32_t stage) {
    core::StageAlert a{stage, 95'000.0, 0.0615, 0.062};
    Datagram d;
    auto n =
        chain::encode_alert(d.buffer(), kReceiverSsrc, chain::make_alert(a, kTrackSsrc), &client);
    EXPECT_TRUE(n.ok());
    d.len = n ? *n : 0;
    return d;
  };
  Datagram d = alert(2);
  const chain::Intake& in = intake.read(d.buffer(), d.len, 0, kSent, ledger);
  EXPECT_TRUE(in.authenticated);
  EXPECT_TRUE(in.reports.empty());
  ASSERT_TRUE(in.alert.has_value());
  EXPECT_EQ(in.alert->stage, 2u);
  EXPECT_DOUBLE_EQ(in.alert->queue_us, 95'000.0);
  EXPECT_DOUBLE_EQ(in.alert->rate, 0.0615);
  EXPECT_DOUBLE_EQ(in.alert->pair_rate, 0.062);
  EXPECT_EQ(in.alerts_refused, 0u);
  // A stage never sent, or one already settled by its report, has nothing left to re-plan.
  Datagram unknown = alert(9);
  const chain::Intake& in2 = intake.read(unknown.buffer(), unknown.len, 0, kSent, ledger);
  EXPECT_FALSE(in2.alert.has_value());
  EXPECT_EQ(in2.alerts_refused, 1u);
  ledger.settle(*ledger.find(2));
  Datagram settled = alert(2);
  const chain::Intake& in3 = intake.read(settled.buffer(), settled.len, 0, kSent, ledger);
  EXPECT_FALSE(in3.alert.has_value());
  EXPECT_EQ(in3.alerts_refused, 1u);
  // Under another key it is an error like any SRTCP that fails.
  net::SrtpSession stranger(net::SrtpDirection::Outbound, kSuite, net::random_srtp_key(kSuite));
  Datagram forged;
  auto n = chain::encode_alert(forged.buffer(), kReceiverSsrc,
                               chain::make_alert(core::StageAlert{1, 9e4, 0.05, 0.05}, kTrackSsrc),
                               &stranger);
  ASSERT_TRUE(n.ok());
  const chain::Intake& in4 = intake.read(forged.buffer(), *n, 0, kSent, ledger);
  EXPECT_TRUE(in4.error);
  EXPECT_FALSE(in4.alert.has_value());
}

}  // namespace
}  // namespace predrop

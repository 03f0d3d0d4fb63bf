// chain::TransportFeedback and transport-cc in chain::FeedbackIntake: a send log of two stages
// plus synthetic browser feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01) in, the
// per-stage measurement a PDFB v1.1 receiver would have sent out: L from the arrival times,
// received vs announced, queueing delay over the base one-way delay, bytes. Then through the
// intake: in a compound after an RR and alone (reduced-size), under SRTCP with the session key;
// a wrong key opens nothing; from the first transport-cc message on, RRs make no reports; a
// queue building in the stage in flight raises the sender's own interim alert (design §2.9).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "predrop/chain/feedback_intake.hpp"
#include "predrop/chain/report_ledger.hpp"
#include "predrop/chain/transport_feedback.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/wire/rtcp.hpp"
#include "predrop/wire/transport_cc.hpp"

namespace predrop {
namespace {

constexpr wire::SrtpSuite kSuite = wire::SrtpSuite::AesCm128HmacSha1_80;
constexpr std::uint32_t kTrackSsrc = 0x1111;
constexpr std::uint16_t kBytes = 1242;  // link bytes of every packet
// The browser's clock: reference time 1000 × 64 ms, the first packet 20 ms after it.
constexpr std::int32_t kReference = 1000;
constexpr std::int64_t kFirstArrival = kReference * wire::kTwccReferenceUs + 20'000;

// Stage 1: 10 packets (transport seq 0..9) sent 1 ms apart from 1 s; stage 2: seq 10..19 from
// 1.1 s. Each announces 10.
void log_two_stages(chain::TransportSendLog& log) {
  for (std::uint16_t i = 0; i < 10; ++i) {
    log.record(i, chain::SentPacket{1'000'000u + i * 1000u, 1, i, 10, kBytes});
    log.record(static_cast<std::uint16_t>(10 + i),
               chain::SentPacket{1'100'000u + i * 1000u, 2, i, 10, kBytes});
  }
}

// What the browser saw: stage 1's packets arrive 1 ms apart while a queue builds from the 6th
// on (+2 ms per packet, to 10 ms), packet 3 is lost; stage 2's arrive behind a standing 10 ms.
std::vector<wire::TwccPacket> browser_feedback() {
  std::vector<wire::TwccPacket> p;
  for (std::uint16_t i = 0; i < 10; ++i) {
    const std::int64_t queue = i < 5 ? 0 : std::int64_t{i - 4} * 2000;
    p.push_back(
        wire::TwccPacket{i, i != 3, i != 3 ? kFirstArrival + std::int64_t{i} * 1000 + queue : 0});
  }
  for (std::uint16_t i = 0; i < 10; ++i) {
    p.push_back(wire::TwccPacket{static_cast<std::uint16_t>(10 + i), true,
                                 kFirstArrival + 100'000 + std::int64_t{i} * 1000 + 10'000});
  }
  return p;
}

TEST(TransportFeedback, MeasuresEachStageAsAPdfbReceiverWould) {
  chain::TransportFeedback twcc;
  log_two_stages(twcc.send_log());
  const auto packets = browser_feedback();
  const auto measured = twcc.on_feedback(packets);
  ASSERT_EQ(measured.size(), 2u) << "stage 2 complete closes stage 1 before it";

  const core::StageMeasurement& s1 = measured[0];
  EXPECT_EQ(s1.stage, 1u);
  EXPECT_EQ(s1.received, 9u);
  EXPECT_EQ(s1.announced, 10u) << "loss 1 of 10";
  EXPECT_DOUBLE_EQ(s1.reception_period_us, 9 * 1000 + 10'000) << "first to last arrival";
  ASSERT_TRUE(s1.queue_delay_us.has_value());
  EXPECT_DOUBLE_EQ(*s1.queue_delay_us, (4000 + 6000 + 8000 + 10'000) / 4.0)
      << "the last 4 packets' one-way delay over the base (the first packet's)";
  ASSERT_TRUE(s1.path.has_value());
  EXPECT_EQ(s1.path->bytes_received, 9u * kBytes);
  EXPECT_DOUBLE_EQ(s1.path->queue_max_us, 10'000);
  EXPECT_DOUBLE_EQ(s1.path->queue_min_us, 0);
  EXPECT_GT(s1.path->dispersion_bytes, 0u) << "packets queued behind each other: pairs";

  const core::StageMeasurement& s2 = measured[1];
  EXPECT_EQ(s2.stage, 2u);
  EXPECT_EQ(s2.received, 10u);
  EXPECT_DOUBLE_EQ(s2.reception_period_us, 9000);
  ASSERT_TRUE(s2.queue_delay_us.has_value());
  EXPECT_DOUBLE_EQ(*s2.queue_delay_us, 10'000) << "a standing queue over stage 1's base";
  EXPECT_DOUBLE_EQ(s2.path->queue_min_us, 10'000);

  EXPECT_EQ(twcc.stats().feedback, 1u);
  EXPECT_EQ(twcc.stats().packets_reported, 20u);
  EXPECT_EQ(twcc.stats().packets_received, 19u);
  EXPECT_EQ(twcc.stats().stages_measured, 2u);
}

TEST(TransportFeedback, SplitOverMessagesGivesTheSameStages) {
  chain::TransportFeedback twcc;
  log_two_stages(twcc.send_log());
  const auto packets = browser_feedback();
  // Stage 1 and half of stage 2 first: nothing closes (stage 1's tail may still come).
  const auto first = twcc.on_feedback(std::span(packets).first(15));
  EXPECT_TRUE(first.empty());
  const auto rest = twcc.on_feedback(std::span(packets).subspan(15));
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].received, 9u);
  EXPECT_EQ(rest[1].received, 10u);
}

TEST(TransportFeedback, UnknownSequenceNumbersAndRepeatsCountForNothing) {
  chain::TransportFeedback twcc;
  log_two_stages(twcc.send_log());
  auto packets = browser_feedback();
  packets.push_back(wire::TwccPacket{500, true, kFirstArrival + 200'000});  // never sent
  (void)twcc.on_feedback(std::span(packets).first(10));
  const auto again = twcc.on_feedback(packets);  // stage 1 reported twice
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].received, 9u);
  EXPECT_EQ(again[0].duplicates, 9u);
  EXPECT_EQ(twcc.stats().packets_unknown, 1u);
}

TEST(TransportFeedback, AQueueBuildingInTheStageInFlightRaisesOneAlert) {
  // Stage 1's queue passes 8 ms at its 9th packet (index 8: 4 x 2 ms), with 8 packets of the
  // stage in: the alert comes from that message, not from stage 1's report a stage later.
  chain::TransportFeedback twcc({}, core::StageAlertConfig{8000});
  log_two_stages(twcc.send_log());
  const auto packets = browser_feedback();
  EXPECT_TRUE(twcc.on_feedback(std::span(packets).first(9)).empty()) << "stage 1 still open";
  ASSERT_TRUE(twcc.alert().has_value());
  EXPECT_EQ(twcc.alert()->stage, 1u);
  EXPECT_DOUBLE_EQ(twcc.alert()->queue_us, 8000);
  EXPECT_GT(twcc.alert()->rate, 0.0);
  // Its last packet, queued longer still: one alert per stage.
  (void)twcc.on_feedback(std::span(packets).subspan(9, 1));
  EXPECT_FALSE(twcc.alert().has_value());
  EXPECT_EQ(twcc.stats().alerts, 1u);

  chain::TransportFeedback off;  // the default: no threshold, never an alert
  log_two_stages(off.send_log());
  (void)off.on_feedback(packets);
  EXPECT_FALSE(off.alert().has_value());
  EXPECT_EQ(off.stats().alerts, 0u);
}

TEST(TransportSendLog, ForgetsWhatItOverwrote) {
  chain::TransportSendLog log;
  log.record(7, chain::SentPacket{1, 0, 0, 1, 100});
  ASSERT_NE(log.find(7), nullptr);
  log.record(7 + chain::TransportSendLog::kSize, chain::SentPacket{2, 0, 0, 1, 100});
  EXPECT_EQ(log.find(7), nullptr);
  EXPECT_EQ(log.find(8), nullptr);
}

// ---- through the intake ----

chain::StageLedger two_stages() {
  chain::StageLedger ledger;
  for (std::uint32_t s = 0; s < 3; ++s) {
    chain::StageRecord& r =
        ledger.open(s, std::uint64_t{1'000'000} * (s + 4), [](const chain::StageRecord&) {});
    r.rate = 0.1 * (s + 1);
    r.packets = 10;
    r.duration_us = 1e5;
    r.first_packet[0] = std::uint64_t{10} * s;
    r.end_packet[0] = std::uint64_t{10} * (s + 1);
    r.ended = true;
  }
  return ledger;
}

// As a WHEP session sets it up: the server's key from DTLS-SRTP, and the browser's own, which
// its SRTCP is protected with.
chain::IntakeConfig webrtc_config(const wire::SrtpKeyMaterial& server_key,
                                  const wire::SrtpKeyMaterial& browser_key) {
  chain::IntakeConfig c;
  c.suite = kSuite;
  c.key = server_key;
  c.tracks.push_back(chain::IntakeTrack{kTrackSsrc, 0, 90000, kSuite, browser_key});
  c.pdfb = false;
  c.rr_reports = true;  // control.player_adaptation = "rr"
  return c;
}

struct Datagram {
  std::array<std::uint8_t, 4096 + net::kSrtpMaxTrailer> bytes{};
  std::size_t len = 0;
};

// [RR without blocks] + transport-cc, SRTCP-protected by `srtp`.
Datagram twcc_datagram(std::span<const wire::TwccPacket> packets, bool with_rr,
                       net::SrtpSession& srtp) {
  Datagram d;
  if (with_rr) {
    wire::ReceiverReport rr;
    rr.ssrc = 0xBEEF;
    auto n = wire::write_receiver_report(std::span(d.bytes).first(4096), rr);
    EXPECT_TRUE(n.ok());
    d.len = *n;
  }
  wire::TwccFeedback h;
  h.sender_ssrc = 0xBEEF;
  h.media_ssrc = kTrackSsrc;
  h.reference_time = kReference;
  const std::size_t n =
      wire::write_transport_cc(h, packets, std::span(d.bytes).subspan(d.len, 4096 - d.len));
  EXPECT_GT(n, 0u);
  d.len += n;
  const net::SrtpResult r = srtp.protect_rtcp(d.bytes, d.len);
  EXPECT_TRUE(r);
  d.len = r.length;
  return d;
}

const std::array<std::uint64_t, 1> kSent{30};

TEST(FeedbackIntakeTransportCc, ACompoundWithTransportCcBecomesReportsThatWinOverRrs) {
  const auto key = net::random_srtp_key(kSuite);
  chain::FeedbackIntake intake(webrtc_config(net::random_srtp_key(kSuite), key));
  chain::TransportFeedback twcc;
  log_two_stages(twcc.send_log());
  intake.set_transport_feedback(&twcc);
  net::SrtpSession browser(net::SrtpDirection::Outbound, kSuite, key);
  const chain::StageLedger ledger = two_stages();

  const auto packets = browser_feedback();
  Datagram d = twcc_datagram(packets, true, browser);
  const chain::Intake& in = intake.read(d.bytes, d.len, 0, kSent, ledger);
  EXPECT_TRUE(in.authenticated);
  EXPECT_FALSE(in.error);
  EXPECT_FALSE(in.from_rr) << "settled one by one, as PDFB";
  EXPECT_EQ(in.transport_cc, 1u);
  ASSERT_EQ(in.reports.size(), 2u);
  const core::StageReport& r1 = in.reports[0];
  EXPECT_EQ(r1.stage, 1u);
  EXPECT_DOUBLE_EQ(r1.reception_period_us, 19'000);
  EXPECT_EQ(r1.packets_received, 9u);
  EXPECT_EQ(r1.packets_announced, 10u);
  EXPECT_DOUBLE_EQ(r1.network_loss(), 0.1);
  EXPECT_DOUBLE_EQ(r1.queue_delay_us.value_or(-1), 7000);
  EXPECT_DOUBLE_EQ(r1.performance, 0.0) << "no picture score from a browser";
  EXPECT_DOUBLE_EQ(r1.rate_used.value_or(-1), 0.2);
  ASSERT_TRUE(r1.path.has_value());
  EXPECT_EQ(r1.path->bytes_received, 9u * kBytes);
  EXPECT_DOUBLE_EQ(r1.path->queue_max_us, 10'000);
  EXPECT_EQ(in.reports[1].stage, 2u);
  EXPECT_DOUBLE_EQ(in.reports[1].rate_used.value_or(-1), 0.3);
  EXPECT_TRUE(intake.transport_cc_seen());

  // An RR afterwards is read (RTT, jitter) but makes no report: transport-cc wins.
  Datagram rr;
  wire::ReceiverReport report;
  report.ssrc = 0xBEEF;
  wire::ReportBlock b;
  b.ssrc = kTrackSsrc;
  b.extended_highest_sequence = 29;
  report.blocks.push_back(b);
  rr.len = *wire::write_receiver_report(std::span(rr.bytes).first(4096), report);
  rr.len = browser.protect_rtcp(rr.bytes, rr.len).length;
  const chain::Intake& after = intake.read(rr.bytes, rr.len, 0, kSent, ledger);
  EXPECT_TRUE(after.receiver_report);
  EXPECT_TRUE(after.reports.empty());
  EXPECT_EQ(after.rr_intervals, 0u);
}

TEST(FeedbackIntakeTransportCc, AReducedSizeMessageAloneIsRead) {
  const auto key = net::random_srtp_key(kSuite);
  chain::FeedbackIntake intake(webrtc_config(net::random_srtp_key(kSuite), key));
  chain::TransportFeedback twcc;
  log_two_stages(twcc.send_log());
  intake.set_transport_feedback(&twcc);
  net::SrtpSession browser(net::SrtpDirection::Outbound, kSuite, key);
  const chain::StageLedger ledger = two_stages();
  const auto packets = browser_feedback();
  Datagram d = twcc_datagram(packets, false, browser);
  const chain::Intake& in = intake.read(d.bytes, d.len, 0, kSent, ledger);
  EXPECT_TRUE(in.authenticated);
  EXPECT_FALSE(in.error);
  EXPECT_EQ(in.transport_cc, 1u);
  EXPECT_EQ(in.reports.size(), 2u);
}

TEST(FeedbackIntakeTransportCc, UnderAnotherKeyNothingIsRead) {
  chain::FeedbackIntake intake(
      webrtc_config(net::random_srtp_key(kSuite), net::random_srtp_key(kSuite)));
  chain::TransportFeedback twcc;
  log_two_stages(twcc.send_log());
  intake.set_transport_feedback(&twcc);
  net::SrtpSession stranger(net::SrtpDirection::Outbound, kSuite, net::random_srtp_key(kSuite));
  const chain::StageLedger ledger = two_stages();
  const auto packets = browser_feedback();
  Datagram d = twcc_datagram(packets, true, stranger);
  const chain::Intake& in = intake.read(d.bytes, d.len, 0, kSent, ledger);
  EXPECT_TRUE(in.error);
  EXPECT_TRUE(in.reports.empty());
  EXPECT_EQ(twcc.stats().feedback, 0u);
}

TEST(FeedbackIntakeTransportCc, UnderTheSessionKeyToo) {
  const auto key = net::random_srtp_key(kSuite);
  chain::FeedbackIntake intake(webrtc_config(key, net::random_srtp_key(kSuite)));
  chain::TransportFeedback twcc;
  log_two_stages(twcc.send_log());
  intake.set_transport_feedback(&twcc);
  net::SrtpSession sender(net::SrtpDirection::Outbound, kSuite, key);
  const chain::StageLedger ledger = two_stages();
  const auto packets = browser_feedback();
  for (const bool with_rr : {true, false}) {
    Datagram d = twcc_datagram(std::span(packets).first(10), with_rr, sender);
    const chain::Intake& in = intake.read(d.bytes, d.len, 0, kSent, ledger);
    EXPECT_TRUE(in.authenticated) << with_rr;
    EXPECT_EQ(in.transport_cc, 1u) << with_rr;
  }
}

TEST(FeedbackIntakeTransportCc, TheBrowsersAlertIsHandedOnForAStageStillUnsettled) {
  const auto key = net::random_srtp_key(kSuite);
  chain::FeedbackIntake intake(webrtc_config(net::random_srtp_key(kSuite), key));
  chain::TransportFeedback twcc({}, core::StageAlertConfig{8000});
  log_two_stages(twcc.send_log());
  intake.set_transport_feedback(&twcc);
  net::SrtpSession browser(net::SrtpDirection::Outbound, kSuite, key);
  chain::StageLedger ledger = two_stages();
  const auto packets = browser_feedback();
  Datagram d = twcc_datagram(std::span(packets).first(9), false, browser);
  const chain::Intake& in = intake.read(d.bytes, d.len, 0, kSent, ledger);
  EXPECT_TRUE(in.reports.empty());
  ASSERT_TRUE(in.alert.has_value()) << "as a measuring client's PDAL would be";
  EXPECT_EQ(in.alert->stage, 1u);
  EXPECT_EQ(in.alerts_refused, 0u);

  // The same queue in a stage already settled (its report came, or an RR covered it): the
  // session could re-plan nothing of it, so no alert is handed on.
  chain::TransportFeedback late({}, core::StageAlertConfig{8000});
  log_two_stages(late.send_log());
  intake.set_transport_feedback(&late);
  ledger.settle(*ledger.find(1));
  Datagram again = twcc_datagram(std::span(packets).first(9), false, browser);
  EXPECT_FALSE(intake.read(again.bytes, again.len, 0, kSent, ledger).alert.has_value());
}

TEST(FeedbackIntakeTransportCc, WithoutATransportFeedbackTheMessageIsIgnored) {
  const auto key = net::random_srtp_key(kSuite);
  chain::FeedbackIntake intake(webrtc_config(net::random_srtp_key(kSuite), key));
  net::SrtpSession browser(net::SrtpDirection::Outbound, kSuite, key);
  const chain::StageLedger ledger = two_stages();
  const auto packets = browser_feedback();
  Datagram d = twcc_datagram(packets, true, browser);
  const chain::Intake& in = intake.read(d.bytes, d.len, 0, kSent, ledger);
  EXPECT_TRUE(in.authenticated);
  EXPECT_EQ(in.transport_cc, 0u);
  EXPECT_TRUE(in.reports.empty());
}

}  // namespace
}  // namespace predrop

// NACK with RTX retransmission (docs/webrtc.md "NACK and RTX") over real loopback UDP with real
// SRTP/SRTCP, as a WebRTC session runs it: a StageTransmitter with the transport-wide sequence
// number, a send log and a retransmission history sends a stage with two packets pre-discarded;
// the receiver "loses" two of the sent ones and NACKs them (and numbers never sent) in an SRTCP
// compound after an RR; the FeedbackIntake reads the NACK and the transmitter answers it. The
// receiver gets RTX packets that decrypt and restore the original payloads (RFC 4588 §4: OSN
// first), numbered on the transport and logged as retransmissions (not measured); numbers never
// sent get nothing; VP8 PictureIDs are contiguous over pre-discarded pictures, and a resent
// packet carries the number it went with. Hostile NACKs (every BLP bit, floods) stay within the
// byte cap; a PLI is read.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "predrop/chain/feedback_intake.hpp"
#include "predrop/chain/report_ledger.hpp"
#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/chain/transport_feedback.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/wire/rtcp.hpp"
#include "predrop/wire/rtcp_nack.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop {
namespace {

using net::SrtpDirection;
using net::SrtpSession;
using wire::SrtpSuite;

constexpr std::uint32_t kSsrc = 0x1234;
constexpr std::uint32_t kRtxSsrc = 0x5678;
constexpr std::uint8_t kPt = 96;
constexpr std::uint8_t kRtxPt = 97;
constexpr std::uint16_t kFirstSeq = 65530;  // the stage's numbers wrap
constexpr std::uint8_t kTwccId = 3;
constexpr wire::RtpExtensionIds kIds{0, 0, kTwccId};

struct Received {
  std::uint8_t payload_type = 0;
  std::uint32_t ssrc = 0;
  std::uint16_t sequence = 0;
  std::uint32_t timestamp = 0;
  bool marker = false;
  std::optional<std::uint16_t> transport_sequence;
  std::vector<std::uint8_t> payload;
};

class NackRtxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = net::random_srtp_key(SrtpSuite::AesCm128HmacSha1_80);
    client_key_ = net::random_srtp_key(SrtpSuite::AesCm128HmacSha1_80);
    auto rx =
        net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {},
                               [this](auto data, const auto&, std::uint64_t) { on_media(data); });
    ASSERT_TRUE(rx.ok()) << rx.error().message;
    rx_socket_ = std::move(rx.value());
    auto tx = net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {},
                                     [](auto, const auto&, std::uint64_t) {});
    ASSERT_TRUE(tx.ok()) << tx.error().message;
    tx_socket_ = std::move(tx.value());

    chain::TransmitterConfig tc;
    tc.extension_ids = kIds;
    // A VP8 track: its PictureIDs are renumbered over what is sent (send_stage's payloads carry
    // none: their first byte, i < 128, has no X bit).
    tc.tracks.push_back(chain::TrackConfig{
        kSsrc, kPt, kFirstSeq, 1000, rx_socket_->local_address(), {}, chain::PictureIdField::kVp8});
    transmitter_ = std::make_unique<chain::StageTransmitter>(
        *tx_socket_, tc, SrtpSession(SrtpDirection::Outbound, SrtpSuite::AesCm128HmacSha1_80, key_),
        core::DiscardPlanner(core::DiscardPolicy::kPriority));
    transmitter_->set_send_log(&twcc_.send_log());
    chain::RetransmitConfig rtx;
    rtx.ssrc = kRtxSsrc;
    rtx.payload_type = kRtxPt;
    rtx.initial_sequence = 500;
    rtx.slots = 256;
    transmitter_->enable_retransmission(rtx);

    // The browser protects its SRTCP with its own DTLS-SRTP key, announced on the track.
    chain::IntakeConfig ic;
    ic.suite = SrtpSuite::AesCm128HmacSha1_80;
    ic.key = key_;
    ic.pdfb = false;
    ic.rtcp_fb = true;
    ic.tracks.push_back(
        chain::IntakeTrack{kSsrc, kFirstSeq, 90000, SrtpSuite::AesCm128HmacSha1_80, client_key_});
    intake_.emplace(ic);
    intake_->set_transport_feedback(&twcc_);
    media_in_.emplace(SrtpDirection::Inbound, SrtpSuite::AesCm128HmacSha1_80, key_);
    rtcp_out_.emplace(SrtpDirection::Outbound, SrtpSuite::AesCm128HmacSha1_80, client_key_);
  }

  void on_media(std::span<const std::uint8_t> data) {
    std::vector<std::uint8_t> buf(data.begin(), data.end());
    const net::SrtpResult r = media_in_->unprotect_rtp(buf, buf.size());
    ASSERT_TRUE(r) << "SRTP unprotect failed";
    auto v = wire::parse_rtp(std::span(buf.data(), r.length), kIds);
    ASSERT_TRUE(v.ok()) << v.error().message;
    received_.push_back(Received{v->header.payload_type, v->header.ssrc, v->header.sequence,
                                 v->header.timestamp, v->header.marker, v->transport_sequence,
                                 std::vector<std::uint8_t>(v->payload.begin(), v->payload.end())});
  }

  // Runs the loop until `n` more datagrams arrived (bounded: all on loopback).
  void carry(std::size_t n) {
    const std::size_t want = received_.size() + n;
    for (int pass = 0; pass < 200 && received_.size() < want; ++pass) {
      loop_.run_nowait();
    }
    ASSERT_EQ(received_.size(), want);
  }
  // Runs the loop a while and checks nothing more came.
  void expect_quiet() {
    const std::size_t had = received_.size();
    for (int pass = 0; pass < 20; ++pass) {
      loop_.run_nowait();
    }
    EXPECT_EQ(received_.size(), had);
  }

  // A stage of `n` packets of `size` bytes, payload i filled with i; packets `low` go first.
  chain::StagePlan send_stage(std::uint32_t stage, std::size_t n, std::size_t size, double rate,
                              const std::vector<std::size_t>& low = {}) {
    payloads_.assign(n, {});
    packets_.clear();
    std::vector<std::uint8_t> importance(n, 200);
    for (std::size_t i : low) {
      importance[i] = 1;
    }
    for (std::size_t i = 0; i < n; ++i) {
      payloads_[i].assign(size, static_cast<std::uint8_t>(i));
      packets_.push_back(
          chain::OutgoingPacket{0, i + 1 == n, static_cast<std::uint32_t>(i * 3000), payloads_[i]});
    }
    const auto plan = transmitter_->begin_stage(stage, rate, importance);
    // In chunks, each carried before the next: the receiving socket's buffer holds them all.
    for (std::size_t first = 0; first < n; first += 20) {
      const std::size_t before = transmitter_->stats().packets_sent;
      transmitter_->send(std::span(packets_).subspan(first, std::min<std::size_t>(20, n - first)),
                         first, now_us_);
      carry(transmitter_->stats().packets_sent - before);
    }
    return plan;
  }

  // The browser's RTCP: an RR, then `extra` (NACK, PLI), protected with its key, through the
  // intake; a NACK's numbers are answered as the session does.
  const chain::Intake& feedback(std::span<const std::uint8_t> extra) {
    std::array<std::uint8_t, 8192> d{};
    wire::ReceiverReport rr;
    rr.ssrc = 0xB0B;
    auto n = wire::write_receiver_report(std::span(d).first(64), rr);
    EXPECT_TRUE(n.ok());
    std::size_t len = *n;
    std::copy(extra.begin(), extra.end(), d.begin() + static_cast<std::ptrdiff_t>(len));
    len += extra.size();
    const net::SrtpResult r = rtcp_out_->protect_rtcp(d, len);
    EXPECT_TRUE(r);
    const std::array<std::uint64_t, 1> sent{transmitter_->track(0).packets};
    const chain::Intake& in = intake_->read(d, r.length, 0, sent, ledger_);
    EXPECT_TRUE(in.authenticated);
    if (!in.nacked.empty()) (void)transmitter_->retransmit(in.nacked, now_us_);
    return in;
  }
  const chain::Intake& nack(std::span<const std::uint16_t> lost) {
    std::array<std::uint8_t, 4096> m{};
    const std::size_t n = wire::write_generic_nack(0xB0B, kSsrc, lost, m);
    EXPECT_GT(n, 0U);
    return feedback(std::span(m).first(n));
  }

  net::EventLoop loop_;
  wire::SrtpKeyMaterial key_;
  wire::SrtpKeyMaterial client_key_;
  std::unique_ptr<net::UdpEndpoint> rx_socket_;
  std::unique_ptr<net::UdpEndpoint> tx_socket_;
  chain::TransportFeedback twcc_;
  std::unique_ptr<chain::StageTransmitter> transmitter_;
  std::optional<chain::FeedbackIntake> intake_;
  chain::StageLedger ledger_;
  std::optional<SrtpSession> media_in_;
  std::optional<SrtpSession> rtcp_out_;
  std::vector<std::vector<std::uint8_t>> payloads_;
  std::vector<chain::OutgoingPacket> packets_;
  std::vector<Received> received_;
  std::uint64_t now_us_ = 1'000'000;
};

TEST_F(NackRtxTest, LostPacketsComeBackAsRtxAndNeverSentOnesDoNot) {
  // 20 packets, 5 and 6 pre-discarded: 18 sent, numbered kFirstSeq.. contiguously.
  const auto plan = send_stage(1, 20, 300, 0.1, {5, 6});
  ASSERT_EQ(plan.discarded, 2U);
  ASSERT_EQ(received_.size(), 18U);
  std::map<std::uint16_t, Received> by_seq;
  for (const Received& r : received_) {
    EXPECT_EQ(r.payload_type, kPt);
    EXPECT_NE(r.payload[0], 5);
    EXPECT_NE(r.payload[0], 6);
    by_seq[r.sequence] = r;
  }
  ASSERT_EQ(by_seq.size(), 18U);
  // The network "lost" the 3rd and the 10th sent packets (numbers 65532 and 3, over the wrap).
  const std::uint16_t lost_a = kFirstSeq + 2;
  const auto lost_b = static_cast<std::uint16_t>(kFirstSeq + 9);
  const std::uint16_t never_sent = static_cast<std::uint16_t>(kFirstSeq + 18);  // next number
  const std::uint16_t before = kFirstSeq - 1;
  const std::vector<std::uint16_t> lost{lost_a, lost_b, never_sent, before};
  received_.clear();
  const chain::Intake& in = nack(lost);
  EXPECT_EQ(in.nacks, 1U);
  EXPECT_EQ(in.nacked.size(), 4U);
  carry(2);
  expect_quiet();
  for (const Received& rtx : received_) {
    EXPECT_EQ(rtx.payload_type, kRtxPt);
    EXPECT_EQ(rtx.ssrc, kRtxSsrc);
    ASSERT_GE(rtx.payload.size(), 2U);
    const auto osn = static_cast<std::uint16_t>(rtx.payload[0] << 8 | rtx.payload[1]);
    ASSERT_TRUE(osn == lost_a || osn == lost_b) << osn;
    const Received& original = by_seq.at(osn);
    EXPECT_EQ(rtx.timestamp, original.timestamp);
    EXPECT_EQ(rtx.marker, original.marker);
    EXPECT_TRUE(std::equal(rtx.payload.begin() + 2, rtx.payload.end(), original.payload.begin(),
                           original.payload.end()))
        << "the RTX payload after the OSN is the original payload";
    // Numbered on the transport after the 18 first transmissions, logged as retransmissions.
    ASSERT_TRUE(rtx.transport_sequence.has_value());
    EXPECT_GE(*rtx.transport_sequence, 18);
    const chain::SentPacket* logged = twcc_.send_log().find(*rtx.transport_sequence);
    ASSERT_NE(logged, nullptr);
    EXPECT_TRUE(logged->retransmission);
  }
  EXPECT_EQ(received_[0].sequence, 500);  // the RTX stream's own numbers
  EXPECT_EQ(received_[1].sequence, 501);
  const chain::RetransmitStats& s = transmitter_->retransmit_stats();
  EXPECT_EQ(s.requested, 4U);
  EXPECT_EQ(s.sent, 2U);
  EXPECT_EQ(s.unknown, 2U);
  EXPECT_EQ(s.capped, 0U);

  // The browser's transport-cc feedback about all 20 numbers: the retransmissions are counted
  // apart and not measured as packets of the stage.
  std::vector<wire::TwccPacket> report;
  for (std::uint16_t q = 0; q < 20; ++q) {
    report.push_back(wire::TwccPacket{q, true, 1000 + q * 250});
  }
  (void)twcc_.on_feedback(report);
  EXPECT_EQ(twcc_.stats().retransmissions, 2U);
  EXPECT_EQ(twcc_.stats().packets_received, 18U);

  // A second NACK for the same packet resends it; a third time (max_per_packet 2) does not.
  received_.clear();
  const std::vector<std::uint16_t> again{lost_a};
  (void)nack(again);
  carry(1);
  (void)nack(again);
  expect_quiet();
  EXPECT_EQ(transmitter_->retransmit_stats().repeated, 1U);
}

TEST_F(NackRtxTest, HostileNacksStayWithinTheByteCap) {
  // 200 packets of 1000 bytes sent; the credit is 25 % of their RTP bytes.
  (void)send_stage(1, 200, 1000, 0.0);
  ASSERT_EQ(received_.size(), 200U);
  received_.clear();
  const std::size_t packet = wire::rtp_header_size(kIds) + 1000;
  const double credit = 0.25 * 200.0 * static_cast<double>(packet);
  // A forged NACK with every BLP bit set in 255 FCIs (4335 numbers, at most kMaxNacked read),
  // sent 20 times: everything the ring holds asked for again and again.
  std::vector<std::uint8_t> m(12 + 255 * 4);
  m[0] = 0x81;
  m[1] = wire::kRtcpRtpfb;
  m[2] = 0x01;
  m[3] = 0x01;
  m[8] = kSsrc >> 24;
  m[9] = (kSsrc >> 16) & 0xff;
  m[10] = (kSsrc >> 8) & 0xff;
  m[11] = kSsrc & 0xff;
  for (std::size_t i = 0; i < 255; ++i) {
    const auto pid = static_cast<std::uint16_t>(kFirstSeq + i * 17);
    m[12 + 4 * i] = static_cast<std::uint8_t>(pid >> 8);
    m[13 + 4 * i] = static_cast<std::uint8_t>(pid);
    m[14 + 4 * i] = 0xff;
    m[15 + 4 * i] = 0xff;
  }
  for (int k = 0; k < 20; ++k) {
    const chain::Intake& in = feedback(m);
    EXPECT_EQ(in.nacked.size(), chain::FeedbackIntake::kMaxNacked);
    EXPECT_EQ(in.nacked_truncated, std::size_t{255} * 17 - chain::FeedbackIntake::kMaxNacked);
  }
  const chain::RetransmitStats& s = transmitter_->retransmit_stats();
  const double rtx_rtp_bytes =
      static_cast<double>(s.bytes) - static_cast<double>(s.sent) * net::kSrtpMaxTrailer;
  EXPECT_GT(s.sent, 0U);
  EXPECT_LE(rtx_rtp_bytes, credit + 1);
  EXPECT_LE(s.sent, 200U * 2);
  EXPECT_GT(s.capped, 0U);
  // Everything that went arrived and decrypted.
  carry(s.sent);
  // Numbers beyond the 200 sent were never sent: unknown, never resent.
  EXPECT_GT(s.unknown, 0U);
}

TEST_F(NackRtxTest, PliAndFirAreRead) {
  (void)send_stage(1, 4, 100, 0.0);
  const std::array<std::uint8_t, 12> pli = {0x81, 0xce, 0x00, 0x02, 0,    0,
                                            0x0b, 0x0b, 0,    0,    0x12, 0x34};
  const chain::Intake& a = feedback(pli);
  EXPECT_EQ(a.plis, 1U);
  EXPECT_EQ(a.firs, 0U);
  const std::array<std::uint8_t, 20> fir = {0x84, 0xce, 0x00, 0x04, 0,    0,    0x0b, 0x0b, 0, 0,
                                            0,    0,    0,    0,    0x12, 0x34, 1,    0,    0, 0};
  const chain::Intake& b = feedback(fir);
  EXPECT_EQ(b.firs, 1U);
  // A PLI about another stream is not ours.
  auto other = pli;
  other[11] = 0x35;
  EXPECT_EQ(feedback(other).plis, 0U);
}

}  // namespace
}  // namespace predrop

namespace predrop {
namespace {

TEST_F(NackRtxTest, Vp8PictureIdsStayContiguousOverPreDiscardsAndRtxResendsThemAsSent) {
  // 12 VP8 pictures of one packet each, PictureIDs 0x7ffa.. (they wrap); pictures 3, 5, 7 and
  // 9 disposable (the 0-2-1-2 pattern's layer 2) and pre-discarded.
  constexpr std::size_t kPictures = 12;
  payloads_.assign(kPictures, {});
  packets_.clear();
  std::vector<std::uint8_t> importance(kPictures, 200);
  for (std::size_t i : {3, 5, 7, 9}) {
    importance[i] = 1;
  }
  for (std::size_t i = 0; i < kPictures; ++i) {
    const auto id = static_cast<std::uint16_t>((0x7ffa + i) & 0x7fff);
    payloads_[i] = {0x90, 0x80, static_cast<std::uint8_t>(0x80 | (id >> 8)),
                    static_cast<std::uint8_t>(id)};
    payloads_[i].resize(200, static_cast<std::uint8_t>(i));
    packets_.push_back(
        chain::OutgoingPacket{0, true, static_cast<std::uint32_t>(i * 3000), payloads_[i]});
  }
  const auto plan = transmitter_->begin_stage(1, 0.3, importance);
  ASSERT_EQ(plan.discarded, 4U);
  const std::size_t before = transmitter_->stats().packets_sent;
  transmitter_->send(packets_, 0, now_us_);
  carry(transmitter_->stats().packets_sent - before);
  ASSERT_EQ(received_.size(), 8U);
  auto id_of = [](std::span<const std::uint8_t> p) {
    return static_cast<std::uint16_t>(((p[2] & 0x7f) << 8) | p[3]);
  };
  for (std::size_t k = 0; k < received_.size(); ++k) {
    EXPECT_EQ(id_of(received_[k].payload), (0x7ffa + k) & 0x7fff) << "packet " << k;
    EXPECT_EQ(received_[k].payload[2] & 0x80, 0x80);
  }
  // The picture after the first discard (source 0x7ffa + 4 = 0x7ffe) went as 0x7ffd; lost and
  // NACKed, it comes back as it went.
  const Received lost = received_[3];
  ASSERT_EQ(id_of(lost.payload), 0x7ffd);
  ASSERT_EQ(lost.payload[4], 4);
  received_.clear();
  const std::vector<std::uint16_t> nacked{lost.sequence};
  (void)nack(nacked);
  carry(1);
  ASSERT_EQ(received_[0].payload_type, kRtxPt);
  const std::span<const std::uint8_t> resent = std::span(received_[0].payload).subspan(2);
  EXPECT_TRUE(std::equal(resent.begin(), resent.end(), lost.payload.begin(), lost.payload.end()));
}

}  // namespace
}  // namespace predrop

// The RTX stream's sender reports (RFC 3550 §6.4.1, RFC 4588): a WebRTC session that negotiated
// NACK with RTX sends an SR for the RTX SSRC, besides the video's, once it has retransmitted
// something — on the video's RTCP way, with the RTX stream's own packet and octet counts and the
// video's RTP clock — and none before. Real loopback sockets, plain RTP/RTCP (the SRTCP wrapping
// is SenderReports' and tested in test_sender_reports); time is a FakeClock; nothing sleeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "fake_clock.hpp"
#include "predrop/chain/feedback.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/server/stream_session.hpp"
#include "predrop/wire/rtcp.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

constexpr std::uint64_t kStepUs = 10'000;
constexpr std::uint32_t kSsrc = 0x1234;
constexpr std::uint32_t kRtxSsrc = 0x5678;
constexpr std::uint16_t kFirstSeq = 1000;
constexpr std::uint32_t kOffset = 777;

struct Bed {
  net::EventLoop loop;
  test::FakeClock clock;
  std::unique_ptr<net::UdpEndpoint> rtp, rtcp, sink, rtcp_sink;
  std::vector<wire::SenderReport> srs;  // every SR the "browser" got
  Bed() {
    auto open = [&](net::UdpEndpoint::DatagramHandler h) {
      return std::move(
          net::UdpEndpoint::open(loop, net::SocketAddress::loopback_v4(0), {}, std::move(h))
              .value());
    };
    rtp = open([](auto, const auto&, auto) {});
    rtcp = open([](auto, const auto&, auto) {});
    sink = open([](auto, const auto&, auto) {});
    rtcp_sink = open([this](std::span<const std::uint8_t> d, const auto&, auto) {
      std::vector<std::uint8_t> buf(d.begin(), d.end());
      auto c = chain::decode_rtcp(buf, buf.size(), nullptr);
      if (c.ok() && c->sender_report) srs.push_back(*c->sender_report);
    });
  }
  std::unique_ptr<server::StreamSession> session() {
    server::StreamSessionConfig cfg;
    cfg.id = "s";
    cfg.number = 1;
    server::SessionTrack t;
    t.media_stream = 0;
    t.rtp_destination = sink->local_address();
    t.rtcp_destination = rtcp_sink->local_address();
    t.ssrc = kSsrc;
    t.initial_sequence = kFirstSeq;
    t.timestamp_offset = kOffset;
    cfg.tracks.push_back(t);
    cfg.feedback = false;
    cfg.rtcp_fb = true;
    chain::RetransmitConfig rtx;
    rtx.ssrc = kRtxSsrc;
    rtx.payload_type = 97;
    rtx.initial_sequence = 100;
    cfg.retransmission = rtx;
    core::PolicyConfig policy;
    policy.policy = "fixed";
    policy.fixed_rate = 0.0;
    return std::make_unique<server::StreamSession>(
        std::make_shared<media::FileSource>(test::sample_media(), false),
        std::make_unique<server::UdpTransport>(
            *rtp, *rtcp,
            std::vector<std::optional<net::SocketAddress>>{rtcp_sink->local_address()}),
        clock, cfg, std::move(core::make_rate_controller(policy).value()), nullptr);
  }
  // Moves the clock `us` in steps, pumping the session and carrying what it sent.
  void run_for(server::StreamSession& s, std::uint64_t us) {
    for (std::uint64_t t = 0; t < us; t += kStepUs) {
      clock.advance_us(kStepUs);
      s.pump(clock.now_us());
      loop.run_nowait();
    }
    for (int i = 0; i < 20; ++i)
      loop.run_nowait();
  }
  // An RR and a generic NACK (RFC 4585 §6.2.1) of `seq`, in plain RTCP, into the session.
  void nack(server::StreamSession& s, std::uint16_t seq) {
    std::array<std::uint8_t, 256> d{};
    wire::ReceiverReport rr;
    rr.ssrc = 0xB0B;
    const std::size_t n = wire::write_receiver_report(std::span(d).first(64), rr).value();
    const std::array<std::uint8_t, 16> p = {0x81,
                                            205,
                                            0x00,
                                            0x03,
                                            0,
                                            0,
                                            0x0b,
                                            0x0b,
                                            static_cast<std::uint8_t>(kSsrc >> 24),
                                            static_cast<std::uint8_t>(kSsrc >> 16),
                                            static_cast<std::uint8_t>(kSsrc >> 8),
                                            static_cast<std::uint8_t>(kSsrc),
                                            static_cast<std::uint8_t>(seq >> 8),
                                            static_cast<std::uint8_t>(seq),
                                            0,
                                            0};
    std::copy(p.begin(), p.end(), d.begin() + static_cast<std::ptrdiff_t>(n));
    s.on_rtcp(d, n + p.size(), clock.now_us());
  }
  std::size_t count(std::uint32_t ssrc) const {
    return static_cast<std::size_t>(std::count_if(
        srs.begin(), srs.end(), [ssrc](const wire::SenderReport& r) { return r.ssrc == ssrc; }));
  }
};

TEST(SessionRtxSenderReport, AnSrForTheRtxSsrcOnceItRetransmitted) {
  Bed b;
  auto s = b.session();
  s->play(b.clock.now_us());
  b.run_for(*s, 2'500'000);
  ASSERT_GE(b.count(kSsrc), 2U) << "the video's SRs";
  EXPECT_EQ(b.count(kRtxSsrc), 0U) << "no SR for an RTX stream that sent nothing";

  // The last two packets sent (sequence numbers are contiguous over sent packets).
  const auto last = static_cast<std::uint16_t>(kFirstSeq + s->transmitter_stats().packets_sent - 1);
  b.nack(*s, last);
  b.nack(*s, static_cast<std::uint16_t>(last - 1));
  ASSERT_EQ(s->stats().rtx_packets, 2U);
  b.srs.clear();
  b.run_for(*s, 1'200'000);
  ASSERT_GE(b.count(kSsrc), 1U);
  ASSERT_GE(b.count(kRtxSsrc), 1U) << "the RTX stream is a sender now";
  const wire::SenderReport* video = nullptr;
  const wire::SenderReport* rtx = nullptr;
  for (const auto& r : b.srs) {
    if (r.ssrc == kSsrc && video == nullptr) video = &r;
    if (r.ssrc == kRtxSsrc && rtx == nullptr) rtx = &r;
  }
  ASSERT_NE(video, nullptr);
  ASSERT_NE(rtx, nullptr);
  EXPECT_EQ(rtx->packet_count, 2U);
  // Each RTX payload is the 2-byte OSN and the original payload.
  EXPECT_GT(rtx->octet_count, 4U);
  EXPECT_LT(rtx->octet_count, video->octet_count);
  // The same instant and the video's clock: equal NTP and RTP timestamps.
  EXPECT_EQ(rtx->ntp_timestamp, video->ntp_timestamp);
  EXPECT_EQ(rtx->rtp_timestamp, video->rtp_timestamp);
}

}  // namespace
}  // namespace predrop

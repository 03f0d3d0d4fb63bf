// detail::SenderReports (server/src/sender_reports.hpp): per track with an RTCP way an SR whose
// RTP timestamp is the media time on the track's clock plus its offset, with the packet and
// octet counts and the CNAME, BYE appended when asked, protected with the session's SRTCP key
// (a receiver with the key opens it); an NTP time that moves with the session clock; an RTX
// stream's SR on the RTCP way of the track it repairs.
#include <gtest/gtest.h>

#include <cstdlib>

#include <string>
#include <vector>

#include "predrop/chain/feedback.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "sender_reports.hpp"

namespace predrop {
namespace {

using server::detail::SenderReports;

constexpr wire::SrtpSuite kSuite = wire::SrtpSuite::AesCm128HmacSha1_80;

// Keeps what is sent per track; only the tracks in `with_rtcp` have a way for RTCP.
struct Capture final : server::SessionTransport {
  std::vector<bool> with_rtcp;
  std::vector<std::pair<std::size_t, std::vector<std::uint8_t>>> sent;
  net::UdpEndpoint& rtp_socket() override { std::abort(); }
  chain::PacketSink* media_sink() override { return nullptr; }
  bool has_rtcp(std::size_t t) const override { return t < with_rtcp.size() && with_rtcp[t]; }
  bool send_rtcp(std::size_t t, std::span<const std::uint8_t> p) override {
    sent.emplace_back(t, std::vector<std::uint8_t>(p.begin(), p.end()));
    return true;
  }
  std::uint64_t drops() const override { return 0; }
};

TEST(SenderReports, AnSrPerTrackWithARtcpWayProtectedWithTheSessionKey) {
  const auto key = net::random_srtp_key(kSuite);
  SenderReports srs(kSuite, key, "predrop-7", 1'000'000);
  Capture out;
  out.with_rtcp = {true, false};
  const std::vector<SenderReports::Track> tracks{{0x11, 1000, 90000, 12, 3400},
                                                 {0x22, 0, 48000, 5, 500}};
  EXPECT_EQ(srs.send(1'500'000, 2'000'000, tracks, false, out), 1u);
  ASSERT_EQ(out.sent.size(), 1u);
  EXPECT_EQ(out.sent[0].first, 0u);
  net::SrtpSession in(net::SrtpDirection::Inbound, kSuite, key);
  std::vector<std::uint8_t> buf = out.sent[0].second;
  buf.resize(buf.size() + net::kSrtpMaxTrailer);
  auto c = chain::decode_rtcp(buf, out.sent[0].second.size(), &in);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE(c->sender_report);
  EXPECT_EQ(c->sender_report->ssrc, 0x11u);
  EXPECT_EQ(c->sender_report->rtp_timestamp, 1000u + 2 * 90000u) << "2 s of media";
  EXPECT_EQ(c->sender_report->packet_count, 12u);
  EXPECT_EQ(c->sender_report->octet_count, 3400u);
  EXPECT_EQ(c->cname, "predrop-7");
  EXPECT_FALSE(c->has_bye);
  EXPECT_EQ(c->sender_report->ntp_timestamp, srs.ntp_at(1'500'000));
}

// RFC 3550 §6.4.1 / RFC 4588: the RTX stream is a sender of its own SSRC. Its SR goes the way of
// the track it repairs (rtcp-mux: the same 5-tuple), with its own counts and the repaired
// track's clock and offset (an RTX packet carries the original timestamp).
TEST(SenderReports, AnRtxStreamGetsItsOwnSrOnTheRepairedTracksWay) {
  const auto key = net::random_srtp_key(kSuite);
  SenderReports srs(kSuite, key, "predrop-9", 0);
  Capture out;
  out.with_rtcp = {true, true};
  std::vector<SenderReports::Track> tracks{
      {0x11, 1000, 90000, 40, 40000}, {0x22, 7, 48000, 50, 5000}, {0x33, 1000, 90000, 3, 3006, 0}};
  EXPECT_EQ(srs.send(1'000'000, 1'000'000, tracks, true, out), 3u);
  ASSERT_EQ(out.sent.size(), 3u);
  EXPECT_EQ(out.sent[2].first, 0u) << "on the video's RTCP way, not a third track's";
  net::SrtpSession in(net::SrtpDirection::Inbound, kSuite, key);
  std::vector<std::uint32_t> ssrcs;
  for (const auto& [track, packet] : out.sent) {
    std::vector<std::uint8_t> buf = packet;
    buf.resize(buf.size() + net::kSrtpMaxTrailer);
    auto c = chain::decode_rtcp(buf, packet.size(), &in);
    ASSERT_TRUE(c.ok()) << c.error().message;
    ASSERT_TRUE(c->sender_report);
    ssrcs.push_back(c->sender_report->ssrc);
    EXPECT_TRUE(c->has_bye) << "BYE names every sender";
    if (c->sender_report->ssrc == 0x33) {
      EXPECT_EQ(c->sender_report->rtp_timestamp, 1000u + 90000u) << "the video's clock";
      EXPECT_EQ(c->sender_report->packet_count, 3u);
      EXPECT_EQ(c->sender_report->octet_count, 3006u);
      EXPECT_EQ(c->cname, "predrop-9");
    }
  }
  EXPECT_EQ(ssrcs, (std::vector<std::uint32_t>{0x11, 0x22, 0x33}));
  // Without an RTCP way for the repaired track, no SR for its RTX stream either.
  Capture none;
  none.with_rtcp = {false, true};
  EXPECT_EQ(srs.send(2'000'000, 2'000'000, tracks, false, none), 1u);
  EXPECT_EQ(none.sent[0].first, 1u);
}

TEST(SenderReports, ByeWhenAsked) {
  SenderReports srs(std::nullopt, {}, "c", 0);
  Capture out;
  out.with_rtcp = {true};
  const std::vector<SenderReports::Track> tracks{{0x11, 0, 90000, 0, 0}};
  EXPECT_EQ(srs.send(10, -5, tracks, true, out), 1u);
  std::vector<std::uint8_t> buf = out.sent[0].second;
  auto c = chain::decode_rtcp(buf, buf.size(), nullptr);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->has_bye);
  EXPECT_EQ(c->sender_report->rtp_timestamp, 0u) << "media time before 0 counts as 0";
}

TEST(SenderReports, TheNtpTimeMovesWithTheSessionClock) {
  SenderReports srs(std::nullopt, {}, "c", 1'000'000);
  const std::uint64_t a = srs.ntp_at(1'000'000);
  const std::uint64_t b = srs.ntp_at(3'000'000);
  EXPECT_EQ((b - a) >> 32, 2u) << "two seconds later";
}

}  // namespace
}  // namespace predrop

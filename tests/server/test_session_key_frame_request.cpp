// A browser's PLI or FIR (docs/webrtc.md "PLI and FIR"): the server cannot make a key frame, so
// the next block's key frame is planned as never discarded, whatever R is; the block in flight
// goes on as planned. Two sessions of the sample at R = 1 (priority discard: everything but the
// parameter sets goes, key frames last), one of which gets a PLI in its first block: its second
// block keeps exactly the key frame's packets more, its first block is unchanged, and a PLI
// about another SSRC, or in a session that negotiated no RTCP feedback, changes nothing. Real
// loopback sockets, plain RTP/RTCP; time is a FakeClock the test moves; nothing sleeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>

#include "fake_clock.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/server/stream_session.hpp"
#include "predrop/wire/rtcp.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

constexpr std::uint64_t kStepUs = 10'000;
constexpr std::uint32_t kSsrc = 0x1234;

struct Bed {
  net::EventLoop loop;
  test::FakeClock clock;
  std::unique_ptr<net::UdpEndpoint> rtp, rtcp, sink;
  Bed() {
    auto open = [&] {
      return std::move(net::UdpEndpoint::open(loop, net::SocketAddress::loopback_v4(0), {},
                                              [](auto, const auto&, auto) {})
                           .value());
    };
    rtp = open();
    rtcp = open();
    sink = open();
  }
  std::unique_ptr<server::StreamSession> session(bool rtcp_fb) {
    server::StreamSessionConfig cfg;
    cfg.id = "s";
    cfg.number = 1;
    server::SessionTrack t;
    t.media_stream = 0;
    t.rtp_destination = sink->local_address();
    t.ssrc = kSsrc;
    cfg.tracks.push_back(t);
    cfg.feedback = false;
    cfg.rtcp_fb = rtcp_fb;
    core::PolicyConfig policy;
    policy.policy = "fixed";
    policy.fixed_rate = 1.0;
    return std::make_unique<server::StreamSession>(
        std::make_shared<media::FileSource>(test::sample_media(), false),
        std::make_unique<server::UdpTransport>(*rtp, *rtcp,
                                               std::vector<std::optional<net::SocketAddress>>(1)),
        clock, cfg, std::move(core::make_rate_controller(policy).value()), nullptr);
  }
  // Pumps `s` every kStepUs until its stage `stage` began (was planned).
  void run_to_stage(server::StreamSession& s, std::uint32_t stage) {
    for (int i = 0; i < 1000 && s.transmitter_stats().stages <= stage; ++i) {
      clock.advance_us(kStepUs);
      s.pump(clock.now_us());
    }
    ASSERT_EQ(s.transmitter_stats().stages, stage + 1);
  }
  // An RR and a PLI about `media_ssrc`, in plain RTCP, into the session.
  void pli(server::StreamSession& s, std::uint32_t media_ssrc) {
    std::array<std::uint8_t, 256> d{};
    wire::ReceiverReport rr;
    rr.ssrc = 0xB0B;
    const std::size_t n = wire::write_receiver_report(std::span(d).first(64), rr).value();
    const std::array<std::uint8_t, 12> p = {0x81,
                                            0xce,
                                            0x00,
                                            0x02,
                                            0,
                                            0,
                                            0x0b,
                                            0x0b,
                                            static_cast<std::uint8_t>(media_ssrc >> 24),
                                            static_cast<std::uint8_t>(media_ssrc >> 16),
                                            static_cast<std::uint8_t>(media_ssrc >> 8),
                                            static_cast<std::uint8_t>(media_ssrc)};
    std::copy(p.begin(), p.end(), d.begin() + static_cast<std::ptrdiff_t>(n));
    s.on_rtcp(d, n + p.size(), clock.now_us());
  }
};

// Packets discarded in a session's first and second stage (each planned when it begins).
struct Discards {
  std::uint64_t first = 0;
  std::uint64_t second = 0;
};

Discards run(Bed& b, server::StreamSession& s, std::optional<std::uint32_t> pli_ssrc) {
  s.play(b.clock.now_us());
  b.run_to_stage(s, 0);
  for (int i = 0; i < 30; ++i) {  // 300 ms into the first block
    b.clock.advance_us(kStepUs);
    s.pump(b.clock.now_us());
  }
  if (pli_ssrc) b.pli(s, *pli_ssrc);
  Discards d;
  d.first = s.transmitter_stats().packets_discarded;
  b.run_to_stage(s, 1);
  d.second = s.transmitter_stats().packets_discarded - d.first;
  return d;
}

// The packets of the sample's second block that are its key frame.
std::uint64_t key_packets_of_block(std::size_t block) {
  const auto& file = *test::sample_media();
  const auto importance = file.importance(file.blocks()[block]);
  return static_cast<std::uint64_t>(
      std::count(importance.begin(), importance.end(), media::kImportanceKey));
}

TEST(SessionKeyFrameRequest, APliKeepsTheNextBlocksKeyFrame) {
  const std::uint64_t key = key_packets_of_block(1);
  ASSERT_GT(key, 0u);
  Bed a;
  auto plain = a.session(true);
  const Discards without = run(a, *plain, std::nullopt);
  Bed b;
  auto asked = b.session(true);
  const Discards with = run(b, *asked, kSsrc);
  EXPECT_EQ(with.first, without.first) << "the block in flight goes on as planned";
  EXPECT_EQ(without.second - with.second, key) << "exactly the key frame's packets kept";
  EXPECT_EQ(asked->stats().key_frame_requests, 1u);
  EXPECT_EQ(asked->stats().key_frames_protected, 1u);
  // Only that block: the third is planned as before.
  const std::uint64_t after_second = asked->transmitter_stats().packets_discarded;
  const std::uint64_t plain_second = plain->transmitter_stats().packets_discarded;
  b.run_to_stage(*asked, 2);
  a.run_to_stage(*plain, 2);
  EXPECT_EQ(asked->transmitter_stats().packets_discarded - after_second,
            plain->transmitter_stats().packets_discarded - plain_second);
}

TEST(SessionKeyFrameRequest, APliAboutAnotherStreamOrNotNegotiatedChangesNothing) {
  Bed a;
  auto plain = a.session(true);
  const Discards without = run(a, *plain, std::nullopt);
  Bed b;
  auto other = b.session(true);
  EXPECT_EQ(run(b, *other, kSsrc + 1).second, without.second);
  EXPECT_EQ(other->stats().key_frame_requests, 0u);
  Bed c;
  auto off = c.session(false);
  EXPECT_EQ(run(c, *off, kSsrc).second, without.second);
  EXPECT_EQ(off->stats().key_frame_requests, 0u);
}

}  // namespace
}  // namespace predrop

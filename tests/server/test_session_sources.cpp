// A StreamSession reads its blocks through the Source seam (media::BlockSource): from a file
// (every block, then BYE; a looping file goes on), and from a live-like source
// (test::ScriptedLiveSource): it joins at the newest block that starts with a key frame, waits
// without a BYE while the source stalls and goes on from when a block comes (not late), rejoins
// at a key frame when it fell behind the ring, keeps reading a block the ring dropped meanwhile,
// and ends with the source. Real loopback sockets, plain RTP; time is a FakeClock the test
// moves; nothing sleeps.
#include <gtest/gtest.h>

#include <memory>

#include "fake_clock.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/server/stream_session.hpp"
#include "scripted_source.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

constexpr std::uint64_t kStepUs = 10'000;

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

  std::unique_ptr<server::StreamSession> session(std::shared_ptr<const media::BlockSource> src,
                                                 std::uint32_t max_stages = 0) {
    server::StreamSessionConfig cfg;
    cfg.id = "s";
    cfg.number = 1;
    server::SessionTrack t;
    t.media_stream = 0;
    t.rtp_destination = sink->local_address();
    t.ssrc = 0x1234;
    cfg.tracks.push_back(t);
    cfg.max_stages = max_stages;
    core::PolicyConfig policy;
    policy.policy = "fixed";
    return std::make_unique<server::StreamSession>(
        std::move(src),
        std::make_unique<server::UdpTransport>(*rtp, *rtcp,
                                               std::vector<std::optional<net::SocketAddress>>(1)),
        clock, cfg, std::move(core::make_rate_controller(policy).value()), nullptr);
  }

  // Pumps `s` every kStepUs for `us` of clock time.
  void run(server::StreamSession& s, std::uint64_t us) {
    for (std::uint64_t end = clock.now_us() + us; clock.now_us() < end;) {
      clock.advance_us(kStepUs);
      s.pump(clock.now_us());
    }
  }
  static std::uint64_t sent(const server::StreamSession& s) {
    return s.transmitter_stats().packets_sent;
  }
};

std::uint64_t file_duration_us() {
  return static_cast<std::uint64_t>(test::sample_media()->duration_us());
}

TEST(SessionSources, AFileSessionSendsEveryBlockThenSaysBye) {
  Bed b;
  auto s = b.session(std::make_shared<media::FileSource>(test::sample_media(), false));
  s->play(b.clock.now_us());
  b.run(*s, file_duration_us() + 500'000);
  EXPECT_TRUE(s->finished());
  EXPECT_TRUE(s->said_bye());
  EXPECT_EQ(s->current_stage(), test::sample_media()->blocks().size());
  EXPECT_EQ(s->transmitter_stats().late_stages, 0u);
}

TEST(SessionSources, ALoopingFileGoesOnPastItsEnd) {
  Bed b;
  const std::size_t blocks = test::sample_media()->blocks().size();
  auto s = b.session(std::make_shared<media::FileSource>(test::sample_media(), true),
                     static_cast<std::uint32_t>(blocks + 2));
  s->play(b.clock.now_us());
  b.run(*s, file_duration_us() + 2'500'000);
  EXPECT_TRUE(s->finished()) << "max_stages ends it";
  EXPECT_EQ(s->block_sequence(), blocks + 2);
  EXPECT_EQ(s->transmitter_stats().late_stages, 0u);
}

TEST(SessionSources, ALiveSessionJoinsAtTheNewestKeyBlock) {
  Bed b;
  auto src = std::make_shared<test::ScriptedLiveSource>(test::sample_media(), 8, 3);
  for (int i = 0; i < 5; ++i)
    src->publish();  // join points: 0 and 3
  auto s = b.session(src);
  EXPECT_EQ(s->block_sequence(), 3u);
  s->play(b.clock.now_us());
  b.run(*s, 100'000);
  EXPECT_GT(Bed::sent(*s), 0u);
  EXPECT_EQ(s->current_stage(), 0u) << "its first stage is block 3";
}

TEST(SessionSources, AStalledSourceHoldsTheSessionAndItGoesOnWhenABlockComes) {
  Bed b;
  auto src = std::make_shared<test::ScriptedLiveSource>(test::sample_media(), 8);
  src->publish();
  auto s = b.session(src);
  s->play(b.clock.now_us());
  b.run(*s, 2'000'000);  // block 0 (1 s), then a second of nothing
  const std::uint64_t after_block = Bed::sent(*s);
  EXPECT_GT(after_block, 0u);
  EXPECT_FALSE(s->finished());
  EXPECT_FALSE(s->said_bye()) << "a stall is not an end";
  EXPECT_EQ(s->stats().source_waits, 1u);
  EXPECT_EQ(s->block_sequence(), 1u);
  EXPECT_LE(s->next_due_us(), b.clock.now_us() + server::StreamSession::kSourcePollUs);
  src->publish();
  b.run(*s, 1'100'000);
  EXPECT_GT(Bed::sent(*s), after_block);
  EXPECT_EQ(s->block_sequence(), 2u);
  EXPECT_EQ(s->transmitter_stats().late_stages, 0u) << "block 1 goes from when it came";
}

TEST(SessionSources, ASessionThatFellBehindRejoinsAtAKeyFrame) {
  Bed b;
  auto src = std::make_shared<test::ScriptedLiveSource>(test::sample_media(), 3, 2);
  src->publish();
  auto s = b.session(src);
  s->play(b.clock.now_us());
  b.run(*s, 1'050'000);
  ASSERT_EQ(s->block_sequence(), 1u);
  s->pause(b.clock.now_us());
  for (int i = 0; i < 6; ++i)
    src->publish();  // blocks 1 .. 6: the ring keeps 4, 5, 6
  s->play(b.clock.now_us());
  b.run(*s, 100'000);
  EXPECT_EQ(s->stats().source_rejoins, 1u);
  EXPECT_EQ(s->block_sequence(), 6u) << "6 is the newest key block";
  EXPECT_EQ(s->transmitter_stats().late_stages, 0u);
}

TEST(SessionSources, ABlockTheRingDroppedIsReadToItsEnd) {
  Bed b;
  auto src = std::make_shared<test::ScriptedLiveSource>(test::sample_media(), 2);
  src->publish();
  auto s = b.session(src);
  s->play(b.clock.now_us());
  b.run(*s, 300'000);  // block 0 under way
  for (int i = 0; i < 4; ++i)
    src->publish();  // the ring no longer has block 0
  const std::uint64_t part = Bed::sent(*s);
  b.run(*s, 800'000);
  EXPECT_GT(Bed::sent(*s), part);
  EXPECT_EQ(s->current_stage(), 1u);
}

TEST(SessionSources, AnEndedSourceEndsTheSession) {
  Bed b;
  auto src = std::make_shared<test::ScriptedLiveSource>(test::sample_media(), 4);
  src->publish();
  src->publish();
  src->end();
  auto s = b.session(src);
  EXPECT_EQ(s->block_sequence(), 1u);
  s->play(b.clock.now_us());
  b.run(*s, 1'500'000);
  EXPECT_TRUE(s->finished());
  EXPECT_TRUE(s->said_bye());
}

}  // namespace
}  // namespace predrop

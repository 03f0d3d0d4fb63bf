// Viewers of a live stream leaving (issue 23 item 8, docs/live.md): one viewer's RTSP/TCP
// connection closes in the middle of a block (interleaved: the connection is its transport) and
// another TEARDOWNs its UDP session, while a third keeps watching and the publisher keeps
// publishing. The stream goes on (blocks keep being published, nothing ends), the remaining
// viewer's media keeps coming, parseable and in step, and only the two sessions are gone.
// Attached connections and a FakeClock, as tests/server/test_server_interleaved.cpp; the
// publisher sends the sample's video as FFmpeg does (test_live_publish.cpp). Nothing sleeps.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../support/fake_clock.hpp"
#include "predrop/media/live_source.hpp"
#include "predrop/rtsp/rtsp_message.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/server/live_point.hpp"
#include "predrop/server/stream_session.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

using test::request_text;
using test::session_of;

constexpr std::string_view kSecret = "0123456789abcdef";
constexpr std::string_view kSdp =
    "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=No Name\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
    "m=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\n"
    "a=fmtp:96 packetization-mode=1\r\na=control:streamid=0\r\n";

std::span<const std::uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// What the server wrote on one connection: replies and interleaved frames.
struct Output {
  std::vector<rtsp::RtspResponse> responses;
  std::size_t rtp = 0;   // frames on channel 0
  std::size_t rtcp = 0;  // frames on channel 1
  int errors = 0;
};

class LiveViewers : public ::testing::Test {
 protected:
  void SetUp() override {
    auto o = test::loopback_options();
    o.max_sessions_per_address = 0;
    server::LivePointSettings live;
    live.secret = std::string(kSecret);
    point_ = std::make_shared<server::LivePoint>(live);
    o.streams.push_back(server::StreamDefinition{"live", point_});
    srv_ = std::make_unique<server::StreamServer>(loop_, clock_, o);
    srv_->start();
  }
  void TearDown() override {
    srv_->stop();
    srv_.reset();
    loop_.run_nowait();
  }

  static std::string url(std::string_view tail = {}) {
    return "rtsp://127.0.0.1:8554/live" + std::string(tail);
  }
  std::uint64_t connect(std::uint16_t port) {
    const auto id = srv_->attach_connection(net::SocketAddress::loopback_v4(port));
    parsers_[id] = std::make_unique<rtsp::RtspResponseParser>();
    return id;
  }
  // What connection `id` got since the last look.
  Output take(std::uint64_t id) {
    Output r;
    rtsp::RtspResponseParser& p = *parsers_[id];
    const std::string out = srv_->take_output(id);
    constexpr std::size_t kRead = std::size_t{16} * 1024;
    for (std::size_t at = 0; at < out.size(); at += kRead) {
      for (auto ev = p.feed(std::string_view(out).substr(at, kRead));
           ev != rtsp::RtspParseEvent::kNeedMore; ev = p.next()) {
        if (ev == rtsp::RtspParseEvent::kMessage) {
          r.responses.push_back(p.take_response());
        } else if (ev == rtsp::RtspParseEvent::kInterleaved) {
          ++(p.interleaved().channel == 0 ? r.rtp : r.rtcp);
        } else {
          ++r.errors;
          if (p.error().fatal) return r;
        }
      }
    }
    return r;
  }
  rtsp::RtspResponse ask(std::uint64_t id, const std::string& text) {
    srv_->receive(id, bytes_of(text));
    Output o = take(id);
    EXPECT_EQ(o.responses.size(), 1u) << text;
    return o.responses.empty() ? rtsp::RtspResponse{} : o.responses.back();
  }
  // ANNOUNCE, SETUP (interleaved, mode=record), RECORD, as FFmpeg publishes.
  void publish(std::uint64_t id) {
    const std::string body(kSdp);
    const std::string q = "?secret=" + std::string(kSecret);
    ASSERT_EQ(ask(id, request_text("ANNOUNCE", url(q), 1,
                                   "Content-Type: application/sdp\r\nContent-Length: " +
                                       std::to_string(body.size()) + "\r\n") +
                          body)
                  .status,
              200);
    auto setup = ask(id, request_text("SETUP", url(q + "/streamid=0"), 2,
                                      "Transport: RTP/AVP/TCP;unicast;interleaved=0-1;"
                                      "mode=record\r\n"));
    ASSERT_EQ(setup.status, 200);
    ASSERT_EQ(
        ask(id, request_text("RECORD", url(q), 3, "Session: " + session_of(setup) + "\r\n")).status,
        200);
  }
  // The sample's video packets [from, to) as interleaved RTP on channel 0, numbered on from the
  // last one sent; `loop` > 0: its loop-th repetition, timestamps going on from the previous.
  void send_video(std::uint64_t id, std::size_t from, std::size_t to, std::uint32_t loop = 0) {
    const auto& file = *test::sample_media();
    std::string frames;
    for (std::size_t i = from; i < to && i < file.packets().size(); ++i) {
      const auto& p = file.packets()[i];
      if (p.stream != *file.video_stream()) continue;
      const auto payload = file.payload(p);
      const std::size_t n = 12 + payload.size();
      const std::uint16_t seq = sequence_++;
      const std::uint32_t ts =
          p.rtp_timestamp + loop * static_cast<std::uint32_t>(file.duration_us() * 9 / 100);
      const char rtp[12] = {'\x80',
                            static_cast<char>((p.marker ? 0x80 : 0) | 96),
                            static_cast<char>(seq >> 8),
                            static_cast<char>(seq),
                            static_cast<char>(ts >> 24),
                            static_cast<char>(ts >> 16),
                            static_cast<char>(ts >> 8),
                            static_cast<char>(ts),
                            0,
                            0,
                            0,
                            1};
      frames += {'$', '\0', static_cast<char>(n >> 8), static_cast<char>(n)};
      frames.append(rtp, 12);
      frames.append(reinterpret_cast<const char*>(payload.data()), payload.size());
    }
    // A socket's reads at most.
    constexpr std::size_t kRead = std::size_t{64} * 1024;
    for (std::size_t at = 0; at < frames.size(); at += kRead) {
      srv_->receive(id, bytes_of(std::string_view(frames).substr(at, kRead)));
    }
    (void)take(id);  // the publisher's own connection: RTCP from the server, if any
  }
  // DESCRIBE, SETUP with `transport`, PLAY; returns the session id.
  std::string watch(std::uint64_t id, const std::string& transport) {
    EXPECT_EQ(ask(id, request_text("DESCRIBE", url(), 1)).status, 200);
    auto setup =
        ask(id, request_text("SETUP", url("/trackID=0"), 2, "Transport: " + transport + "\r\n"));
    EXPECT_EQ(setup.status, 200) << setup.body;
    std::string session = session_of(setup);
    EXPECT_EQ(ask(id, request_text("PLAY", url(), 3, "Session: " + session + "\r\n")).status, 200);
    return session;
  }
  // Moves the clock in 50 ms steps over `us`, pacing at each.
  void run_for(std::uint64_t us) {
    for (std::uint64_t t = 0; t < us; t += 50'000) {
      clock_.advance_us(50'000);
      srv_->run_pacing();
    }
  }

  net::EventLoop loop_;
  test::FakeClock clock_;
  std::shared_ptr<server::LivePoint> point_;
  std::unique_ptr<server::StreamServer> srv_;
  std::map<std::uint64_t, std::unique_ptr<rtsp::RtspResponseParser>> parsers_;
  std::uint16_t sequence_ = 0;  // the publisher's next RTP sequence number
};

TEST_F(LiveViewers, AViewerLeavingMidBlockLeavesTheStreamAndTheOthersAlone) {
  const auto& file = *test::sample_media();
  ASSERT_GE(file.blocks().size(), 6u);
  const auto publisher = connect(44000);
  publish(publisher);
  // The sample's key frames are 1 s apart: its second one cut the first block; the third is
  // not whole yet, so the second block is in progress.
  send_video(publisher, 0, file.blocks()[2].first_packet + 5);
  auto source = point_->current();
  ASSERT_TRUE(source);
  ASSERT_EQ(source->stats().blocks, 1u);

  const auto closing = connect(44001);  // its TCP connection closes mid-block
  const auto staying = connect(44002);
  const auto udp = connect(44003);  // TEARDOWN of a UDP session mid-block
  const std::string tcp = "RTP/AVP/TCP;unicast;interleaved=0-1";
  (void)watch(closing, tcp);
  (void)watch(staying, tcp);
  const std::string udp_session = watch(udp, "RTP/AVP;unicast;client_port=45000-45001");
  const std::size_t sessions = srv_->session_count();

  run_for(400'000);  // into the block, not through it
  const Output a = take(closing);
  const Output b = take(staying);
  EXPECT_GT(a.rtp, 0u);
  EXPECT_GT(b.rtp, 0u);
  EXPECT_EQ(a.errors + b.errors, 0);

  srv_->detach_connection(closing);
  EXPECT_EQ(ask(udp, request_text("TEARDOWN", url(), 4, "Session: " + udp_session + "\r\n")).status,
            200);
  EXPECT_EQ(srv_->session_count(), sessions - 2) << "the two sessions, and only they, are gone";

  // The publisher goes on: the stream, and the viewer that stayed, with it.
  const std::uint64_t blocks_before = source->stats().blocks;
  std::size_t sent = file.blocks()[2].first_packet + 5;
  Output later;
  for (std::size_t k = 3; k < 6; ++k) {
    send_video(publisher, sent, file.blocks()[k].first_packet + 5);
    sent = file.blocks()[k].first_packet + 5;
    run_for(1'000'000);
    const Output o = take(staying);
    later.rtp += o.rtp;
    later.rtcp += o.rtcp;
    later.errors += o.errors;
  }
  EXPECT_EQ(source, point_->current()) << "the same publication";
  EXPECT_EQ(source->stats().blocks, blocks_before + 3);
  EXPECT_FALSE(source->stats().ended);
  EXPECT_GT(later.rtp, 100u) << "three blocks of media reached the viewer that stayed";
  EXPECT_EQ(later.errors, 0);
  EXPECT_TRUE(later.responses.empty());
  EXPECT_TRUE(srv_->connection_open(staying));
  EXPECT_TRUE(srv_->connection_open(publisher));
  EXPECT_EQ(srv_->session_count(), sessions - 2);
  EXPECT_EQ(srv_->stats().interleaved_frames_dropped, 0u);
}

// The bytes of the blocks `source` still holds (its ring), and how many there are.
std::pair<std::size_t, std::size_t> ring_of(const media::LiveSource& source) {
  std::size_t bytes = 0;
  std::size_t count = 0;
  const std::uint64_t published = source.stats().blocks;
  for (std::uint64_t seq = 0; seq < published; ++seq) {
    media::SourceBlock b;
    if (source.read(seq, b) != media::BlockState::kReady) continue;
    bytes += b.arena.size();
    ++count;
  }
  return {bytes, count};
}

// A publisher that sends far faster than real time (the sample looped 12 times, 72 s of media,
// at once: ffmpeg without -re): the source keeps its ring of blocks and no more (what it holds
// does not grow with what comes in), a viewer pacing in real time falls behind the ring, is
// counted (source_rejoins) and goes on at the newest key block, and its media keeps coming.
TEST_F(LiveViewers, APublisherFloodingFasterThanRealTimeCostsNoMemoryAndViewersRejoin) {
  const auto& file = *test::sample_media();
  const auto publisher = connect(44100);
  publish(publisher);
  send_video(publisher, 0, file.blocks()[2].first_packet + 5);
  auto source = point_->current();
  ASSERT_TRUE(source);
  const auto viewer = connect(44101);
  (void)watch(viewer, "RTP/AVP/TCP;unicast;interleaved=0-1");
  run_for(400'000);
  EXPECT_GT(take(viewer).rtp, 0u);

  // The flood: the rest of the sample, then whole loops of it, with no time passing.
  send_video(publisher, file.blocks()[2].first_packet + 5, file.packets().size());
  for (std::uint32_t loop = 1; loop < 3; ++loop) {
    send_video(publisher, 0, file.packets().size(), loop);
  }
  const auto [bytes_3, held_3] = ring_of(*source);
  for (std::uint32_t loop = 3; loop < 12; ++loop) {
    send_video(publisher, 0, file.packets().size(), loop);
  }
  const auto [bytes_12, held_12] = ring_of(*source);
  const auto st = source->stats();
  EXPECT_GE(st.blocks, 60u) << "every second of the flood became a block";
  EXPECT_EQ(held_12, source->options().ring_blocks);
  EXPECT_EQ(held_3, held_12);
  EXPECT_LE(bytes_12, bytes_3 + bytes_3 / 4) << "what the source holds does not grow";
  EXPECT_EQ(st.timestamp_resets, 0u);
  EXPECT_EQ(st.oversized, 0u);
  EXPECT_TRUE(srv_->connection_open(publisher));

  // The viewer was in block 0: it is gone from the ring. It rejoins, counted, and plays on.
  run_for(2'000'000);
  const Output o = take(viewer);
  EXPECT_GT(o.rtp, 30u);
  EXPECT_EQ(o.errors, 0);
  std::uint64_t rejoins = 0;
  for (const server::StreamSession* s : srv_->sessions()) {
    rejoins += s->stats().source_rejoins;
  }
  EXPECT_EQ(rejoins, 1u);
  EXPECT_TRUE(srv_->connection_open(viewer));
  std::printf(
      "flood: %llu blocks published, the ring %zu blocks of %zu bytes after 3 loops, "
      "%zu of %zu after 12; the viewer rejoined %llu time(s), %zu packets in 2 s\n",
      static_cast<unsigned long long>(st.blocks), held_3, bytes_3, held_12, bytes_12,
      static_cast<unsigned long long>(rejoins), o.rtp);
}

}  // namespace
}  // namespace predrop

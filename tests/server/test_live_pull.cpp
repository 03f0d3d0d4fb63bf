// LivePull (server/include/predrop/server/live_pull.hpp) against scripted upstreams on loopback:
// nothing listening, 404, an upstream that plays and then sends garbage and truncated
// interleaved frames, one that goes silent after PLAY, and on-demand start and stop by the
// references viewers hold. Real loop and clock; the back-off is shrunk to milliseconds so that
// nothing waits long (the schedule itself: test_pull_backoff.cpp).
#include "predrop/server/live_pull.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>

#include "predrop/net/tcp.hpp"
#include "predrop/rtsp/rtsp_message.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"

namespace predrop::server {
namespace {

// What ffmpeg 5.1 announces for an x264 clip; a predrop origin describes the same video.
constexpr std::string_view kSdp =
    "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=No Name\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
    "m=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\n"
    "a=fmtp:96 packetization-mode=1; "
    "sprop-parameter-sets=Z2QADazZQUH7ARAAAAMAEAAAAwMg8UKZYA==,aOvjyyLA; "
    "profile-level-id=64000D\r\na=control:streamid=0\r\n";

// After PLAY, what the upstream does.
enum class Media : std::uint8_t { kGarbage, kSilent, kRtp };

// One RTSP connection at a time: DESCRIBE (or 404), SETUP, PLAY, then its media.
class Upstream {
 public:
  Upstream(net::EventLoop& loop, int describe_status, Media media)
      : loop_(loop), status_(describe_status), media_(media) {
    auto l = net::TcpListener::listen(
        loop, net::SocketAddress::loopback_v4(0),
        [this](std::unique_ptr<net::TcpConnection> c) { on_accept(std::move(c)); });
    EXPECT_TRUE(l.ok());
    if (l.ok()) listener_ = std::move(l.value());
  }
  std::string url() const {
    return "rtsp://127.0.0.1:" + std::to_string(listener_->local_address().port()) + "/cam";
  }
  void shut() {
    conn_.reset();
    listener_.reset();
    timer_.reset();
  }
  int connections = 0;
  int plays = 0;

 private:
  void on_accept(std::unique_ptr<net::TcpConnection> c) {
    ++connections;
    conn_ = std::move(c);
    parser_ = rtsp::RtspRequestParser();
    (void)conn_->start([this](std::span<const std::uint8_t> d) { on_data(d); },
                       [this](const core::Status&) { conn_.reset(); });
  }
  void on_data(std::span<const std::uint8_t> d) {
    for (auto ev = parser_.feed(d); ev != rtsp::RtspParseEvent::kNeedMore; ev = parser_.next()) {
      if (ev != rtsp::RtspParseEvent::kMessage) continue;
      const rtsp::RtspRequest& req = parser_.request();
      rtsp::RtspResponse r = rtsp::make_response(200, req.cseq);
      if (req.method == rtsp::RtspMethod::kDescribe) {
        if (status_ != 200) {
          r = rtsp::make_response(status_, req.cseq);
        } else {
          r.headers.set("Content-Type", "application/sdp");
          r.headers.set("Content-Base", url() + "/");
          r.body = std::string(kSdp);
        }
      } else if (req.method == rtsp::RtspMethod::kSetup) {
        auto offers = rtsp::parse_transport(req.headers.get("Transport").value_or(""));
        EXPECT_TRUE(offers.ok());
        if (offers.ok()) r.headers.set("Transport", rtsp::format_transport(offers->front()));
        r.set_session("ABCDEF", 60);
      } else if (req.method == rtsp::RtspMethod::kPlay) {
        r.headers.set("Session", "ABCDEF");
        ++plays;
        (void)conn_->write(rtsp::serialize(r));
        start_media();
        continue;
      }
      (void)conn_->write(rtsp::serialize(r));
    }
  }
  void start_media() {
    if (media_ == Media::kSilent) return;
    timer_ = std::make_unique<net::Timer>(loop_, [this] { send_some(); });
    timer_->start(5, 5);
  }
  void send_some() {
    if (!conn_) return;
    std::string out;
    if (media_ == Media::kRtp) {
      // A valid RTP header around a payload the depacketizer calls malformed (type 0): it is
      // taken (counted as packets) and keeps the pull from stalling.
      const std::uint8_t p[] = {'$',
                                0,
                                0,
                                14,
                                0x80,
                                96,
                                static_cast<std::uint8_t>(seq_ >> 8),
                                static_cast<std::uint8_t>(seq_),
                                0,
                                0,
                                0,
                                1,
                                0,
                                0,
                                0,
                                1,
                                0,
                                0};
      ++seq_;
      out.assign(reinterpret_cast<const char*>(p), sizeof p);
    } else {
      // Garbage: frames on stray channels, frames that are no RTP, random bytes between them,
      // and then a frame that announces more than ever comes before the hang-up.
      for (int i = 0; i < 20; ++i) {
        const std::size_t n = rng_() % 300;
        out += '$';
        out += static_cast<char>(rng_() % 4);
        out += static_cast<char>(n >> 8);
        out += static_cast<char>(n & 0xff);
        for (std::size_t k = 0; k < n; ++k)
          out += static_cast<char>(rng_());
      }
      if (++rounds_ == 10) {
        out += std::string("$\0\x20\x00truncated", 13);
        (void)conn_->write(out);
        conn_->close_after_writes();
        conn_.reset();
        return;
      }
    }
    (void)conn_->write(out);
  }

  net::EventLoop& loop_;
  int status_;
  Media media_;
  std::unique_ptr<net::TcpListener> listener_;
  std::unique_ptr<net::TcpConnection> conn_;
  std::unique_ptr<net::Timer> timer_;
  rtsp::RtspRequestParser parser_;
  std::mt19937 rng_{11};
  std::uint16_t seq_ = 1;
  int rounds_ = 0;
};

struct Harness {
  net::EventLoop loop;
  net::MonotonicClock clock;
  CallbackGuard guard{"test"};
  std::shared_ptr<LivePoint> point;
  std::unique_ptr<LivePull> pull;
  std::unique_ptr<net::Timer> poll;
  std::unique_ptr<net::Timer> watchdog;

  explicit Harness(bool always) : always_(always) {
    watchdog = std::make_unique<net::Timer>(loop, [this] {
      ADD_FAILURE() << "watchdog: the condition never held; last error: "
                    << (pull ? pull->status().last_error : "");
      loop.stop();
    });
    watchdog->start(15'000);
  }
  // The stream pulled from `url`, started.
  void pull_from(const std::string& url) {
    LivePointSettings s;
    s.replace = true;
    PullSettings p;
    p.url = url;
    p.always = always_;
    p.linger_us = 300'000;
    p.stall_us = 300'000;
    p.request_timeout_ms = 1000;
    p.backoff = {1000, 8000, 0.25, 10'000'000};  // 1 ms doubling to 8 ms
    s.pull = p;
    point = std::make_shared<LivePoint>(s);
    pull = std::make_unique<LivePull>(loop, clock, guard, "cam", point);
    pull->start();
  }
  bool always_;
  // Runs the loop until `done` holds (looked at every 10 ms).
  void run_until(std::function<bool()> done) {
    poll = std::make_unique<net::Timer>(loop, [this, done] {
      if (done()) loop.stop();
    });
    poll->start(10, 10);
    loop.run();
    poll.reset();
  }
  void finish() {
    pull.reset();
    poll.reset();
    watchdog.reset();
    loop.run();  // the handles closed above
    EXPECT_TRUE(loop.close().ok());
  }
};

TEST(LivePull, NothingListeningIsRetriedWithBackOffNeverACrash) {
  std::string url;
  {
    net::EventLoop probe;
    auto l = net::TcpListener::listen(probe, net::SocketAddress::loopback_v4(0),
                                      [](std::unique_ptr<net::TcpConnection>) {});
    ASSERT_TRUE(l.ok());
    url = "rtsp://127.0.0.1:" + std::to_string((*l)->local_address().port()) + "/cam";
    auto listener = std::move(l.value());
    listener.reset();
    probe.run();
    (void)probe.close();
  }
  Harness h(true);
  h.pull_from(url);
  h.run_until([&] { return h.pull->status().failures >= 4; });
  const PullStatus st = h.pull->status();
  EXPECT_GE(st.attempts, 4u);
  EXPECT_EQ(st.plays, 0u);
  EXPECT_GE(st.failures_in_a_row, 4u);
  EXPECT_NE(st.last_error.find("connect"), std::string::npos) << st.last_error;
  EXPECT_EQ(h.point->current(), nullptr) << "nothing described: no source, DESCRIBE gets 404";
  h.finish();
}

TEST(LivePull, A404IsAFailureLikeAnyOther) {
  Harness h(true);
  Upstream up(h.loop, 404, Media::kSilent);
  h.pull_from(up.url());
  h.run_until([&] { return h.pull->status().failures >= 3; });
  EXPECT_NE(h.pull->status().last_error.find("404"), std::string::npos)
      << h.pull->status().last_error;
  EXPECT_GE(up.connections, 3);
  up.shut();
  h.finish();
}

TEST(LivePull, GarbageAndATruncatedFrameAreCountedThenItReconnects) {
  Harness h(true);
  Upstream up(h.loop, 200, Media::kGarbage);
  h.pull_from(up.url());
  h.run_until([&] { return h.pull->status().plays >= 2; });
  const PullStatus st = h.pull->status();
  EXPECT_GT(st.dropped, 100u) << "garbage frames are dropped and counted";
  EXPECT_GE(st.failures, 1u);
  EXPECT_EQ(st.new_sources, 1u) << "the same video again: the same source goes on";
  ASSERT_NE(h.point->current(), nullptr);
  up.shut();
  h.finish();
}

TEST(LivePull, AnUpstreamThatGoesSilentIsTakenForGone) {
  Harness h(true);
  Upstream up(h.loop, 200, Media::kSilent);
  h.pull_from(up.url());
  h.run_until([&] { return h.pull->status().stalls >= 2; });
  EXPECT_GE(h.pull->status().plays, 2u);
  EXPECT_NE(h.pull->status().last_error.find("no RTP"), std::string::npos);
  up.shut();
  h.finish();
}

TEST(LivePull, OnDemandDescribesThenPlaysWhileAViewerHoldsTheSource) {
  Harness h(false);
  Upstream up(h.loop, 200, Media::kRtp);
  h.pull_from(up.url());
  h.run_until([&] { return h.point->current() != nullptr && up.connections >= 1; });
  h.run_until([&] { return h.pull->status().state == PullState::kIdle; });
  EXPECT_EQ(up.plays, 0) << "described only";
  {
    const auto viewer = h.point->current();  // what a viewer's SETUP keeps
    h.run_until([&] { return h.pull->status().state == PullState::kPlaying; });
    h.run_until([&] { return h.pull->status().packets >= 20; });
  }
  h.run_until([&] { return h.pull->status().state == PullState::kIdle; });  // after the linger
  EXPECT_EQ(up.plays, 1);
  EXPECT_EQ(h.pull->status().failures, 0u);
  up.shut();
  h.finish();
}

}  // namespace
}  // namespace predrop::server

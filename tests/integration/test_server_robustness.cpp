// The streaming server against clients that misbehave at the media layer, on loopback with real
// sockets, real SRTP and one real libuv loop, on a FakeClock (time moves only when the test
// says so): a client that vanishes after PLAY (its session expires exactly after its timeout),
// and forged, replayed, truncated and garbage SRTCP on the feedback port (counted and
// ignored; the one valid report still reaches the controller). Also: a stream whose media file
// is not media fails at start-up with an error that names it.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fake_clock.hpp"
#include "predrop/chain/feedback.hpp"
#include "predrop/core/reception_meter.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/rtsp/rtsp_client.hpp"
#include "predrop/rtsp/rtsp_headers.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "predrop/server/server_setup.hpp"
#include "predrop/server/stream_server.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop {
namespace {

using rtsp::RtspMethod;

std::shared_ptr<const media::MediaFile> sample() {
  media::PacketizeOptions po;
  auto f = media::MediaFile::open(PREDROP_TEST_SAMPLE, po);
  EXPECT_TRUE(f.ok());
  return f.ok() ? f.value() : nullptr;
}

// Sets a session up by hand (DESCRIBE, SETUP of the video track with our own UDP ports, PLAY)
// so the test controls exactly what reaches the server's RTCP port afterwards.
class HandClient {
 public:
  HandClient(net::EventLoop& loop, const net::SocketAddress& server)
      : loop_(loop), server_(server) {}

  void start(std::function<void()> on_playing) {
    on_playing_ = std::move(on_playing);
    auto rtp = net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {},
                                      [this](auto, const auto&, auto) { ++media_packets_; });
    auto rtcp = net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {},
                                       [](auto, const auto&, auto) {});
    ASSERT_TRUE(rtp.ok() && rtcp.ok());
    rtp_ = std::move(rtp.value());
    rtcp_ = std::move(rtcp.value());
    auto c = rtsp::RtspClient::connect(loop_, server_, [this](const core::Status& st) {
      ASSERT_TRUE(st.ok());
      describe();
    });
    ASSERT_TRUE(c.ok());
    rtsp_ = std::move(c.value());
  }

  void describe() {
    url_ = "rtsp://" + server_.to_string() + "/sample";
    rtsp_->send(RtspMethod::kDescribe, url_, {}, [this](auto r) {
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(r->status, 200);
      auto sdp = rtsp::parse_sdp(r->body);
      ASSERT_TRUE(sdp.ok());
      const auto& crypto = sdp->media.at(0).crypto.at(0);
      suite_ = *wire::suite_from_name(crypto.suite);
      std::uint8_t buf[64];
      auto n = wire::base64_decode(crypto.inline_key(), buf);
      ASSERT_TRUE(n.ok());
      std::copy(buf, buf + *n, key_.bytes.begin());
      key_.size = *n;
      rtsp::RtspHeaders h;
      rtsp::TransportSpec spec;
      spec.protocol = "RTP/SAVP";
      spec.client_port =
          rtsp::PortPair{rtp_->local_address().port(), rtcp_->local_address().port()};
      h.set("Transport", rtsp::format_transport(spec));
      h.set("X-Predrop-Feedback", "1");
      rtsp_->send(RtspMethod::kSetup, url_ + "/trackID=0", h, [this](auto s) {
        ASSERT_TRUE(s.ok());
        ASSERT_EQ(s->status, 200);
        auto specs = rtsp::parse_transport(*s->headers.get("Transport"));
        ASSERT_TRUE(specs.ok());
        server_rtcp_port_ = (*specs)[0].server_port->rtcp;
        rtsp_->send(RtspMethod::kPlay, url_, {}, [this](auto p) {
          ASSERT_TRUE(p.ok());
          ASSERT_EQ(p->status, 200);
          if (on_playing_) on_playing_();
        });
      });
    });
  }

  // Sends one datagram to the server's RTCP port from our RTCP socket.
  void send_rtcp(std::span<const std::uint8_t> bytes) {
    rtcp_->send(bytes, net::SocketAddress::loopback_v4(server_rtcp_port_));
  }

  // A PDFB compound for `stage`, protected with `key` (the session's or another).
  std::vector<std::uint8_t> feedback(std::uint32_t stage, const wire::SrtpKeyMaterial& key,
                                     net::SrtpSession& srtp) {
    (void)key;
    core::StageMeasurement m;
    m.stage = stage;
    m.reception_period_us = 900'000;
    m.received = 100;
    m.announced = 100;
    auto fb = chain::make_feedback(m, 40.0, wire::PdfbMetric::kPsnrDb, 0);
    std::vector<std::uint8_t> out(256);
    auto n = chain::encode_feedback(out, 0x1234, fb, &srtp);
    EXPECT_TRUE(n.ok());
    out.resize(n.ok() ? *n : 0);
    return out;
  }

  void vanish() {
    rtsp_->close();
    rtp_->close();
    rtcp_->close();
  }

  net::EventLoop& loop_;
  net::SocketAddress server_;
  std::unique_ptr<rtsp::RtspClient> rtsp_;
  std::unique_ptr<net::UdpEndpoint> rtp_, rtcp_;
  std::function<void()> on_playing_;
  std::string url_;
  wire::SrtpSuite suite_ = wire::SrtpSuite::AesCm128HmacSha1_80;
  wire::SrtpKeyMaterial key_;
  std::uint16_t server_rtcp_port_ = 0;
  std::size_t media_packets_ = 0;
};

server::StreamServerOptions options() {
  server::StreamServerOptions o;
  o.rtsp_listen = net::SocketAddress::loopback_v4(0);
  o.bind_ip = "127.0.0.1";
  o.streams.push_back({"sample", sample()});
  o.policy.policy = "basic";
  o.session_timeout_s = 1;
  return o;
}

// Runs the loop until `done` (checked after every iteration) or until a 10 s real-time guard
// gives up, which only bounds a hang: no assertion depends on how long anything took.
bool run_until(net::EventLoop& loop, const std::function<bool()>& done) {
  bool gave_up = false;
  net::Timer guard(loop, [&] { gave_up = true; });
  guard.start(10'000);
  guard.keep_loop_alive(false);
  while (!done() && !gave_up)
    loop.run_once();
  return done();
}

// Sets a session up and plays it; false if the handshake failed.
bool play(net::EventLoop& loop, HandClient& c) {
  bool playing = false;
  c.start([&] { playing = true; });
  return run_until(loop, [&] { return playing; });
}

TEST(ServerRobustness, VanishedClientSessionExpires) {
  net::EventLoop loop;
  test::FakeClock clock;
  auto o = options();
  o.session_timeout_s = 5;
  server::StreamServer srv(loop, clock, o);
  srv.start();
  HandClient c(loop, srv.rtsp_address());
  ASSERT_TRUE(play(loop, c));
  ASSERT_EQ(srv.session_count(), 1u);
  c.vanish();  // no TEARDOWN, no RTCP, no keep-alive: gone
  // The last sign of life was the PLAY, at the clock's current time.
  clock.advance_us(5'000'000);
  srv.run_housekeeping();
  EXPECT_EQ(srv.session_count(), 1u) << "expired before its timeout had passed";
  EXPECT_EQ(srv.stats().sessions_timed_out, 0u);
  clock.advance_us(1);
  srv.run_housekeeping();
  EXPECT_EQ(srv.session_count(), 0u) << "the session of a vanished client never expired";
  EXPECT_EQ(srv.stats().sessions_timed_out, 1u);
  srv.stop();
  loop.run_nowait();
}

TEST(ServerRobustness, ForgedReplayedTruncatedAndGarbageSrtcpAreCountedAndIgnored) {
  net::EventLoop loop;
  test::FakeClock clock;
  auto o = options();
  o.session_timeout_s = 30;
  server::StreamServer srv(loop, clock, o);
  srv.start();
  HandClient c(loop, srv.rtsp_address());
  ASSERT_TRUE(play(loop, c));
  // The first packets of block 0 are due at PLAY time.
  srv.run_pacing();
  net::SrtpSession good(net::SrtpDirection::Outbound, c.suite_, c.key_);
  const auto other_key = net::random_srtp_key(c.suite_);
  net::SrtpSession forged(net::SrtpDirection::Outbound, c.suite_, other_key);
  const auto valid = c.feedback(0, c.key_, good);
  const auto wrong_key = c.feedback(0, other_key, forged);
  std::vector<std::uint8_t> truncated(valid.begin(), valid.begin() + 20);
  const std::vector<std::uint8_t> garbage(64, 0x5a);
  c.send_rtcp(wrong_key);
  c.send_rtcp(garbage);
  c.send_rtcp(truncated);
  c.send_rtcp(valid);
  c.send_rtcp(valid);  // replayed

  // Once the five datagrams are in, a timer callback takes the session's counters; the
  // assertions run after the loop, and the test fails if the callback never ran.
  bool peeked = false;
  server::SessionStats seen;
  double rate = -1;
  net::Timer peek(loop, [&] {
    const auto sessions = srv.sessions();
    if (sessions.size() != 1 ||
        sessions[0]->stats().rtcp_errors + sessions[0]->stats().reports < 5) {
      return;
    }
    peek.stop();
    seen = sessions[0]->stats();
    rate = sessions[0]->controller().rate();
    peeked = true;
  });
  peek.start(1, 1);
  run_until(loop, [&] { return peeked; });
  ASSERT_TRUE(peeked) << "the five datagrams never all reached the session";
  EXPECT_EQ(seen.reports, 1u) << "only the valid report counts";
  EXPECT_EQ(seen.rtcp_errors, 4u) << "wrong key, garbage, truncated, replay";
  EXPECT_DOUBLE_EQ(rate, 0.05) << "R = Rp after stage 0's report";

  // The session kept streaming meanwhile: the rest of block 0 goes out as the clock moves on.
  const auto sent_before = srv.sessions()[0]->transmitter_stats().packets_sent;
  srv.run_pacing();
  EXPECT_EQ(srv.sessions()[0]->transmitter_stats().packets_sent, sent_before)
      << "the pacer sent packets the server's clock did not make due";
  clock.advance_ms(200);
  srv.run_pacing();
  const auto sent_after = srv.sessions()[0]->transmitter_stats().packets_sent;
  EXPECT_GT(sent_after, sent_before) << "no media after the forged datagrams";
  EXPECT_TRUE(run_until(loop, [&] { return c.media_packets_ >= sent_after; }))
      << "sent " << sent_after << ", received " << c.media_packets_;
  srv.stop();
  c.vanish();
  loop.run_nowait();
}

TEST(ServerRobustness, NonMediaFileFailsAtStartupNamingTheStream) {
  const std::string path = std::string(PREDROP_TEST_TMP) + "/not-media.mp4";
  {
    std::ofstream f(path);
    f << "this is not an mp4 file\n";
  }
  config::ServerConfig cfg;
  cfg.server.streams.push_back({"broken", path});
  auto o = server::make_stream_options(cfg, server::CliOverrides{});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message.find("broken"), std::string::npos) << o.error().message;
  EXPECT_NE(o.error().message.find(path), std::string::npos) << o.error().message;
}

}  // namespace
}  // namespace predrop

// No exception escapes a server callback (issue 10 item 7): with a test hook that makes a handler
// throw (StreamServerOptions::fault_injection, a throwing metrics renderer), each callback kind
// -- an RTSP request, an RTCP datagram, the pacing timer, a metrics request -- is caught at its
// boundary, counted in predrop_callback_exceptions_total{kind=...}, and costs only the offending
// connection or session; the process and every other client go on. Real loopback sockets, a
// FakeClock for the pacing.
#include <gtest/gtest.h>

#include <array>
#include <stdexcept>
#include <string>

#include "fake_clock.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/server/metrics_endpoint.hpp"
#include "predrop/server/server_setup.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

using server::CallbackKind;
using test::request_text;
using test::session_of;

class CallbackBoundary : public ::testing::Test {
 protected:
  void SetUp() override {
    auto o = test::loopback_options();
    // Throws once each time a kind is armed.
    o.fault_injection = [this](CallbackKind k) {
      bool& a = armed_[static_cast<std::size_t>(k)];
      if (a) {
        a = false;
        throw std::runtime_error("injected fault");
      }
    };
    srv_ = std::make_unique<server::StreamServer>(loop_, clock_, o);
    srv_->start();
    url_ = "rtsp://127.0.0.1:" + std::to_string(srv_->rtsp_address().port()) + "/sample";
  }
  void TearDown() override {
    srv_->stop();
    srv_.reset();
    loop_.run_nowait();
  }
  void arm(CallbackKind k) { armed_[static_cast<std::size_t>(k)] = true; }
  std::uint64_t caught(CallbackKind k) const { return srv_->callback_guard().count(k); }
  int status(const std::optional<rtsp::RtspResponse>& r) { return r ? r->status : -1; }

  // A playing session whose client ports are two fresh UDP sockets (the RTCP one can send as
  // the client). Returns the session id.
  struct Player {
    std::unique_ptr<test::PosixRtspPeer> rtsp;
    std::unique_ptr<net::UdpEndpoint> rtp, rtcp;
    std::string id;
  };
  Player play() {
    Player p;
    p.rtp = std::move(net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {},
                                             [](auto, const auto&, auto) {})
                          .value());
    p.rtcp = std::move(net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {},
                                              [](auto, const auto&, auto) {})
                           .value());
    p.rtsp = std::make_unique<test::PosixRtspPeer>(loop_, srv_->rtsp_address());
    EXPECT_EQ(status(p.rtsp->request(request_text("DESCRIBE", url_, 1))), 200);
    auto s = p.rtsp->request(request_text(
        "SETUP", url_ + "/trackID=0", 2,
        "Transport: RTP/SAVP;unicast;client_port=" + std::to_string(p.rtp->local_address().port()) +
            "-" + std::to_string(p.rtcp->local_address().port()) + "\r\n"));
    EXPECT_EQ(status(s), 200);
    p.id = s ? session_of(*s) : "";
    EXPECT_EQ(status(p.rtsp->request(request_text("PLAY", url_, 3, "Session: " + p.id + "\r\n"))),
              200);
    return p;
  }

  net::EventLoop loop_;
  test::FakeClock clock_;
  std::array<bool, server::kCallbackKinds> armed_{};
  std::unique_ptr<server::StreamServer> srv_;
  std::string url_;
};

TEST_F(CallbackBoundary, ThrowingRtspHandlerClosesOnlyItsConnection) {
  test::PosixRtspPeer a(loop_, srv_->rtsp_address());
  test::PosixRtspPeer b(loop_, srv_->rtsp_address());
  ASSERT_EQ(status(a.request(request_text("DESCRIBE", url_, 1))), 200);
  auto setup = a.request(request_text("SETUP", url_ + "/trackID=0", 2,
                                      "Transport: RTP/SAVP;unicast;client_port=47800-47801\r\n"));
  ASSERT_EQ(status(setup), 200);
  ASSERT_EQ(status(b.request(request_text("OPTIONS", url_, 1))), 200);

  arm(CallbackKind::kRtsp);
  EXPECT_FALSE(a.request(request_text("OPTIONS", url_, 3)).has_value()) << "no reply expected";
  EXPECT_TRUE(a.wait_closed());
  EXPECT_EQ(caught(CallbackKind::kRtsp), 1u);
  EXPECT_EQ(srv_->stats().connections_closed_by_exception, 1u);

  // Everyone else goes on, and the session set up on the closed connection too.
  EXPECT_EQ(status(b.request(request_text("OPTIONS", url_, 2))), 200);
  test::PosixRtspPeer c(loop_, srv_->rtsp_address());
  EXPECT_EQ(
      status(c.request(request_text("PLAY", url_, 1, "Session: " + session_of(*setup) + "\r\n"))),
      200);
  EXPECT_NE(
      server::render_metrics(*srv_).find("predrop_callback_exceptions_total{kind=\"rtsp\"} 1"),
      std::string::npos);
}

TEST_F(CallbackBoundary, ThrowingRtcpHandlerEndsOnlyThatSession) {
  Player one = play();
  Player two = play();
  ASSERT_EQ(srv_->sessions().size(), 2u);
  const std::array<std::uint8_t, 8> junk{0x80, 0xc9, 0, 1, 1, 2, 3, 4};
  const auto server_rtcp = net::SocketAddress::loopback_v4(srv_->rtp_port() + 1);

  arm(CallbackKind::kRtcp);
  one.rtcp->send(junk, server_rtcp);
  ASSERT_TRUE(test::pump_until(loop_, [&] { return caught(CallbackKind::kRtcp) == 1; }));
  ASSERT_EQ(srv_->sessions().size(), 1u);
  EXPECT_EQ(srv_->stats().sessions_closed_by_exception, 1u);
  EXPECT_EQ(status(two.rtsp->request(
                request_text("GET_PARAMETER", url_, 9, "Session: " + two.id + "\r\n"))),
            200);
  EXPECT_EQ(status(one.rtsp->request(
                request_text("GET_PARAMETER", url_, 9, "Session: " + one.id + "\r\n"))),
            454)
      << "the session whose handler threw is gone";
  // The other session still hears its client.
  two.rtcp->send(junk, server_rtcp);
  ASSERT_TRUE(
      test::pump_until(loop_, [&] { return srv_->sessions()[0]->stats().rtcp_errors == 1; }));
  EXPECT_EQ(caught(CallbackKind::kRtcp), 1u);
}

TEST_F(CallbackBoundary, ThrowingPacingEndsOnlyThatSession) {
  Player one = play();
  Player two = play();
  ASSERT_EQ(srv_->sessions().size(), 2u);
  // The pacer visits only sessions that are due: move time on so that both are.
  clock_.advance_ms(300);
  arm(CallbackKind::kTimer);
  srv_->run_pacing();
  EXPECT_EQ(caught(CallbackKind::kTimer), 1u);
  ASSERT_EQ(srv_->sessions().size(), 1u);
  EXPECT_EQ(srv_->stats().sessions_closed_by_exception, 1u);
  // The survivor is paced on.
  const auto before = srv_->sessions()[0]->transmitter_stats().packets_sent;
  clock_.advance_ms(300);
  srv_->run_pacing();
  EXPECT_GT(srv_->sessions()[0]->transmitter_stats().packets_sent, before);
  EXPECT_EQ(caught(CallbackKind::kTimer), 1u);
}

TEST_F(CallbackBoundary, ThrowingMetricsRendererAnswers500AndGoesOn) {
  int calls = 0;
  server::MetricsEndpoint endpoint(loop_, net::SocketAddress::loopback_v4(0), [&] {
    if (++calls == 1) throw std::runtime_error("injected render fault");
    return std::string("up 1\n");
  });
  test::PosixRtspPeer first(loop_, endpoint.address());
  ASSERT_TRUE(first.send("GET /metrics HTTP/1.0\r\n\r\n"));
  EXPECT_TRUE(first.wait_closed());
  EXPECT_EQ(first.received().rfind("HTTP/1.0 500", 0), 0u) << first.received();
  test::PosixRtspPeer second(loop_, endpoint.address());
  ASSERT_TRUE(second.send("GET /metrics HTTP/1.0\r\n\r\n"));
  EXPECT_TRUE(second.wait_closed());
  EXPECT_EQ(second.received().rfind("HTTP/1.0 200", 0), 0u) << second.received();
  EXPECT_EQ(endpoint.callback_guard().count(CallbackKind::kMetrics), 1u);
  const std::string text = server::render_metrics(*srv_, {&endpoint});
  EXPECT_NE(text.find("predrop_callback_exceptions_total{kind=\"metrics\"} 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("predrop_callback_exceptions_total{kind=\"timer\"} 0"), std::string::npos);
}

}  // namespace
}  // namespace predrop

// Resource limits of the stream server (issue 10 item 5), over real loopback sockets: a client
// that sends DESCRIBE in a loop and never reads is first no longer answered, then closed once
// its backlog passes the bound (counted), while others are served; one client address cannot
// hold more than max_sessions_per_address sessions (453; the key is read from the config); a
// SETUP/TEARDOWN loop on one connection does not grow what the connection tracks, and a
// connection whose sessions ended or expired is idle-timed like any other (FakeClock).
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <string>

#include "fake_clock.hpp"
#include "predrop/config/config.hpp"
#include "predrop/server/server_setup.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

using test::request_text;
using test::session_of;

class ResourceLimits : public ::testing::Test {
 protected:
  void start(server::StreamServerOptions o) {
    srv_ = std::make_unique<server::StreamServer>(loop_, clock_, std::move(o));
    srv_->start();
    url_ = "rtsp://127.0.0.1:" + std::to_string(srv_->rtsp_address().port()) + "/sample";
  }
  void TearDown() override {
    if (srv_) srv_->stop();
    srv_.reset();
    loop_.run_nowait();
  }
  int status(const std::optional<rtsp::RtspResponse>& r) { return r ? r->status : -1; }
  std::optional<rtsp::RtspResponse> setup(test::PosixRtspPeer& p, std::uint16_t port,
                                          std::string extra = {}) {
    return p.request(
        request_text("SETUP", url_ + "/trackID=0", cseq_++,
                     extra + "Transport: RTP/SAVP;unicast;client_port=" + std::to_string(port) +
                         "-" + std::to_string(port + 1) + "\r\n"));
  }

  net::EventLoop loop_;
  test::FakeClock clock_;
  std::unique_ptr<server::StreamServer> srv_;
  std::string url_;
  std::uint32_t cseq_ = 1;
};

TEST_F(ResourceLimits, ClientThatNeverReadsIsPausedThenClosed) {
  auto o = test::loopback_options();
  o.max_write_queue_bytes = 64 * 1024;
  start(o);
  test::PosixRtspPeer flood(loop_, srv_->rtsp_address());
  // A small receive window, so that the kernel buffers between us fill early.
  const int small = 4096;
  ::setsockopt(flood.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  std::string batch;
  for (int i = 0; i < 64; ++i)
    batch += request_text("DESCRIBE", url_, static_cast<std::uint32_t>(i + 1));
  // Send DESCRIBEs and never read, until the server gives up on the connection. The bound on
  // rounds is far above what the kernel buffers and the 64 KiB bound can take.
  std::size_t sent = 0;
  for (int round = 0; round < 20'000 && srv_->stats().connections_closed_backlog == 0; ++round) {
    const ssize_t n = ::send(flood.fd(), batch.data(), batch.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) sent += static_cast<std::size_t>(n) / (batch.size() / 64);
    loop_.run_nowait();
  }
  ASSERT_EQ(srv_->stats().connections_closed_backlog, 1u);
  EXPECT_EQ(srv_->stats().connections_paused, 1u) << "closed without first stopping to answer";
  // Before the close it had stopped answering: fewer requests handled than were sent.
  EXPECT_LT(srv_->stats().requests, sent);
  EXPECT_EQ(srv_->connection_count(), 0u);
  // Everyone else is still served.
  test::PosixRtspPeer other(loop_, srv_->rtsp_address());
  EXPECT_EQ(status(other.request(request_text("OPTIONS", url_, 1))), 200);
  EXPECT_NE(server::render_metrics(*srv_).find("predrop_connections_closed_backlog_total 1"),
            std::string::npos);
}

TEST_F(ResourceLimits, PipelinedRequestsOfAReadingClientAreAllAnswered) {
  // Pausing must not lose requests: a client that sends many at once and only then reads gets
  // an answer to each, in order, though the server stopped answering it meanwhile.
  auto o = test::loopback_options();
  start(o);  // the default bound, 1 MiB
  test::PosixRtspPeer p(loop_, srv_->rtsp_address());
  // A receive buffer of a few segments: the kernel holds less, yet reads stay fast.
  const int rcvbuf = 256 * 1024;
  ::setsockopt(p.fd(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  std::string batch;
  // More replies than the kernel buffers between us hold (a few MB on loopback: the server's
  // send buffer grows to net.ipv4.tcp_wmem's maximum), with the requests inside the bound.
  constexpr std::uint32_t kRequests = 10000;
  for (std::uint32_t i = 1; i <= kRequests; ++i)
    batch += request_text("DESCRIBE", url_, i);
  ASSERT_TRUE(p.send(batch));
  ASSERT_TRUE(test::pump_until(loop_, [&] { return srv_->stats().connections_paused > 0; }))
      << "the server answered " << srv_->stats().requests << " without stopping";
  EXPECT_LT(srv_->stats().requests, kRequests);
  for (std::uint32_t i = 1; i <= kRequests; ++i) {
    auto r = p.next_response();
    ASSERT_EQ(status(r), 200) << i;
    ASSERT_EQ(r->cseq(), i);
  }
  EXPECT_EQ(srv_->stats().connections_closed_backlog, 0u);
  EXPECT_EQ(srv_->stats().requests, kRequests);
}

TEST_F(ResourceLimits, SessionsPerAddressAreCapped) {
  auto o = test::loopback_options();
  o.max_sessions_per_address = 2;
  start(o);
  test::PosixRtspPeer a(loop_, srv_->rtsp_address(), "127.0.0.1");
  ASSERT_EQ(status(a.request(request_text("DESCRIBE", url_, cseq_++))), 200);
  auto first = setup(a, 47500);
  ASSERT_EQ(status(first), 200);
  ASSERT_EQ(status(setup(a, 47502)), 200);
  EXPECT_EQ(status(setup(a, 47504)), 453) << "a third session from one address";
  EXPECT_EQ(srv_->stats().sessions_refused_per_address, 1u);
  // Another address has its own allowance.
  test::PosixRtspPeer b(loop_, srv_->rtsp_address(), "127.0.0.2");
  ASSERT_EQ(status(b.request(request_text("DESCRIBE", url_, cseq_++))), 200);
  EXPECT_EQ(status(setup(b, 47506)), 200);
  // A TEARDOWN frees one.
  ASSERT_EQ(status(a.request(request_text("TEARDOWN", url_, cseq_++,
                                          "Session: " + session_of(*first) + "\r\n"))),
            200);
  EXPECT_EQ(status(setup(a, 47508)), 200);
}

TEST_F(ResourceLimits, SessionsPerAddressComeFromTheConfig) {
  const std::string streams =
      std::string("[server.streams]\nsample = \"") + PREDROP_TEST_SAMPLE + "\"\n";
  auto cfg =
      config::parse_config("[server]\nmax_sessions_per_address = 3\n" + streams, "test.toml");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->server.max_sessions_per_address, 3u);
  EXPECT_EQ(config::ServerConfig{}.server.max_sessions_per_address, 16u) << "default";
  auto zero =
      config::parse_config("[server]\nmax_sessions_per_address = 0\n" + streams, "test.toml");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("max_sessions_per_address"), std::string::npos);
  const config::ServerConfig& c = *cfg;
  auto o = server::make_stream_options(c, {});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->max_sessions_per_address, 3u);
}

TEST_F(ResourceLimits, SetupTeardownLoopDoesNotGrowTheConnection) {
  auto o = test::loopback_options();
  o.rtsp_idle_timeout_s = 5;
  o.session_timeout_s = 60;
  start(o);
  test::PosixRtspPeer p(loop_, srv_->rtsp_address());
  ASSERT_EQ(status(p.request(request_text("DESCRIBE", url_, cseq_++))), 200);
  for (int i = 0; i < 50; ++i) {
    auto r = setup(p, 47600);
    ASSERT_EQ(status(r), 200) << i;
    ASSERT_EQ(srv_->connection_session_refs(), 1u);
    ASSERT_EQ(status(p.request(
                  request_text("TEARDOWN", url_, cseq_++, "Session: " + session_of(*r) + "\r\n"))),
              200);
    ASSERT_EQ(srv_->connection_session_refs(), 0u) << "after " << i + 1 << " TEARDOWNs";
  }
  // Without a session it is a plain connection again: the 5 s idle limit applies, not the
  // session's 70 s.
  clock_.advance_us(5'000'001);
  srv_->run_housekeeping();
  EXPECT_TRUE(p.wait_closed());
  EXPECT_EQ(srv_->stats().connections_timed_out, 1u);
}

TEST_F(ResourceLimits, ExpiredSessionLeavesItsConnection) {
  auto o = test::loopback_options();
  o.rtsp_idle_timeout_s = 30;
  o.session_timeout_s = 10;
  start(o);
  test::PosixRtspPeer p(loop_, srv_->rtsp_address());
  ASSERT_EQ(status(p.request(request_text("DESCRIBE", url_, cseq_++))), 200);
  ASSERT_EQ(status(setup(p, 47700)), 200);
  ASSERT_EQ(srv_->connection_session_refs(), 1u);
  // The session expires after 10 s; its connection, quiet too, keeps the session's longer limit
  // until then and the plain 30 s limit from its last request.
  clock_.advance_us(10'000'001);
  srv_->run_housekeeping();
  EXPECT_EQ(srv_->session_count(), 0u);
  EXPECT_EQ(srv_->connection_session_refs(), 0u);
  EXPECT_EQ(srv_->connection_count(), 1u);
  clock_.advance_us(20'000'000);
  srv_->run_housekeeping();
  EXPECT_TRUE(p.wait_closed());
}

}  // namespace
}  // namespace predrop

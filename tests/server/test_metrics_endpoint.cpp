// The Prometheus endpoint's limits (issue 10 item 5), over real loopback sockets on a FakeClock:
// a request head that arrives in pieces is answered; the request deadline runs from the accept
// and does not restart when a byte arrives; connections past the cap are closed at accept; a
// head longer than the bound gets 431; the endpoint's counters appear in /metrics.
#include <gtest/gtest.h>

#include <string>

#include "fake_clock.hpp"
#include "predrop/server/metrics_endpoint.hpp"
#include "predrop/server/server_setup.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

class MetricsLimits : public ::testing::Test {
 protected:
  MetricsLimits() : spin_(loop_, [] {}) {
    // Keeps run_once() returning while a test waits for bytes (no clock is read from it).
    spin_.start(1, 1);
  }
  ~MetricsLimits() override {
    spin_.stop();
    endpoint_.reset();
    loop_.run_nowait();
  }
  void start(server::MetricsEndpointOptions o) {
    endpoint_ = std::make_unique<server::MetricsEndpoint>(
        loop_, net::SocketAddress::loopback_v4(0), [] { return std::string("up 1\n"); }, o, clock_);
  }
  bool accepted(std::uint64_t n) {
    return test::pump_until(
        loop_, [&] { return endpoint_->stats().accepted + endpoint_->stats().refused >= n; });
  }

  bool received(std::uint64_t bytes) {
    return test::pump_until(loop_, [&] { return endpoint_->stats().bytes_received >= bytes; });
  }

  net::EventLoop loop_;
  net::Timer spin_;
  test::FakeClock clock_;
  std::unique_ptr<server::MetricsEndpoint> endpoint_;
};

TEST_F(MetricsLimits, HeadInPiecesIsAnswered) {
  start({});
  test::PosixRtspPeer p(loop_, endpoint_->address());
  ASSERT_TRUE(accepted(1));
  const std::string first = "GET /metrics HTTP/1.0\r\n";
  ASSERT_TRUE(p.send(first));
  ASSERT_TRUE(received(first.size()));  // the first piece is read on its own
  ASSERT_TRUE(p.send("Host: x\r\n\r\n"));
  ASSERT_TRUE(p.wait_closed());
  EXPECT_EQ(p.received().rfind("HTTP/1.0 200 OK", 0), 0u) << p.received();
  EXPECT_NE(p.received().find("up 1"), std::string::npos);
}

TEST_F(MetricsLimits, DeadlineDoesNotRestartOnEveryByte) {
  server::MetricsEndpointOptions o;
  o.request_deadline_us = 5'000'000;
  start(o);
  test::PosixRtspPeer p(loop_, endpoint_->address());
  ASSERT_TRUE(accepted(1));
  const std::string head = "GET /metrics HTTP/1.0\r\nX: ";
  std::size_t sent = 0;
  // One byte a second: never idle for long, but the head is not complete after 5 s.
  for (int s = 0; s < 5; ++s) {
    ASSERT_TRUE(p.send(head.substr(sent++, 1)));
    ASSERT_TRUE(received(sent));
    clock_.advance_us(1'000'000);
    endpoint_->run_housekeeping();
    ASSERT_FALSE(p.server_closed()) << "closed before the deadline, after " << s + 1 << " s";
  }
  ASSERT_TRUE(p.send(head.substr(sent++, 1)));
  ASSERT_TRUE(received(sent));
  clock_.advance_us(1);
  endpoint_->run_housekeeping();
  EXPECT_TRUE(p.wait_closed());
  EXPECT_EQ(p.received(), "");
  EXPECT_EQ(endpoint_->stats().timed_out, 1u);
}

TEST_F(MetricsLimits, ConnectionsPastTheCapAreClosedAtAccept) {
  server::MetricsEndpointOptions o;
  o.max_connections = 2;
  start(o);
  test::PosixRtspPeer a(loop_, endpoint_->address());
  test::PosixRtspPeer b(loop_, endpoint_->address());
  ASSERT_TRUE(accepted(2));
  test::PosixRtspPeer c(loop_, endpoint_->address());
  ASSERT_TRUE(accepted(3));
  EXPECT_TRUE(c.wait_closed());
  EXPECT_EQ(endpoint_->stats().refused, 1u);
  EXPECT_EQ(endpoint_->connection_count(), 2u);
  // The ones inside the cap are still served, and a place frees once one is done.
  ASSERT_TRUE(a.send("GET / HTTP/1.0\r\n\r\n"));
  EXPECT_TRUE(a.wait_closed());
  EXPECT_NE(a.received().find("200 OK"), std::string::npos);
  test::PosixRtspPeer d(loop_, endpoint_->address());
  ASSERT_TRUE(accepted(4));
  ASSERT_TRUE(d.send("GET / HTTP/1.0\r\n\r\n"));
  EXPECT_TRUE(d.wait_closed());
  EXPECT_NE(d.received().find("200 OK"), std::string::npos);
  EXPECT_EQ(endpoint_->stats().refused, 1u);
}

TEST_F(MetricsLimits, OversizedHeadGets431) {
  server::MetricsEndpointOptions o;
  o.max_request_bytes = 1024;
  start(o);
  test::PosixRtspPeer p(loop_, endpoint_->address());
  ASSERT_TRUE(p.send("GET / HTTP/1.0\r\nX: " + std::string(2000, 'a')));
  EXPECT_TRUE(p.wait_closed());
  EXPECT_EQ(p.received().rfind("HTTP/1.0 431", 0), 0u) << p.received();
  EXPECT_EQ(endpoint_->stats().oversized, 1u);
}

TEST_F(MetricsLimits, EndpointCountersAreExported) {
  server::MetricsEndpointOptions o;
  o.max_connections = 1;
  start(o);
  test::PosixRtspPeer a(loop_, endpoint_->address());
  ASSERT_TRUE(accepted(1));
  test::PosixRtspPeer b(loop_, endpoint_->address());
  ASSERT_TRUE(accepted(2));
  server::StreamServer srv(loop_, test::loopback_options());
  const std::string text = server::render_metrics(srv, {endpoint_.get()});
  EXPECT_NE(text.find("predrop_metrics_connections_refused_total 1"), std::string::npos) << text;
  EXPECT_NE(text.find("predrop_metrics_requests_timed_out_total 0"), std::string::npos);
}

TEST(MetricsRequest, RequestLineIsParsed) {
  using server::parse_metrics_request;
  EXPECT_EQ(parse_metrics_request("GET /metrics HTTP/1.0\r\nHost: x\r\n").status, 200);
  EXPECT_EQ(parse_metrics_request("\r\nGET / HTTP/1.1").status, 200) << "leading empty line";
  EXPECT_TRUE(parse_metrics_request("HEAD /metrics HTTP/1.1").head_only);
  EXPECT_EQ(parse_metrics_request("POST /metrics HTTP/1.1").status, 405);
  EXPECT_EQ(parse_metrics_request("GET /metrics HTTP/2.0").status, 505);
  EXPECT_EQ(parse_metrics_request("GET /metrics").status, 400);
  EXPECT_EQ(parse_metrics_request("GET  /metrics HTTP/1.1").status, 400);
  EXPECT_EQ(parse_metrics_request("G(T /metrics HTTP/1.1").status, 400);
  EXPECT_EQ(parse_metrics_request("GET /a\x01b HTTP/1.1").status, 400);
  EXPECT_EQ(parse_metrics_request("").status, 400);
}

TEST_F(MetricsLimits, HeadAndOtherMethods) {
  start({});
  test::PosixRtspPeer head(loop_, endpoint_->address());
  ASSERT_TRUE(head.send("HEAD /metrics HTTP/1.1\r\n\r\n"));
  EXPECT_TRUE(head.wait_closed());
  EXPECT_EQ(head.received().rfind("HTTP/1.0 200", 0), 0u) << head.received();
  EXPECT_EQ(head.received().find("up 1"), std::string::npos) << "HEAD got a body";
  test::PosixRtspPeer post(loop_, endpoint_->address());
  ASSERT_TRUE(post.send("POST /metrics HTTP/1.1\r\n\r\n"));
  EXPECT_TRUE(post.wait_closed());
  EXPECT_EQ(post.received().rfind("HTTP/1.0 405", 0), 0u) << post.received();
}

TEST_F(MetricsLimits, AttachedConnectionsTakeTheSamePath) {
  server::MetricsEndpointOptions o;
  o.max_connections = 1;
  start(o);
  const std::uint64_t id = endpoint_->attach_connection();
  ASSERT_NE(id, 0u);
  EXPECT_EQ(endpoint_->attach_connection(), 0u) << "over the cap";
  const std::string req = "GET /metrics HTTP/1.0\r\n\r\n";
  endpoint_->receive(id, std::span(reinterpret_cast<const std::uint8_t*>(req.data()), req.size()));
  EXPECT_EQ(endpoint_->take_output(id).rfind("HTTP/1.0 200", 0), 0u);
  EXPECT_FALSE(endpoint_->connection_open(id));
}

}  // namespace
}  // namespace predrop

// The status page unit (server/src/status_page.cpp) and its place on the metrics endpoint: the
// page at / and /status (query and trailing slash ignored) for GET and HEAD, as HTML with a
// restrictive Content-Security-Policy; every other path still gets the metrics. The page in a
// real browser: tests/integration/status_page.sh (headless Chromium).
#include <gtest/gtest.h>

#include <span>
#include <string>

#include "predrop/net/event_loop.hpp"
#include "predrop/server/status_page.hpp"

namespace predrop {
namespace {

using server::HttpRequest;
using server::serve_status_page;

TEST(StatusPage, ServesThePageAtRootAndStatus) {
  for (const char* target : {"/", "/status", "/status/", "/status?interval_ms=500", "/?x"}) {
    const auto r = serve_status_page(HttpRequest{"GET", target, ""});
    ASSERT_TRUE(r) << target;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->content_type, "text/html; charset=utf-8");
    EXPECT_EQ(r->body.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_NE(r->body.find("/api/v1/sessions"), std::string::npos) << "it reads the API";
    EXPECT_NE(r->headers.find("Content-Security-Policy: default-src 'none'"), std::string::npos);
    EXPECT_NE(r->headers.find("connect-src 'self'"), std::string::npos);
  }
  EXPECT_TRUE(serve_status_page(HttpRequest{"HEAD", "/status", ""}));
}

TEST(StatusPage, LeavesEveryOtherRequestToTheMetrics) {
  for (const char* target : {"/metrics", "/statusx", "/status/x", "/api/v1/sessions", ""}) {
    EXPECT_FALSE(serve_status_page(HttpRequest{"GET", target, ""})) << target;
  }
  EXPECT_FALSE(serve_status_page(HttpRequest{"POST", "/status", ""}));
  EXPECT_FALSE(serve_status_page(HttpRequest{"DELETE", "/", ""}));
}

class StatusPageEndpoint : public ::testing::Test {
 protected:
  StatusPageEndpoint()
      : endpoint_(loop_, net::SocketAddress::loopback_v4(0), [] { return std::string("up 1\n"); }) {
    endpoint_.set_pages(serve_status_page);
  }
  ~StatusPageEndpoint() override { loop_.run_nowait(); }
  StatusPageEndpoint(const StatusPageEndpoint&) = delete;
  StatusPageEndpoint& operator=(const StatusPageEndpoint&) = delete;
  std::string ask(const std::string& request) {
    const std::uint64_t id = endpoint_.attach_connection();
    endpoint_.receive(
        id, std::span(reinterpret_cast<const std::uint8_t*>(request.data()), request.size()));
    return endpoint_.take_output(id);
  }
  net::EventLoop loop_;
  server::MetricsEndpoint endpoint_;
};

TEST_F(StatusPageEndpoint, AnswersThePageAndStillTheMetrics) {
  const std::string page = ask("GET /status HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(page.rfind("HTTP/1.0 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n", 0), 0u)
      << page.substr(0, 200);
  EXPECT_NE(page.find("\r\nContent-Security-Policy: "), std::string::npos);
  EXPECT_NE(page.find("\r\n\r\n<!DOCTYPE html>"), std::string::npos);
  const std::string head = ask("HEAD / HTTP/1.0\r\n\r\n");
  EXPECT_EQ(head.rfind("HTTP/1.0 200 OK", 0), 0u);
  EXPECT_EQ(head.find("<!DOCTYPE"), std::string::npos) << "HEAD: no body";
  const std::string metrics = ask("GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_NE(metrics.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(metrics.find("up 1"), std::string::npos);
  EXPECT_EQ(endpoint_.stats().answered, 3u);
}

}  // namespace
}  // namespace predrop

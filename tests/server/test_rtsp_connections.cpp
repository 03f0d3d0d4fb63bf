// detail::RtspConnections (server/src/rtsp_connections.hpp): admission and the over-limit 503,
// requests parsed and handed to the listener, the bound on a client that does not read its
// replies (paused, then closed), idle limits and request deadlines. Attached connections (no
// socket: their write queue is their output string); time is whatever the test passes.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "rtsp_connections.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

using server::detail::RtspConnection;

constexpr std::uint64_t kS = 1'000'000;

// Answers every request with `reply_size` bytes of body and counts what it saw.
struct Listener final : server::detail::RtspConnectionListener {
  std::size_t reply_size = 0;
  std::vector<std::uint32_t> cseqs;
  int frames = 0;
  std::string on_request(RtspConnection&, rtsp::RtspRequest& request) override {
    cseqs.push_back(request.cseq);
    rtsp::RtspResponse r = rtsp::make_response(200, request.cseq);
    if (reply_size > 0) r.set_body("text/plain", std::string(reply_size, 'x'));
    return rtsp::serialize(r);
  }
  void on_interleaved(RtspConnection&, const rtsp::InterleavedFrame&) override { ++frames; }
};

struct Table {
  server::ServerStats stats;
  server::detail::RtspConnections connections;
  Listener listener;

  explicit Table(server::detail::ConnectionLimits limits = {}) : connections(limits, stats) {}

  RtspConnection* attach(std::uint64_t now = 0) {
    auto c = std::make_unique<RtspConnection>();
    c->peer = net::SocketAddress::from_ip("127.0.0.1", 40000).value();
    return connections.admit(std::move(c), now);
  }
  void send(RtspConnection& c, std::string_view text, std::uint64_t now = 0) {
    connections.receive(c,
                        std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()),
                        now, listener);
  }
};

TEST(RtspConnections, PastTheLimitAConnectionIsKeptOnlyToBeRefused) {
  Table t({2});
  ASSERT_NE(t.attach(), nullptr);
  ASSERT_NE(t.attach(), nullptr);
  RtspConnection* over = t.attach();
  ASSERT_NE(over, nullptr);
  EXPECT_TRUE(over->over_limit);
  t.send(*over, test::request_text("OPTIONS", "*", 4));
  EXPECT_NE(over->output.find("RTSP/1.0 503"), std::string::npos);
  EXPECT_FALSE(over->is_open());
  EXPECT_TRUE(t.listener.cseqs.empty()) << "never handled";
  // Beyond the allowance of such connections (at least 16) they are closed at accept.
  for (int i = 0; i < 15; ++i)
    ASSERT_NE(t.attach(), nullptr);
  EXPECT_EQ(t.attach(), nullptr);
  EXPECT_EQ(t.stats.connections_accepted, 2u);
  EXPECT_EQ(t.stats.connections_refused, 17u);
}

TEST(RtspConnections, PipelinedRequestsAreAnsweredInOrder) {
  Table t;
  RtspConnection* c = t.attach();
  t.send(*c, test::request_text("OPTIONS", "*", 1) + test::request_text("OPTIONS", "*", 2) +
                 "OPTIONS * RTSP/1.0\r\nCSe");
  EXPECT_EQ(t.listener.cseqs, (std::vector<std::uint32_t>{1, 2}));
  t.send(*c, "q: 3\r\n\r\n");
  EXPECT_EQ(t.listener.cseqs, (std::vector<std::uint32_t>{1, 2, 3}));
  EXPECT_EQ(t.stats.requests, 3u);
}

TEST(RtspConnections, AClientThatDoesNotReadIsPausedThenClosed) {
  server::detail::ConnectionLimits limits;
  limits.max_write_queue_bytes = 8000;
  Table t(limits);
  t.listener.reply_size = 1500;
  RtspConnection* c = t.attach();
  // Replies pile up unread: past a quarter of the bound the connection is no longer answered.
  for (std::uint32_t i = 1; i <= 3; ++i)
    t.send(*c, test::request_text("OPTIONS", "*", i));
  EXPECT_TRUE(c->reading_paused);
  EXPECT_EQ(t.listener.cseqs.size(), 2u);
  EXPECT_TRUE(t.connections.needs_polling());
  EXPECT_EQ(t.stats.connections_paused, 1u);
  // What it sends meanwhile waits, within the bound; beyond it the connection is closed.
  while (c->is_open())
    t.send(*c, test::request_text("OPTIONS", "*", 9));
  EXPECT_EQ(t.stats.connections_closed_backlog, 1u);
  EXPECT_EQ(t.connections.take_closed().size(), 1u);
  EXPECT_EQ(t.connections.size(), 0u);
  EXPECT_FALSE(t.connections.needs_polling());
}

TEST(RtspConnections, APausedClientIsAnsweredAgainOnceItsRepliesDrain) {
  server::detail::ConnectionLimits limits;
  limits.max_write_queue_bytes = 8000;
  Table t(limits);
  t.listener.reply_size = 1500;
  RtspConnection* c = t.attach();
  for (std::uint32_t i = 1; i <= 3; ++i)
    t.send(*c, test::request_text("OPTIONS", "*", i));
  ASSERT_TRUE(c->reading_paused);
  c->output.clear();  // the client read everything
  t.connections.resume_paused([&](RtspConnection& x) {
    t.connections.serve(x, 0, t.listener);
    return true;
  });
  EXPECT_FALSE(c->reading_paused);
  EXPECT_EQ(t.listener.cseqs, (std::vector<std::uint32_t>{1, 2, 3}));
}

TEST(RtspConnections, IdleConnectionsCloseAfterTheirLimit) {
  server::detail::ConnectionLimits limits;
  limits.rtsp_idle_timeout_s = 30;
  limits.session_timeout_s = 60;
  Table t(limits);
  RtspConnection* idle = t.attach(0);
  RtspConnection* player = t.attach(0);
  player->sessions.push_back("s");  // a player's control channel lives as long as its session
  t.connections.close_overdue(30 * kS);
  EXPECT_TRUE(idle->is_open());
  t.connections.close_overdue(30 * kS + 1);
  EXPECT_FALSE(idle->is_open());
  EXPECT_TRUE(player->is_open());
  t.connections.close_overdue(70 * kS + 1);
  EXPECT_FALSE(player->is_open());
  EXPECT_EQ(t.stats.connections_timed_out, 2u);
}

TEST(RtspConnections, ARequestMustBeCompleteWithinTheIdleTimeoutOfItsFirstByte) {
  server::detail::ConnectionLimits limits;
  limits.rtsp_idle_timeout_s = 30;
  Table t(limits);
  // Clock times start at 1 s (0 means "none" to the connection's request timer).
  RtspConnection* c = t.attach(kS);
  const std::string request = test::request_text("OPTIONS", "*", 1);
  // One byte every 10 s: never idle, but the request is late.
  for (std::size_t i = 0; i < 4; ++i)
    t.send(*c, request.substr(i, 1), kS + i * 10 * kS);
  t.connections.close_overdue(kS + 30 * kS);
  EXPECT_TRUE(c->is_open());
  t.connections.close_overdue(kS + 30 * kS + 1);
  EXPECT_FALSE(c->is_open());
  EXPECT_TRUE(t.listener.cseqs.empty());
}

TEST(RtspConnections, InterleavedFramesGoToTheListener) {
  Table t;
  RtspConnection* c = t.attach();
  t.send(*c, std::string("$\x01\x00\x04", 4) + "abcd" + test::request_text("OPTIONS", "*", 2));
  EXPECT_EQ(t.listener.frames, 1);
  EXPECT_EQ(t.listener.cseqs, (std::vector<std::uint32_t>{2}));
  // A connection that ends inside a frame is counted when it leaves.
  t.send(*c, std::string("$\x01\x00\x10", 4) + "ab");
  c->close();
  EXPECT_EQ(t.connections.take_closed().size(), 1u);
  EXPECT_EQ(t.stats.interleaved_truncated, 1u);
}

}  // namespace
}  // namespace predrop

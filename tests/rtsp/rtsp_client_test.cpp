// RtspClient (rtsp/include/predrop/rtsp/rtsp_client.hpp) against a fake server on a real
// loopback TCP socket that answers with scripted raw bytes: malformed responses fail the request
// they answer with a clear error (by CSeq, else the oldest waiting), lost framing drops the
// connection, requests from the server are skipped, and an exception thrown by a callback never
// reaches the event loop (net's boundary counters stay unchanged). Every test closes the loop
// cleanly.
#include "predrop/rtsp/rtsp_client.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "predrop/net/callback_guard.hpp"
#include "predrop/net/tcp.hpp"

namespace predrop::rtsp {
namespace {

// Answers the n-th request (0-based) with the raw bytes the script returns ("" = silence);
// `hang_up` after a request closes the connection once the answer is out.
class RawServer {
 public:
  struct Answer {
    std::string bytes;
    bool hang_up = false;
  };
  using Script = std::function<Answer(std::size_t n, const RtspRequest& request)>;

  RawServer(net::EventLoop& loop, Script script) : script_(std::move(script)) {
    auto l = net::TcpListener::listen(
        loop, net::SocketAddress::loopback_v4(0),
        [this](std::unique_ptr<net::TcpConnection> c) { on_accept(std::move(c)); });
    EXPECT_TRUE(l.ok());
    if (l.ok()) listener_ = std::move(l.value());
  }
  const net::SocketAddress& address() const { return listener_->local_address(); }
  void shut() {
    conn_.reset();
    listener_.reset();
  }

  std::size_t requests = 0;
  bool client_hung_up = false;

 private:
  void on_accept(std::unique_ptr<net::TcpConnection> c) {
    conn_ = std::move(c);
    auto st = conn_->start(
        [this](std::span<const std::uint8_t> d) {
          for (auto ev = parser_.feed(d); ev != RtspParseEvent::kNeedMore; ev = parser_.next()) {
            ASSERT_EQ(ev, RtspParseEvent::kMessage);
            const Answer a = script_(requests++, parser_.request());
            if (!a.bytes.empty()) (void)conn_->write(a.bytes);
            if (a.hang_up) {
              conn_->close_after_writes();
              return;
            }
          }
        },
        [this](const core::Status&) {
          client_hung_up = true;
          conn_.reset();
        });
    EXPECT_TRUE(st.ok());
  }

  Script script_;
  std::unique_ptr<net::TcpListener> listener_;
  std::unique_ptr<net::TcpConnection> conn_;
  RtspRequestParser parser_;
};

std::string ok(std::uint32_t cseq) {
  return "RTSP/1.0 200 OK\r\nCSeq: " + std::to_string(cseq) + "\r\n\r\n";
}

// A client connected to a RawServer, with the outcome of each request it sent.
struct Harness {
  net::EventLoop loop;
  std::unique_ptr<RawServer> server;
  std::unique_ptr<RtspClient> client;
  std::vector<std::optional<core::Result<RtspResponse>>> results;
  std::optional<core::Status> closed;
  std::function<void(std::size_t i)> after_result;  // runs after result i is recorded
  std::unique_ptr<net::Timer> watchdog;

  explicit Harness(RawServer::Script script) {
    server = std::make_unique<RawServer>(loop, std::move(script));
    watchdog = std::make_unique<net::Timer>(loop, [this] {
      ADD_FAILURE() << "watchdog fired";
      loop.stop();
    });
    watchdog->start(10'000);
    watchdog->keep_loop_alive(false);
  }

  // Connects and sends `n` OPTIONS requests at once (pipelined).
  void connect_and_send(std::size_t n, std::function<void()> on_closed_extra = {}) {
    auto c = RtspClient::connect(
        loop, server->address(),
        [this, n](const core::Status& st) {
          ASSERT_TRUE(st.ok());
          for (std::size_t i = 0; i < n; ++i)
            send();
        },
        [this, on_closed_extra](const core::Status& why) {
          closed = why;
          if (on_closed_extra) on_closed_extra();
        });
    ASSERT_TRUE(c.ok());
    client = std::move(c.value());
  }

  void send() {
    const std::size_t i = results.size();
    results.emplace_back();
    client->send(RtspMethod::kOptions, "*", {}, [this, i](core::Result<RtspResponse> r) {
      results[i] = std::move(r);
      if (after_result) after_result(i);
    });
  }

  bool all_answered() const {
    for (const auto& r : results)
      if (!r) return false;
    return !results.empty();
  }

  // Runs until every request has its outcome (and `also` holds).
  void run_until_answered(std::function<bool()> also = {}) {
    net::Timer poll(loop, [&] {
      if (all_answered() && (!also || also())) loop.stop();
    });
    poll.start(1, 1);
    loop.run();
  }

  std::string error(std::size_t i) const {
    return results[i] && !results[i]->ok() ? results[i]->error().message : std::string("(none)");
  }

  void finish() {
    client.reset();
    server->shut();
    watchdog.reset();
    auto st = loop.close();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(loop.forced_closes(), 0u);
    EXPECT_EQ(loop.handle_count(), 0u);
  }
};

TEST(RtspClient, MalformedResponseFailsTheRequestItNamesAndTheConnectionGoesOn) {
  Harness h([](std::size_t n, const RtspRequest& r) {
    if (n == 0) return RawServer::Answer{"RTSP/1.0 2x0 OK\r\nCSeq: 1\r\n\r\n"};
    return RawServer::Answer{ok(r.cseq)};
  });
  h.connect_and_send(2);
  h.run_until_answered();
  ASSERT_EQ(h.results.size(), 2u);
  ASSERT_FALSE(h.results[0]->ok());
  EXPECT_NE(h.error(0).find("malformed response"), std::string::npos) << h.error(0);
  EXPECT_NE(h.error(0).find("status code"), std::string::npos) << h.error(0);
  ASSERT_TRUE(h.results[1]->ok()) << h.error(1);
  EXPECT_EQ((*h.results[1])->status, 200);
  EXPECT_FALSE(h.closed.has_value());
  h.finish();
}

TEST(RtspClient, UnreadableOrMissingCSeqFailsTheOldestRequest) {
  for (const std::string& bad : {std::string("RTSP/1.0 200 OK\r\nCSeq: abc\r\n\r\n"),
                                 std::string("RTSP/1.0 200 OK\r\n\r\n")}) {
    Harness h([&](std::size_t n, const RtspRequest& r) {
      return RawServer::Answer{n == 0 ? bad : ok(r.cseq)};
    });
    h.connect_and_send(2);
    h.run_until_answered();
    ASSERT_FALSE(h.results[0]->ok()) << bad;
    EXPECT_NE(h.error(0).find("malformed response"), std::string::npos) << h.error(0);
    EXPECT_TRUE(h.results[1]->ok()) << h.error(1);
    EXPECT_FALSE(h.closed.has_value());
    h.finish();
  }
}

TEST(RtspClient, RequestsFromTheServerAreSkipped) {
  Harness h([](std::size_t, const RtspRequest& r) {
    // A request carrying the same CSeq must not be taken for the answer.
    return RawServer::Answer{"SET_PARAMETER rtsp://c/x RTSP/1.0\r\nCSeq: 1\r\n\r\n" + ok(r.cseq)};
  });
  h.connect_and_send(1);
  h.run_until_answered();
  ASSERT_TRUE(h.results[0]->ok()) << h.error(0);
  EXPECT_EQ((*h.results[0])->status, 200);
  h.finish();
}

TEST(RtspClient, LostFramingFailsEveryRequestAndDropsTheConnection) {
  Harness h([](std::size_t n, const RtspRequest&) {
    return RawServer::Answer{n == 1 ? "RTSP/1.0 200 OK\r\nCSeq: 1\r\nContent-Length: x\r\n\r\n"
                                    : ""};
  });
  h.connect_and_send(2);
  h.run_until_answered([&] { return h.server->client_hung_up; });
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_FALSE(h.results[i]->ok());
    EXPECT_NE(h.error(i).find("malformed response: invalid Content-Length"), std::string::npos)
        << h.error(i);
  }
  ASSERT_TRUE(h.closed.has_value());
  ASSERT_FALSE(h.closed->ok());
  EXPECT_NE(h.closed->error().message.find("malformed response"), std::string::npos);
  // Later requests fail at once, saying why.
  h.send();
  ASSERT_TRUE(h.results[2].has_value());
  EXPECT_NE(h.error(2).find("malformed response"), std::string::npos) << h.error(2);
  h.finish();
}

TEST(RtspClient, AThrowingCallbackNeverReachesTheEventLoop) {
  const auto data_faults = net::loop_guard().count(net::CallbackKind::kTcpData);
  Harness h([](std::size_t, const RtspRequest& r) { return RawServer::Answer{ok(r.cseq)}; });
  h.after_result = [](std::size_t i) {
    if (i == 0) throw std::runtime_error("boom");
  };
  h.connect_and_send(1);
  h.run_until_answered();
  h.send();  // the client dropped the connection: this fails at once, saying why
  ASSERT_TRUE(h.results[1].has_value());
  EXPECT_NE(h.error(1).find("internal error in the response handler: boom"), std::string::npos)
      << h.error(1);
  ASSERT_TRUE(h.closed.has_value());
  EXPECT_NE(h.closed->error().message.find("boom"), std::string::npos);
  EXPECT_EQ(net::loop_guard().count(net::CallbackKind::kTcpData), data_faults)
      << "the exception reached net's boundary";
  h.finish();
}

TEST(RtspClient, AThrowingOnClosedIsContainedToo) {
  const auto close_faults = net::loop_guard().count(net::CallbackKind::kTcpClose);
  Harness h([](std::size_t, const RtspRequest&) { return RawServer::Answer{"", true}; });
  h.connect_and_send(2, [] { throw std::runtime_error("on_closed boom"); });
  h.run_until_answered([&] { return h.closed.has_value(); });
  EXPECT_TRUE(h.closed->ok()) << "an orderly close by the server";
  EXPECT_NE(h.error(0).find("connection closed by the server"), std::string::npos) << h.error(0);
  EXPECT_EQ(net::loop_guard().count(net::CallbackKind::kTcpClose), close_faults);
  h.finish();
}

TEST(RtspClient, ACallbackMayDestroyTheClientWhenTheServerHangsUp) {
  Harness h([](std::size_t, const RtspRequest&) { return RawServer::Answer{"", true}; });
  h.after_result = [&h](std::size_t i) {
    if (i == 0) h.client.reset();  // inside the close handler's fail_all
  };
  h.connect_and_send(2);
  h.run_until_answered();
  EXPECT_EQ(h.client, nullptr);
  EXPECT_FALSE(h.closed.has_value()) << "on_closed must not run on a destroyed client";
  EXPECT_FALSE(h.results[1]->ok());
  h.finish();
}

}  // namespace
}  // namespace predrop::rtsp

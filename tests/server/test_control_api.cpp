// The JSON control API (server/include/predrop/server/control_api.hpp, docs/control-api.md):
// routing, JSON and authorization of handle_control() over a scripted backend; then over real
// sockets, the API on the metrics listener of a running StreamWorkers with the real measuring
// client playing: the session listed with its R, L and P, its per-block history, hostile
// requests answered 4xx while the endpoint keeps serving, and DELETE ending the session.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "predrop/client/measuring_client.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/server/control_api.hpp"
#include "predrop/server/metrics_endpoint.hpp"
#include "predrop/server/stream_workers.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

using nlohmann::json;
using server::HttpRequest;

constexpr const char* kToken = "0123456789abcdef-token";

// A backend with one worker holding session 3 (stream "sample") with one reported block.
server::ControlBackend scripted(std::vector<std::uint64_t>* ended = nullptr) {
  server::ControlBackend b;
  b.streams = {{"sample", "/media/sample.mp4"}, {"other", "/media/other.mp4"}};
  b.snapshots = [] {
    server::ServerSnapshot w;
    w.worker = 0;
    server::SessionMetrics m;
    m.number = 3;
    m.policy = "capacity";
    m.rate = 0.25;
    m.stream = "sample";
    m.client = "10.0.0.7";
    m.transport = "udp";
    m.playing = true;
    m.age_us = 12'500'000;
    m.bytes_sent = 123456;
    m.stats.reports = 4;
    m.stats.last_reception_period_us = 987'000;
    m.stats.last_performance = 41.5;
    server::BlockRecord r;
    r.stage = 4;
    r.reported = true;
    r.rate = 0.25;
    r.reception_period_us = 987'000;
    r.performance = 41.5;
    r.network_loss = 0.02;
    r.queue_delay_us = 35'000;
    m.last_block = r;
    w.session_rows.push_back(m);
    return std::vector<server::ServerSnapshot>{w};
  };
  b.history = [](std::uint64_t n) -> std::optional<std::vector<server::BlockRecord>> {
    if (n != 3) return std::nullopt;
    std::vector<server::BlockRecord> rows(2);
    rows[0].stage = 0;
    rows[1].stage = 1;
    rows[1].reported = true;
    rows[1].performance = 40.0;
    return rows;
  };
  b.end_session = [ended](std::uint64_t n) {
    if (n != 3) return false;
    if (ended != nullptr) ended->push_back(n);
    return true;
  };
  b.wall_now_us = [] { return std::uint64_t{1'800'000'000} * 1'000'000; };
  b.token = kToken;
  return b;
}

json body_of(const server::HttpReply& r) {
  return json::parse(r.body);
}

TEST(ControlApi, ListsStreamsWithTheirLiveSessions) {
  const auto b = scripted();
  const auto r = server::handle_control({"GET", "/api/v1/streams", ""}, b);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  const json j = body_of(r);
  ASSERT_EQ(j["streams"].size(), 2u);
  EXPECT_EQ(j["streams"][0]["name"], "sample");
  EXPECT_EQ(j["streams"][0]["path"], "/media/sample.mp4");
  EXPECT_EQ(j["streams"][0]["sessions"], 1);
  EXPECT_EQ(j["streams"][1]["sessions"], 0);
}

TEST(ControlApi, ListsSessionsWithRLPLossQueueAndSince) {
  const auto b = scripted();
  const auto r = server::handle_control({"GET", "/api/v1/sessions?x=1", ""}, b);
  ASSERT_EQ(r.status, 200) << r.body;
  const json s = body_of(r)["sessions"].at(0);
  EXPECT_EQ(s["number"], 3);
  EXPECT_EQ(s["client"], "10.0.0.7");
  EXPECT_EQ(s["transport"], "udp");
  EXPECT_EQ(s["policy"], "capacity");
  EXPECT_DOUBLE_EQ(s["rate"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(s["last_reception_period_ms"].get<double>(), 987.0);
  EXPECT_DOUBLE_EQ(s["last_performance"].get<double>(), 41.5);
  EXPECT_DOUBLE_EQ(s["loss"].get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(s["queue_ms"].get<double>(), 35.0);
  EXPECT_EQ(s["bytes_sent"], 123456);
  EXPECT_DOUBLE_EQ(s["since_s"].get<double>(), 12.5);
  EXPECT_EQ(s["since"], "2027-01-15T07:59:47Z");  // 1.8e9 s - 12.5 s, whole seconds
  // One session by its number, and one that does not exist.
  EXPECT_EQ(body_of(server::handle_control({"GET", "/api/v1/sessions/3", ""}, b))["number"], 3);
  EXPECT_EQ(server::handle_control({"GET", "/api/v1/sessions/4", ""}, b).status, 404);
}

TEST(ControlApi, HistoryIsTheSessionsBlocksOldestFirst) {
  const auto b = scripted();
  const auto r = server::handle_control({"GET", "/api/v1/sessions/3/history", ""}, b);
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = body_of(r);
  ASSERT_EQ(j["blocks"].size(), 2u);
  EXPECT_EQ(j["blocks"][0]["stage"], 0);
  EXPECT_TRUE(j["blocks"][0]["performance"].is_null()) << "not reported: no P";
  EXPECT_TRUE(j["blocks"][0]["queue_ms"].is_null()) << "not measured: null, not NaN";
  EXPECT_DOUBLE_EQ(j["blocks"][1]["performance"].get<double>(), 40.0);
  EXPECT_EQ(server::handle_control({"GET", "/api/v1/sessions/9/history", ""}, b).status, 404);
}

TEST(ControlApi, EndingASessionNeedsTheToken) {
  std::vector<std::uint64_t> ended;
  auto b = scripted(&ended);
  EXPECT_EQ(server::handle_control({"DELETE", "/api/v1/sessions/3", ""}, b).status, 401);
  EXPECT_EQ(server::handle_control({"DELETE", "/api/v1/sessions/3", "Bearer wrong"}, b).status,
            401);
  EXPECT_EQ(
      server::handle_control({"DELETE", "/api/v1/sessions/3", "Bearer 0123456789abcdef-tokeN"}, b)
          .status,
      401)
      << "same length, one byte off";
  EXPECT_TRUE(ended.empty());
  const std::string auth = std::string("bearer ") + kToken;
  EXPECT_EQ(server::handle_control({"DELETE", "/api/v1/sessions/3", auth}, b).status, 200);
  EXPECT_EQ(ended, std::vector<std::uint64_t>{3});
  EXPECT_EQ(server::handle_control({"DELETE", "/api/v1/sessions/5", auth}, b).status, 404);
  // Without a token in the configuration the API is read-only.
  b.token.clear();
  EXPECT_EQ(server::handle_control({"DELETE", "/api/v1/sessions/3", auth}, b).status, 403);
  EXPECT_EQ(server::handle_control({"DELETE", "/api/v1/sessions/3", "Bearer "}, b).status, 403);
  EXPECT_EQ(ended.size(), 1u);
}

TEST(ControlApi, ReloadNeedsTheTokenAndSaysWhatHappened) {
  auto b = scripted();
  const std::string auth = std::string("Bearer ") + kToken;
  EXPECT_EQ(server::handle_control({"POST", "/api/v1/reload", auth}, b).status, 501)
      << "no reload wired";
  b.reload = [] { return core::Result<std::string>(std::string("policy capacity")); };
  EXPECT_EQ(server::handle_control({"POST", "/api/v1/reload", ""}, b).status, 401);
  const auto r = server::handle_control({"POST", "/api/v1/reload", auth}, b);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(body_of(r)["message"], "policy capacity");
  b.reload = [] { return core::Result<std::string>(core::make_error("x.toml:3:1: bad key")); };
  const auto bad = server::handle_control({"POST", "/api/v1/reload", auth}, b);
  EXPECT_EQ(bad.status, 422);
  EXPECT_EQ(body_of(bad)["error"], "x.toml:3:1: bad key");
  EXPECT_EQ(server::handle_control({"GET", "/api/v1/reload", auth}, b).status, 405);
}

TEST(ControlApi, HostilePathsAndMethodsGetClear4xx) {
  const auto b = scripted();
  struct Case {
    const char* method;
    const char* target;
    int status;
  };
  const Case cases[] = {
      {"GET", "/api/v1/nothing", 404},
      {"GET", "/api", 404},
      {"GET", "/api/v2/sessions", 404},
      {"GET", "/api/v1/sessions/0", 404},
      {"GET", "/api/v1/sessions/-1", 404},
      {"GET", "/api/v1/sessions/+3", 404},
      {"GET", "/api/v1/sessions/3x", 404},
      {"GET", "/api/v1/sessions/99999999999999999999999", 404},
      {"GET", "/api/v1/sessions/18446744073709551615", 404},
      {"GET", "/api/v1/sessions/3/history/more", 404},
      {"GET", "/api/v1/sessions/3/../../streams", 404},
      {"GET", "/api/v1/sessions/%33", 404},
      {"POST", "/api/v1/sessions", 405},
      {"DELETE", "/api/v1/streams", 405},
      {"POST", "/api/v1/sessions/3", 405},
      {"DELETE", "/api/v1/sessions/3/history", 405},
  };
  for (const Case& c : cases) {
    const auto r = server::handle_control({c.method, c.target, ""}, b);
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.target;
    EXPECT_TRUE(json::accept(r.body)) << c.target << ": " << r.body;
    if (c.status == 405) {
      EXPECT_FALSE(r.allow.empty()) << c.target;
    }
  }
}

TEST(ControlApi, InvalidUtf8InANameIsReplacedNotThrown) {
  auto b = scripted();
  b.streams = {{"bad\xff\xfe", "/x"}};
  const auto r = server::handle_control({"GET", "/api/v1/streams", ""}, b);
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(json::accept(r.body)) << r.body;
}

TEST(ControlApi, RequestLineParsingLetsApiMethodsThroughOnlyUnderApi) {
  using server::parse_metrics_request;
  EXPECT_EQ(parse_metrics_request("DELETE /api/v1/sessions/1 HTTP/1.1").status, 200);
  EXPECT_EQ(parse_metrics_request("POST /api/v1/reload HTTP/1.0").status, 200);
  EXPECT_EQ(parse_metrics_request("DELETE /metrics HTTP/1.1").status, 405);
  EXPECT_EQ(parse_metrics_request("PUT /api/v1/sessions/1 HTTP/1.1").status, 405);
  const auto q = parse_metrics_request(
      "DELETE /api/v1/sessions/1 HTTP/1.1\r\nHost: x\r\nauthorization:   Bearer abc  \r\n");
  EXPECT_EQ(q.authorization, "Bearer abc");
  EXPECT_EQ(q.target, "/api/v1/sessions/1");
}

// ---- over real sockets, with a running server and the measuring client ----

class ControlApiLive : public ::testing::Test {
 protected:
  void SetUp() override {
    spin_ = std::make_unique<net::Timer>(loop_, [] {});
    spin_->start(1, 1);
    spin_->keep_loop_alive(false);
  }
  void TearDown() override {
    spin_.reset();
    EXPECT_TRUE(loop_.close().ok());
  }

  // One HTTP exchange on a fresh connection: the whole reply (the endpoint closes after it).
  std::string http(const net::SocketAddress& at, const std::string& request) {
    test::PosixRtspPeer p(loop_, at);
    EXPECT_TRUE(p.send(request));
    EXPECT_TRUE(p.wait_closed());
    return p.received();
  }
  static int status_of(const std::string& reply) {
    return reply.size() > 12 && reply.starts_with("HTTP/1.") ? std::stoi(reply.substr(9, 3)) : 0;
  }
  static json json_of(const std::string& reply) {
    const std::size_t at = reply.find("\r\n\r\n");
    return at == std::string::npos ? json() : json::parse(reply.substr(at + 4), nullptr, false);
  }

  net::SrtpLibraryGuard srtp_;
  net::EventLoop loop_;
  const net::MonotonicClock real_clock_;  // the worker threads run on the real clock
  std::unique_ptr<net::Timer> spin_;
};

TEST_F(ControlApiLive, ListsAPlayingSessionShowsItsHistoryAndEndsIt) {
  server::StreamServerOptions o = test::loopback_options();
  server::StreamWorkers srv(loop_, o, 2);
  srv.start();
  server::ControlBackend backend;
  backend.streams = {{"sample", PREDROP_TEST_SAMPLE}};
  backend.snapshots = [&srv] { return srv.snapshots(); };
  backend.history = [&srv](std::uint64_t n) { return srv.session_history(n); };
  backend.end_session = [&srv](std::uint64_t n) { return srv.end_session(n); };
  backend.token = kToken;
  server::MetricsEndpoint endpoint(loop_, net::SocketAddress::loopback_v4(0),
                                   [] { return std::string("up 1\n"); });
  endpoint.set_control(
      [&backend](const HttpRequest& q) { return server::handle_control(q, backend); });
  const net::SocketAddress api = endpoint.address();

  client::ClientOptions co;
  co.url = "rtsp://127.0.0.1:" + std::to_string(srv.rtsp_address().port()) + "/sample";
  co.reference = PREDROP_TEST_SAMPLE;
  std::size_t blocks = 0;
  std::optional<core::Status> ended;
  client::MeasuringClient c(
      loop_, real_clock_, co, [&](const client::BlockResult&) { ++blocks; },
      [&](const core::Status& st, const client::ClientSummary&) { ended = st; });
  c.start();
  // Two blocks reported: the session has an L and a P.
  ASSERT_TRUE(test::pump_until(
      loop_, [&] { return blocks >= 2 || ended.has_value(); }, 5'000'000));
  ASSERT_FALSE(ended.has_value()) << "the client ended early";

  const std::string listed = http(api, "GET /api/v1/sessions HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(status_of(listed), 200) << listed;
  EXPECT_NE(listed.find("Content-Type: application/json"), std::string::npos);
  const json sessions = json_of(listed)["sessions"];
  ASSERT_EQ(sessions.size(), 1u) << listed;
  const json s = sessions[0];
  const std::uint64_t number = s["number"].get<std::uint64_t>();
  EXPECT_EQ(s["stream"], "sample");
  EXPECT_EQ(s["client"], "127.0.0.1");
  EXPECT_EQ(s["transport"], "udp");
  EXPECT_EQ(s["policy"], "basic");
  EXPECT_TRUE(s["playing"].get<bool>());
  EXPECT_GT(s["last_reception_period_ms"].get<double>(), 0.0);
  EXPECT_GT(s["last_performance"].get<double>(), 20.0) << "PSNR in dB on loopback";
  EXPECT_GT(s["bytes_sent"].get<std::uint64_t>(), 10'000u);
  EXPECT_TRUE(s.contains("since") || s.contains("since_s"));

  const std::string hist =
      http(api, "GET /api/v1/sessions/" + std::to_string(number) + "/history HTTP/1.0\r\n\r\n");
  ASSERT_EQ(status_of(hist), 200) << hist;
  const json rows = json_of(hist)["blocks"];
  ASSERT_GE(rows.size(), 2u) << hist;
  EXPECT_EQ(rows[0]["stage"], 0);
  EXPECT_TRUE(rows[0]["reported"].get<bool>());

  // Hostile requests: each gets its 4xx on its own connection; the endpoint goes on serving.
  EXPECT_EQ(status_of(http(api, "GARBAGE\r\n\r\n")), 400);
  EXPECT_EQ(status_of(http(api, "GET /api/v1/sessions HTTP/9.9\r\n\r\n")), 505);
  EXPECT_EQ(status_of(http(api, "PUT /api/v1/sessions/1 HTTP/1.1\r\n\r\n")), 405);
  EXPECT_EQ(status_of(http(api, "GET /api/v1/sessions/abc HTTP/1.1\r\n\r\n")), 404);
  EXPECT_EQ(status_of(http(api, "GET /api/v1/" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n")),
            431);
  EXPECT_EQ(status_of(http(
                api, "DELETE /api/v1/sessions/" + std::to_string(number) + " HTTP/1.1\r\n\r\n")),
            401);
  EXPECT_EQ(status_of(http(api, "DELETE /api/v1/sessions/" + std::to_string(number) +
                                    " HTTP/1.1\r\nAuthorization: Bearer nope\r\n\r\n")),
            401);
  EXPECT_EQ(status_of(http(api, "GET /metrics HTTP/1.0\r\n\r\n")), 200) << "metrics still there";

  const std::string del =
      http(api, "DELETE /api/v1/sessions/" + std::to_string(number) +
                    " HTTP/1.1\r\nAuthorization: Bearer " + kToken + "\r\n\r\n");
  ASSERT_EQ(status_of(del), 200) << del;
  const json after = json_of(http(api, "GET /api/v1/sessions HTTP/1.0\r\n\r\n"));
  EXPECT_TRUE(after["sessions"].empty()) << after.dump();
  EXPECT_EQ(status_of(http(api, "GET /api/v1/sessions/" + std::to_string(number) +
                                    "/history HTTP/1.0\r\n\r\n")),
            404);
  // The client heard the BYE and ends.
  EXPECT_TRUE(test::pump_until(
      loop_, [&] { return ended.has_value(); }, 5'000'000));
  c.stop();
  EXPECT_EQ(endpoint.callback_guard().count(server::CallbackKind::kMetrics), 0u);
  const auto snaps = srv.snapshots();
  std::uint64_t by_api = 0;
  for (const auto& w : snaps)
    by_api += w.stats.sessions_ended_by_api;
  EXPECT_EQ(by_api, 1u);
  srv.stop();
}

}  // namespace
}  // namespace predrop

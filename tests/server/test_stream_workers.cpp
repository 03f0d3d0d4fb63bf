// StreamWorkers (issue 14 item 3): N worker loops behind one RTSP port. Real sockets on
// 127.0.0.1, the acceptor on this thread's loop and each worker on its own thread. Sessions
// spread over two workers and both stream end to end to the real measuring client; the metrics
// are the sum over the workers; a request naming another worker's session gets 454; the session
// limit holds for the process; stopping with sessions on every worker is clean. Nothing sleeps:
// the tests wait on replies, callbacks and the workers' own answers (run_on, snapshots).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "predrop/client/measuring_client.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/server/server_setup.hpp"
#include "predrop/server/stream_workers.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

using test::request_text;
using test::session_of;

int status(const std::optional<rtsp::RtspResponse>& r) {
  return r ? r->status : -1;
}

// The value of an unlabelled sample in Prometheus text ("name value"), -1 if absent.
double metric(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const auto at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + key.size()));
}

class StreamWorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Keeps run_once() returning while replies come from the worker threads (the peers read
    // their sockets directly); nothing reads a clock from it.
    spin_ = std::make_unique<net::Timer>(loop_, [] {});
    spin_->start(1, 1);
    spin_->keep_loop_alive(false);
  }
  void TearDown() override {
    spin_.reset();
    EXPECT_TRUE(loop_.close().ok());
    EXPECT_EQ(loop_.forced_closes(), 0u);
  }

  // DESCRIBE + SETUP of track 0 on `p`; the session id ("" if refused, `code` set).
  std::string setup(test::PosixRtspPeer& p, const std::string& url, std::uint32_t cseq,
                    std::uint16_t client_port, int* code = nullptr) {
    EXPECT_EQ(status(p.request(request_text("DESCRIBE", url, cseq))), 200);
    auto r = p.request(
        request_text("SETUP", url + "/trackID=0", cseq + 1,
                     "Transport: RTP/SAVP;unicast;client_port=" + std::to_string(client_port) +
                         "-" + std::to_string(client_port + 1) + "\r\n"));
    if (code != nullptr) *code = status(r);
    return r && r->status == 200 ? session_of(*r) : std::string();
  }

  net::SrtpLibraryGuard srtp_;
  net::EventLoop loop_;
  const net::MonotonicClock real_clock_;  // the worker threads run on the real clock
  std::unique_ptr<net::Timer> spin_;
};

TEST_F(StreamWorkersTest, SessionsSpreadOverTwoWorkersAndBothStreamEndToEnd) {
  server::StreamServerOptions o = test::loopback_options();
  o.max_stages = 3;
  std::mutex rows_mutex;
  std::vector<server::BlockTrace> rows;
  std::unordered_set<std::thread::id>
      block_threads;  // not std::set: libstdc++ 12 lacks thread::id <=>
  server::StreamWorkers srv(loop_, o, 2, [&](const server::BlockTrace& t) {
    std::lock_guard lock(rows_mutex);  // on_block runs on both worker threads
    rows.push_back(t);
    block_threads.insert(std::this_thread::get_id());
  });
  srv.start();
  ASSERT_EQ(srv.worker_count(), 2u);
  EXPECT_NE(srv.rtp_port(0), srv.rtp_port(1)) << "each worker has its own RTP/RTCP pair";

  const std::string url =
      "rtsp://127.0.0.1:" + std::to_string(srv.rtsp_address().port()) + "/sample";
  struct Outcome {
    std::optional<core::Status> status;
    client::ClientSummary summary;
    std::vector<client::BlockResult> blocks;
  };
  std::vector<Outcome> outcomes(2);
  std::vector<std::unique_ptr<client::MeasuringClient>> clients;
  int done = 0;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    client::ClientOptions co;
    co.url = url;
    co.reference = PREDROP_TEST_SAMPLE;
    co.max_blocks = 3;
    clients.push_back(std::make_unique<client::MeasuringClient>(
        loop_, real_clock_, co,
        [&, i](const client::BlockResult& b) { outcomes[i].blocks.push_back(b); },
        [&, i](const core::Status& st, const client::ClientSummary& s) {
          outcomes[i].status = st;
          outcomes[i].summary = s;
          if (++done == 2) loop_.stop();
        }));
  }
  // Before the clients finish: each worker holds one of the two sessions.
  std::vector<std::size_t> per_worker;
  bool checked = false;
  for (auto& c : clients) {
    c->start();
  }
  net::Timer probe(loop_, [&] {
    if (checked) return;
    auto snaps = srv.snapshots();
    std::size_t playing = 0;
    for (const auto& s : snaps) {
      playing += s.session_rows.size();
    }
    if (playing == 2) {
      for (const auto& s : snaps) {
        per_worker.push_back(s.session_rows.size());
      }
      checked = true;
    }
  });
  probe.start(5, 5);
  loop_.run();
  probe.stop();

  for (const Outcome& out : outcomes) {
    ASSERT_TRUE(out.status.has_value());
    EXPECT_TRUE(out.status->ok()) << out.status->error().message;
    EXPECT_EQ(out.blocks.size(), 3u);
    EXPECT_EQ(out.summary.srtp_failures, 0u);
    for (const auto& b : out.blocks) {
      EXPECT_GT(b.received, 0u) << "block " << b.stage;
    }
  }
  ASSERT_TRUE(checked) << "never saw both sessions playing";
  EXPECT_EQ(per_worker, (std::vector<std::size_t>{1, 1})) << "round robin: one session each";

  // Metrics: the counters of the two workers, summed.
  const auto snaps = srv.snapshots();
  ASSERT_EQ(snaps.size(), 2u);
  EXPECT_EQ(snaps[0].stats.sessions_created, 1u);
  EXPECT_EQ(snaps[1].stats.sessions_created, 1u);
  EXPECT_EQ(snaps[0].stats.connections_accepted, 1u);
  EXPECT_EQ(snaps[1].stats.connections_accepted, 1u);
  const std::string text = server::render_metrics(snaps);
  EXPECT_EQ(metric(text, "predrop_sessions_created_total"), 2);
  EXPECT_EQ(metric(text, "predrop_connections_accepted_total"), 2);
  EXPECT_EQ(metric(text, "predrop_rtsp_requests_total"),
            static_cast<double>(snaps[0].stats.requests + snaps[1].stats.requests));
  EXPECT_EQ(metric(text, "predrop_workers"), 2);
  EXPECT_NE(text.find("predrop_worker_sessions{worker=\"1\"}"), std::string::npos);
  EXPECT_EQ(srv.connections_handed_off(), 2u);
  EXPECT_EQ(srv.handoff_failures(), 0u);

  srv.stop();
  std::lock_guard lock(rows_mutex);
  EXPECT_EQ(rows.size(), 6u) << "three blocks of each session traced";
  EXPECT_EQ(block_threads.size(), 2u) << "the blocks were sent by two threads";
}

TEST_F(StreamWorkersTest, RequestNamingAnotherWorkersSessionGets454) {
  server::StreamWorkers srv(loop_, test::loopback_options(), 2);
  srv.start();
  const std::string url =
      "rtsp://127.0.0.1:" + std::to_string(srv.rtsp_address().port()) + "/sample";
  test::PosixRtspPeer a(loop_, srv.rtsp_address());  // worker 0
  const std::string id = setup(a, url, 1, 47110);
  ASSERT_FALSE(id.empty());
  // The client reconnects: its new connection goes to worker 1, which does not hold the session.
  test::PosixRtspPeer b(loop_, srv.rtsp_address());
  auto play = b.request(request_text("PLAY", url, 1, "Session: " + id + "\r\n"));
  ASSERT_EQ(status(play), 454);
  EXPECT_NE(play->body.find("another worker"), std::string::npos) << play->body;
  // A made-up id is the plain 454, not counted as another worker's.
  EXPECT_EQ(status(b.request(request_text("PLAY", url, 2, "Session: 0123456789ABCDEF\r\n"))), 454);
  // On its own connection the session is controlled as ever.
  EXPECT_EQ(status(a.request(request_text("PLAY", url, 3, "Session: " + id + "\r\n"))), 200);
  EXPECT_EQ(status(a.request(request_text("TEARDOWN", url, 4, "Session: " + id + "\r\n"))), 200);

  std::uint64_t other = 0;
  ASSERT_TRUE(srv.run_on(
      1, [&](server::StreamServer& s) { other = s.stats().session_requests_other_worker; }));
  EXPECT_EQ(other, 1u);
  const std::string text = server::render_metrics(srv.snapshots());
  EXPECT_EQ(metric(text, "predrop_rtsp_other_worker_session_requests_total"), 1);
  srv.stop();
}

TEST_F(StreamWorkersTest, SessionLimitsHoldForTheProcessNotPerWorker) {
  server::StreamServerOptions o = test::loopback_options();
  o.max_sessions = 2;
  server::StreamWorkers srv(loop_, o, 2);
  srv.start();
  const std::string url =
      "rtsp://127.0.0.1:" + std::to_string(srv.rtsp_address().port()) + "/sample";
  test::PosixRtspPeer p0(loop_, srv.rtsp_address());  // worker 0
  test::PosixRtspPeer p1(loop_, srv.rtsp_address());  // worker 1
  test::PosixRtspPeer p2(loop_, srv.rtsp_address());  // worker 0 again
  EXPECT_FALSE(setup(p0, url, 1, 47120).empty());
  EXPECT_FALSE(setup(p1, url, 1, 47122).empty());
  int code = 0;
  const std::string third = setup(p2, url, 1, 47124, &code);
  EXPECT_TRUE(third.empty());
  EXPECT_EQ(code, 453) << "worker 0 holds one session of two, but the process holds two";
  srv.stop();
}

TEST_F(StreamWorkersTest, StopWithPlayingSessionsOnEveryWorkerIsClean) {
  server::StreamWorkers srv(loop_, test::loopback_options(), 2);
  srv.start();
  const std::string url =
      "rtsp://127.0.0.1:" + std::to_string(srv.rtsp_address().port()) + "/sample";
  std::vector<std::unique_ptr<test::PosixRtspPeer>> peers;
  for (int i = 0; i < 4; ++i) {
    peers.push_back(std::make_unique<test::PosixRtspPeer>(loop_, srv.rtsp_address()));
    const std::string id = setup(*peers.back(), url, 1, static_cast<std::uint16_t>(47130 + 2 * i));
    ASSERT_FALSE(id.empty());
    ASSERT_EQ(
        status(peers.back()->request(request_text("PLAY", url, 3, "Session: " + id + "\r\n"))),
        200);
  }
  const auto snaps = srv.snapshots();
  ASSERT_EQ(snaps.size(), 2u);
  EXPECT_EQ(snaps[0].session_rows.size(), 2u);
  EXPECT_EQ(snaps[1].session_rows.size(), 2u);
  srv.stop();  // BYEs, every handle closed, threads joined
  EXPECT_FALSE(srv.run_on(0, [](server::StreamServer&) {})) << "worker 0 still runs";
  EXPECT_FALSE(srv.run_on(1, [](server::StreamServer&) {})) << "worker 1 still runs";
  EXPECT_TRUE(srv.snapshots().empty());
  srv.stop();  // idempotent
  // The server closed the peers' connections with its workers.
  for (auto& p : peers) {
    EXPECT_TRUE(p->wait_closed());
  }
}

TEST(StreamWorkersPorts, BasePortGivesPairsBasePlusTwoK) {
  net::SrtpLibraryGuard srtp;
  net::EventLoop loop;
  server::StreamServerOptions o = test::loopback_options();
  // An even base the kernel has just shown free (pairs above it may still be taken: then the
  // start error is the expected outcome, not a failure of the scheme).
  o.rtp_port = 47200;
  server::StreamWorkers srv(loop, o, 2);
  try {
    srv.start();
  } catch (const std::exception& e) {
    GTEST_SKIP() << "ports taken: " << e.what();
  }
  EXPECT_EQ(srv.rtp_port(0), 47200);
  EXPECT_EQ(srv.rtp_port(1), 47202);
  srv.stop();
  EXPECT_TRUE(loop.close().ok());
}

TEST(StreamWorkersSetup, ResolveWorkers) {
  EXPECT_EQ(server::resolve_workers(3), 3u);
  EXPECT_GE(server::resolve_workers(0), 1u);
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores > 0) {
    EXPECT_EQ(server::resolve_workers(0), std::min<std::size_t>(cores, 64));
  }
}

}  // namespace
}  // namespace predrop

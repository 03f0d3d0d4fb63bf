// The deadline pacer (issue 14 item 2): the server keeps each playing session in a queue keyed by
// the time it next has something to send and pumps only the sessions due by now. On a manual
// clock (test::FakeClock; nothing here sleeps): a run before a session's due time visits no
// session; a paused or torn-down session leaves the queue and costs nothing; PLAY puts it back at
// once; sessions due at the same time are pumped in one run (one shared sendmmsg batch); a
// server pumped only at its deadlines sends exactly what one pumped every millisecond sends; and
// with a pacing quantum the pacer runs at most once per quantum, sends the same packets, never
// late and at most a quantum early. The exact-deadline tests run with quantum 0.
//
// Counts are taken across run_pacing() calls with no loop iteration in between, so the real
// pacing timer (which may also fire while a request is pumped) cannot change them.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "allocation_counter.hpp"
#include "fake_clock.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/server/server_setup.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

using test::request_text;
using test::session_of;

constexpr std::uint64_t kNever = server::StreamSession::kNoDeadline;

// One server on its own FakeClock, with helpers to set up playing clients.
struct Bed {
  net::EventLoop loop;
  test::FakeClock clock;
  std::unique_ptr<server::StreamServer> srv;
  std::string url;

  struct Player {
    std::unique_ptr<test::PosixRtspPeer> rtsp;
    std::unique_ptr<net::UdpEndpoint> rtp, rtcp;
    std::string id;
  };

  explicit Bed(std::uint32_t quantum_us = 0) {
    auto options = test::loopback_options();
    options.pacing_quantum_us = quantum_us;
    srv = std::make_unique<server::StreamServer>(loop, clock, options);
    srv->start();
    url = "rtsp://127.0.0.1:" + std::to_string(srv->rtsp_address().port()) + "/sample";
  }
  ~Bed() {
    srv->stop();
    srv.reset();
    loop.run_nowait();
  }
  std::unique_ptr<net::UdpEndpoint> sink() {
    return std::move(net::UdpEndpoint::open(loop, net::SocketAddress::loopback_v4(0), {},
                                            [](auto, const auto&, auto) {})
                         .value());
  }
  int request(Player& p, std::string_view method, std::uint32_t cseq) {
    auto r = p.rtsp->request(request_text(method, url, cseq, "Session: " + p.id + "\r\n"));
    return r ? r->status : -1;
  }
  Player play() {
    Player p;
    p.rtp = sink();
    p.rtcp = sink();
    p.rtsp = std::make_unique<test::PosixRtspPeer>(loop, srv->rtsp_address());
    auto d = p.rtsp->request(request_text("DESCRIBE", url, 1));
    EXPECT_TRUE(d && d->status == 200);
    auto s = p.rtsp->request(request_text(
        "SETUP", url + "/trackID=0", 2,
        "Transport: RTP/SAVP;unicast;client_port=" + std::to_string(p.rtp->local_address().port()) +
            "-" + std::to_string(p.rtcp->local_address().port()) + "\r\n"));
    EXPECT_TRUE(s && s->status == 200);
    p.id = s ? session_of(*s) : "";
    EXPECT_EQ(request(p, "PLAY", 3), 200);
    return p;
  }
  std::uint64_t sent() const {
    std::uint64_t n = 0;
    for (const auto* s : srv->sessions())
      n += s->transmitter_stats().packets_sent;
    return n;
  }
  std::uint64_t pumps() const { return srv->stats().session_pumps; }
};

TEST(ServerPacing, NothingQueuedWithoutAPlayingSession) {
  Bed b;
  EXPECT_EQ(b.srv->next_pacing_due_us(), kNever);
  b.srv->run_pacing();
  EXPECT_EQ(b.pumps(), 0u);
}

TEST(ServerPacing, PumpsASessionOnlyAtItsDeadline) {
  Bed b;
  auto p = b.play();
  ASSERT_EQ(b.srv->sessions().size(), 1u);
  const server::StreamSession& s = *b.srv->sessions()[0];
  // PLAY made it due at once (the first block starts now): pumped by now, by the pacing timer
  // while the reply was pumped or by this run.
  b.srv->run_pacing();
  ASSERT_GT(b.sent(), 0u);
  for (int round = 0; round < 50; ++round) {
    const std::uint64_t due = b.srv->next_pacing_due_us();
    ASSERT_NE(due, kNever);
    ASSERT_GT(due, b.clock.now_us()) << "what was due is sent";
    ASSERT_EQ(due, s.next_due_us());
    // Just before: no session is visited, nothing is sent.
    b.clock.set_us(due - 1);
    const auto pumps = b.pumps();
    const auto sent = b.sent();
    b.srv->run_pacing();
    EXPECT_EQ(b.pumps(), pumps) << "round " << round;
    EXPECT_EQ(b.sent(), sent);
    // At the deadline: pumped once.
    b.clock.set_us(due);
    b.srv->run_pacing();
    EXPECT_EQ(b.pumps(), pumps + 1) << "round " << round;
  }
  EXPECT_GT(b.sent(), 10u);
}

TEST(ServerPacing, PausedAndTornDownSessionsLeaveTheQueue) {
  Bed b;
  auto one = b.play();
  auto two = b.play();
  ASSERT_EQ(b.srv->sessions().size(), 2u);
  b.srv->run_pacing();
  ASSERT_EQ(b.request(one, "PAUSE", 4), 200);
  const server::StreamSession* paused = nullptr;
  const server::StreamSession* playing = nullptr;
  for (const auto* s : b.srv->sessions())
    (s->id() == one.id ? paused : playing) = s;
  ASSERT_TRUE(paused != nullptr && playing != nullptr);
  EXPECT_EQ(paused->next_due_us(), kNever);
  const auto paused_sent = paused->transmitter_stats().packets_sent;
  // Two seconds in 1 ms steps: only the playing session is ever visited.
  std::uint64_t runs_with_pumps = 0;
  for (int ms = 0; ms < 2000; ++ms) {
    b.clock.advance_ms(1);
    const auto before = b.pumps();
    b.srv->run_pacing();
    ASSERT_LE(b.pumps() - before, 1u) << "only one session is playing";
    runs_with_pumps += b.pumps() - before;
    ASSERT_EQ(b.srv->next_pacing_due_us(), playing->next_due_us());
  }
  EXPECT_EQ(paused->transmitter_stats().packets_sent, paused_sent);
  EXPECT_GT(runs_with_pumps, 10u);
  EXPECT_LT(runs_with_pumps, 2000u) << "the playing session is not due every millisecond";
  // PLAY again: back in the queue (its block restarts now, so its next packet is due within
  // the block), and sent when that time comes.
  ASSERT_EQ(b.request(one, "PLAY", 5), 200);
  const std::uint64_t resumed = paused->next_due_us();
  ASSERT_NE(resumed, kNever);
  EXPECT_LE(resumed, b.clock.now_us() + 1'000'000);
  EXPECT_EQ(b.srv->next_pacing_due_us(), std::min(resumed, playing->next_due_us()));
  b.clock.set_us(std::max(resumed, b.clock.now_us()));
  b.srv->run_pacing();
  EXPECT_GT(paused->transmitter_stats().packets_sent, paused_sent);
  // TEARDOWN of both: nothing left to pace.
  ASSERT_EQ(b.request(one, "TEARDOWN", 6), 200);
  ASSERT_EQ(b.request(two, "TEARDOWN", 7), 200);
  EXPECT_EQ(b.srv->session_count(), 0u);
  EXPECT_EQ(b.srv->next_pacing_due_us(), kNever);
}

TEST(ServerPacing, SessionsDueTogetherArePumpedInOneRun) {
  Bed b;
  auto one = b.play();
  auto two = b.play();
  auto three = b.play();
  b.srv->run_pacing();  // all three started at the same (fake) time
  const std::uint64_t due = b.srv->next_pacing_due_us();
  for (const auto* s : b.srv->sessions())
    EXPECT_EQ(s->next_due_us(), due);
  b.clock.set_us(due);
  const auto wakeups = b.srv->stats().pacing_wakeups;
  const auto pumps = b.pumps();
  b.srv->run_pacing();
  EXPECT_EQ(b.srv->stats().pacing_wakeups, wakeups + 1);
  EXPECT_EQ(b.pumps(), pumps + 3) << "one run, one shared batch, three sessions";
}

TEST(ServerPacing, AnOverloadedRunStopsAtItsBudgetAndTheNextGoesOn) {
  // Forty sessions due at once, and a clock that moves 15 ms whenever it is read: the run checks
  // its 20 ms budget before each group of sessions, so it pumps one group, stops, counts the
  // cut and leaves the rest due; the next run (time standing still again) pumps the rest.
  Bed b;
  std::vector<Bed::Player> players;
  for (int i = 0; i < 40; ++i)
    players.push_back(b.play());
  b.srv->run_pacing();
  const std::uint64_t due = b.srv->next_pacing_due_us();
  b.clock.set_us(due);
  const auto pumps = b.pumps();
  b.clock.set_step_per_read_us(15'000);
  b.srv->run_pacing();
  b.clock.set_step_per_read_us(0);
  EXPECT_EQ(b.srv->stats().pacing_runs_cut, 1u);
  const auto first = b.pumps() - pumps;
  EXPECT_GT(first, 0u);
  EXPECT_LT(first, 40u);
  EXPECT_EQ(b.srv->next_pacing_due_us(), due) << "the rest is still due";
  // The cut run's clock reads moved time on by a few steps, so this run may find some of the
  // sessions it already pumped due again; the ones left are pumped in any case.
  b.srv->run_pacing();
  EXPECT_GE(b.pumps() - pumps, 40u) << "every session pumped over the two runs";
  EXPECT_EQ(b.srv->stats().pacing_runs_cut, 1u);
  EXPECT_GT(b.srv->next_pacing_due_us(), b.clock.now_us()) << "nothing left due";
}

TEST(ServerPacing, DeadlinesSendWhatAOneMillisecondTickSends) {
  // The same client on two servers: one pumped every millisecond (the old tick), one pumped
  // only at its deadlines. After 5 s of media both sent the same packets and reports.
  Bed tick;
  Bed deadline;
  auto a = tick.play();
  auto d = deadline.play();
  const std::uint64_t t0 = tick.clock.now_us();
  ASSERT_EQ(deadline.clock.now_us(), t0);
  const std::uint64_t end = t0 + 5'000'000;
  while (tick.clock.now_us() < end) {
    tick.srv->run_pacing();
    tick.clock.advance_ms(1);
  }
  tick.srv->run_pacing();
  std::uint64_t runs = 0;
  for (;;) {
    deadline.srv->run_pacing();
    ++runs;
    const std::uint64_t due = deadline.srv->next_pacing_due_us();
    if (due > end) break;
    deadline.clock.set_us(due);
  }
  deadline.clock.set_us(end);
  deadline.srv->run_pacing();
  const auto& ts = tick.srv->sessions()[0]->transmitter_stats();
  const auto& ds = deadline.srv->sessions()[0]->transmitter_stats();
  EXPECT_GT(ts.packets_sent, 100u);
  EXPECT_EQ(ds.packets_sent, ts.packets_sent);
  EXPECT_EQ(ds.packets_discarded, ts.packets_discarded);
  EXPECT_EQ(ds.stages, ts.stages);
  EXPECT_EQ(deadline.srv->sessions()[0]->current_stage(), tick.srv->sessions()[0]->current_stage());
  EXPECT_LT(runs, 5000u) << "fewer wake-ups than a 1 ms tick";
}

TEST(ServerPacing, AQuantumSendsTheSamePacketsNeverLateAndAtMostAQuantumEarly) {
  constexpr std::uint32_t kQuantum = 5000;
  Bed exact;
  Bed quantum(kQuantum);
  auto a = exact.play();
  auto q = quantum.play();
  auto q2 = quantum.play();  // a second session, so that runs serve more than one deadline
  const std::uint64_t end = exact.clock.now_us() + 5'000'000;
  for (;;) {
    exact.srv->run_pacing();
    const std::uint64_t due = exact.srv->next_pacing_due_us();
    if (due > end) break;
    exact.clock.set_us(due);
  }
  std::uint64_t runs = 0;
  std::uint64_t last_run = 0;
  for (;;) {
    quantum.srv->run_pacing();
    ++runs;
    const std::uint64_t next = quantum.srv->next_pacing_run_us();
    ASSERT_NE(next, kNever);
    ASSERT_GE(next, quantum.clock.now_us() + kQuantum) << "at most one run per quantum";
    // A quantum before the earliest deadline, unless the last run was too recent for that.
    EXPECT_EQ(next, std::max(quantum.srv->next_pacing_due_us() - kQuantum,
                             quantum.clock.now_us() + kQuantum));
    last_run = quantum.clock.now_us();
    if (next > end) break;
    quantum.clock.set_us(next);
  }
  // The quantum's last run sent what was due by a quantum after it.
  exact.clock.set_us(std::max(exact.clock.now_us(), last_run + kQuantum));
  exact.srv->run_pacing();
  const auto& es = exact.srv->sessions()[0]->transmitter_stats();
  for (const auto* s : quantum.srv->sessions()) {
    const auto& qs = s->transmitter_stats();
    EXPECT_EQ(qs.packets_sent, es.packets_sent);
    EXPECT_EQ(qs.packets_discarded, es.packets_discarded);
    EXPECT_EQ(qs.stages, es.stages);
    EXPECT_EQ(qs.max_lag_us, 0u) << "never sent after its time";
    EXPECT_LE(qs.max_lead_us, kQuantum) << "never more than a quantum early";
    EXPECT_GT(qs.max_lead_us, 0u) << "the quantum did send ahead";
  }
  EXPECT_EQ(es.max_lead_us, 0u) << "quantum 0 sends nothing early";
  EXPECT_GT(es.packets_sent, 100u);
  EXPECT_LE(runs, 5'000'000 / kQuantum + 2);
  EXPECT_LT(runs, exact.srv->stats().pacing_wakeups);
}

TEST(ServerPacing, LateBlocksOfEndedSessionsStayInTheServerCounter) {
  // A session paced 100 ms late has late blocks; after its TEARDOWN the per-session line is gone
  // but predrop_late_blocks_total still counts them.
  Bed b;
  auto p = b.play();
  b.srv->run_pacing();
  b.clock.set_us(b.srv->next_pacing_due_us() + 100'000);
  b.srv->run_pacing();
  const std::uint64_t late = b.srv->sessions()[0]->transmitter_stats().late_stages;
  ASSERT_GE(late, 1u);
  const std::string live = server::render_metrics(*b.srv);
  EXPECT_NE(live.find("predrop_late_blocks_total " + std::to_string(late) + "\n"),
            std::string::npos)
      << live;
  ASSERT_EQ(b.request(p, "TEARDOWN", 4), 200);
  const std::string ended = server::render_metrics(*b.srv);
  EXPECT_EQ(ended.find("predrop_session_late_blocks_total{"), std::string::npos);
  EXPECT_NE(ended.find("predrop_late_blocks_total " + std::to_string(late) + "\n"),
            std::string::npos)
      << ended;
}

// The whole server in steady state allocates nothing per packet (docs/design.md §5): two playing
// sessions, 1 ms steps of the manual clock, the pacer run at each, the players' sockets drained
// by the loop. After two blocks of warm-up, the middle of the third block (its start and its end
// with their plans and decisions left out; the SR half a block in is inside) is counted with the
// counting operator new of tests/support/allocation_counter.cpp.
TEST(ServerPacing, SteadyStatePacingAllocatesNothing) {
  {
    test::AllocationScope wired;  // the counter sees this binary's allocations
    auto* volatile probe = new int(1);
    delete probe;
    ASSERT_EQ(wired.count(), 1u);
  }
  Bed b;
  auto one = b.play();
  auto two = b.play();
  ASSERT_EQ(b.srv->sessions().size(), 2u);
  const auto step = [&b] {
    b.clock.advance_ms(1);
    b.srv->run_pacing();
    b.loop.run_nowait();
  };
  for (int ms = 0; ms < 2050; ++ms)
    step();
  const auto sent = b.sent();
  std::size_t allocations = 0;
  {
    test::AllocationScope scope;
    for (int ms = 0; ms < 900; ++ms)
      step();
    allocations = scope.count();
  }
  EXPECT_GT(b.sent(), sent + 100) << "the counted window sent media";
  EXPECT_EQ(allocations, 0u) << "operator new calls in 900 ms of pacing two sessions";
}

}  // namespace
}  // namespace predrop

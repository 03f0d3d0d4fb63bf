// detail::Pacer (server/src/pacer.hpp): the deadline queue over a server's sessions. A run pumps
// only the sessions due by now plus the quantum; a released session costs nothing; the timer
// sleeps until the next run (at most 50 ms, 1 ms while a queue is polled); a session whose pump
// throws is handed back for removal, the others go on; a run that overstays its budget stops.
// Real StreamSessions on loopback sockets, a FakeClock; nothing sleeps.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

#include "fake_clock.hpp"
#include "pacer.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "server_test_util.hpp"
#include "session_start.hpp"

namespace predrop {
namespace {

using server::detail::Pacer;
using server::detail::SessionEntry;

constexpr std::uint64_t kNever = server::StreamSession::kNoDeadline;

struct Bed {
  net::EventLoop loop;
  test::FakeClock clock;
  server::ServerStats stats;
  server::CallbackGuard guard{"test"};
  std::function<void(server::CallbackKind)> fault;
  std::unique_ptr<net::UdpEndpoint> rtp, rtcp, sink;
  std::unique_ptr<chain::SendBatch> batch;
  Pacer pacer{true, 5000};

  Bed() {
    auto open = [&] {
      return std::move(net::UdpEndpoint::open(loop, net::SocketAddress::loopback_v4(0), {},
                                              [](auto, const auto&, auto) {})
                           .value());
    };
    rtp = open();
    rtcp = open();
    sink = open();
    batch = std::make_unique<chain::SendBatch>(*rtp, 2048);
    pacer.reserve(8);
  }

  // A playing session of the sample's video track to the sink.
  std::unique_ptr<SessionEntry> playing(const std::string& id) {
    auto e = std::make_unique<SessionEntry>();
    e->id = id;
    e->feedback = true;
    server::SessionTrack t;
    t.rtp_destination = sink->local_address();
    t.ssrc = 7;
    e->tracks.push_back(t);
    auto options = test::loopback_options();
    options.srtp.reset();
    e->session = std::make_unique<server::StreamSession>(
        std::make_shared<media::FileSource>(test::sample_media(), false),
        server::detail::session_transport(*e, *rtp, *rtcp, nullptr), clock,
        server::detail::session_config(*e, options),
        server::detail::session_controller(*e, options), nullptr);
    e->session->play(clock.now_us());
    return e;
  }
  std::vector<SessionEntry*> run() {
    return pacer.run(clock.now_us(), server::detail::PacerRun{clock, guard, fault, stats, *batch});
  }
};

TEST(Pacer, NothingQueuedSleepsTheLongestAndPumpsNothing) {
  Bed b;
  EXPECT_EQ(b.pacer.next_due(), kNever);
  EXPECT_EQ(b.pacer.next_run(), kNever);
  EXPECT_EQ(b.pacer.sleep_ms(b.clock.now_us(), false), 50u);
  EXPECT_EQ(b.pacer.sleep_ms(b.clock.now_us(), true), 1u) << "a queue to poll";
  EXPECT_TRUE(b.run().empty());
  EXPECT_EQ(b.stats.pacing_wakeups, 1u);
  EXPECT_EQ(b.stats.session_pumps, 0u);
}

TEST(Pacer, ASessionIsPumpedOnlyWhenDueWithinTheQuantum) {
  Bed b;
  auto e = b.playing("a");
  const std::uint64_t due = b.pacer.reschedule(*e);
  EXPECT_EQ(due, e->session->next_due_us());
  EXPECT_EQ(b.pacer.next_due(), due);
  (void)b.run();  // due at once: the first block starts at PLAY
  EXPECT_EQ(b.stats.session_pumps, 1u);
  const std::uint64_t next = b.pacer.next_due();
  ASSERT_NE(next, kNever);
  EXPECT_GT(next, b.clock.now_us() + 5000) << "never again within this run's horizon";
  // A run more than a quantum before the deadline visits nobody.
  b.clock.set_us(next - 5001);
  (void)b.run();
  EXPECT_EQ(b.stats.session_pumps, 1u);
  b.clock.set_us(next - 5000);
  (void)b.run();
  EXPECT_EQ(b.stats.session_pumps, 2u);
  // The next run comes a quantum after this one at the earliest.
  EXPECT_GE(b.pacer.next_run(), b.clock.now_us() + 5000);
}

TEST(Pacer, AReleasedSessionCostsNothing) {
  Bed b;
  auto e = b.playing("a");
  (void)b.pacer.reschedule(*e);
  b.pacer.release(*e);
  EXPECT_EQ(e->slot, SessionEntry::kNoSlot);
  EXPECT_EQ(b.pacer.next_due(), kNever);
  (void)b.run();
  EXPECT_EQ(b.stats.session_pumps, 0u);
}

TEST(Pacer, ASessionThatThrowsIsHandedBackAndTheOthersGoOn) {
  Bed b;
  auto good = b.playing("good");
  auto bad = b.playing("bad");
  (void)b.pacer.reschedule(*good);
  (void)b.pacer.reschedule(*bad);
  int calls = 0;
  b.fault = [&](server::CallbackKind) {
    if (++calls == 2) throw std::runtime_error("injected");
  };
  auto failed = b.run();
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(b.guard.count(server::CallbackKind::kTimer), 1u);
  EXPECT_EQ(b.stats.session_pumps, 2u);
  const SessionEntry* thrown = failed[0];
  const SessionEntry* other = thrown == good.get() ? bad.get() : good.get();
  EXPECT_GT(other->session->transmitter_stats().packets_sent +
                other->session->transmitter_stats().packets_discarded,
            0u);
}

TEST(Pacer, ARunStopsAtItsBudget) {
  Bed b;
  std::vector<std::unique_ptr<SessionEntry>> entries;
  for (int i = 0; i < 4; ++i) {
    entries.push_back(b.playing("s" + std::to_string(i)));
    (void)b.pacer.reschedule(*entries.back());
  }
  // Every clock read moves time on: the budget runs out before the second group.
  b.clock.set_step_per_read_us(Pacer::kRunBudgetUs + 1);
  (void)b.run();
  b.clock.set_step_per_read_us(0);
  EXPECT_EQ(b.stats.pacing_runs_cut, 1u);
  EXPECT_LT(b.stats.session_pumps, 4u);
}

}  // namespace
}  // namespace predrop

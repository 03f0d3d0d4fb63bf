// GradientPeer (ddl/capi) with a real DdlRelay on one loop, real UDP on 127.0.0.1 and SRTP:
// two peers get the exact mean of their gradients at R = 0 and report P for every stage; a peer
// that fell behind stops at the job's last stage; a peer without a relay ends with the "no
// answer" error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "predrop/ddl/capi/gradient_peer.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/ddl/relay.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"

namespace predrop {
namespace {

constexpr std::uint32_t kElements = 1000;  // 4 chunks of 256, the last one 232 long
constexpr std::uint32_t kStages = 6;

float value(std::uint32_t peer, std::uint32_t stage, std::uint32_t i) {
  return static_cast<float>(peer + 1) * 0.5f + static_cast<float>(i) * 1e-3f +
         static_cast<float>(stage);
}

class Reports final : public ddl::DdlRelayListener {
 public:
  void on_report(const ddl::DdlRelayReportRow& row) override {
    if (row.reported) ++reported;
  }
  void on_finished(const core::Status& st) override { finished = st; }
  int reported = 0;
  std::optional<core::Status> finished;
};

// A relay on loopback for two peers at R = 0, with stage deadline `deadline_ms`.
ddl::DdlRelayOptions two_peer_relay(const ddl::JobKey& key, std::uint32_t deadline_ms) {
  ddl::DdlRelayOptions ro;
  ro.listen = net::SocketAddress::loopback_v4(0);
  ro.workers = 2;
  ro.policy.policy = "fixed";
  ro.policy.fixed_rate = 0.0;
  ro.stage_deadline_ms = deadline_ms;
  ro.key = key;
  return ro;
}

// Peer `rank` of such a relay's job, on a loopback port of its own.
ddl::capi::GradientPeerOptions peer_of(const ddl::DdlRelay& relay, const ddl::JobKey& key,
                                       std::uint32_t rank) {
  ddl::capi::GradientPeerOptions o;
  o.relay = relay.local_address();
  o.bind = net::SocketAddress::loopback_v4(0);
  o.key = key;
  o.rank = static_cast<std::uint16_t>(rank);
  o.tensor_elements = kElements;
  return o;
}

TEST(GradientPeer, TwoPeersGetTheExactMeanAndReportEveryStage) {
  net::SrtpLibraryGuard srtp;
  net::EventLoop loop;
  const net::MonotonicClock clock;
  const ddl::JobKey key = ddl::generate_job_key(wire::SrtpSuite::AeadAes128Gcm);
  const ddl::DdlRelayOptions ro = two_peer_relay(key, 5000);
  Reports reports;
  ddl::DdlRelay relay(loop, clock, ro, &reports);
  ASSERT_TRUE(relay.start().ok());

  struct Peer {
    std::unique_ptr<ddl::capi::GradientPeer> peer;
    std::vector<float> gradient;
    std::uint32_t stages = 0;
    double worst = 0.0;
    std::optional<core::Status> done;
    std::optional<ddl::capi::GradientJob> job;
  };
  std::vector<Peer> peers(2);
  for (std::uint32_t p = 0; p < 2; ++p) {
    ddl::capi::GradientPeerOptions o = peer_of(relay, key, p);
    Peer& me = peers[p];
    me.gradient.resize(kElements);
    auto submit = [&me, p](std::uint32_t stage) {
      for (std::uint32_t i = 0; i < kElements; ++i)
        me.gradient[i] = value(p, stage, i);
      auto s = me.peer->submit(me.gradient);
      ASSERT_TRUE(s.ok()) << s.error().message;
      EXPECT_EQ(*s, stage);
    };
    me.peer = std::make_unique<ddl::capi::GradientPeer>(
        loop, clock, o,
        [&me, submit](const ddl::capi::GradientJob& j) {
          me.job = j;
          submit(j.start_stage);
        },
        [&me, submit](const ddl::capi::GradientStage& st, std::span<const float> avg) {
          EXPECT_EQ(st.close_reason, 0);
          EXPECT_EQ(st.received, 4U);
          EXPECT_EQ(st.filled, 0U);
          EXPECT_EQ(st.contributors, 2U);
          // The stage's timeline (one clock, in the order things happen).
          EXPECT_GT(st.begin_us, 0U);
          EXPECT_LE(st.begin_us, st.uplink_sent_us);
          EXPECT_GT(st.pdsc_us, 0U);
          EXPECT_LE(st.first_chunk_us, st.last_chunk_us);
          EXPECT_GT(st.first_chunk_us, 0U);
          EXPECT_LE(st.last_chunk_us, st.closed_us);
          EXPECT_LE(st.uplink_sent_us, st.closed_us);
          for (std::uint32_t i = 0; i < kElements; ++i) {
            const double mean = (static_cast<double>(value(0, st.stage, i)) +
                                 static_cast<double>(value(1, st.stage, i))) /
                                2.0;
            me.worst = std::max(me.worst, std::abs(avg[i] - mean));
          }
          // A second submit while the stage is being handed over would be refused; P is fine.
          EXPECT_TRUE(me.peer->report(st.stage, 0.01).ok());
          EXPECT_FALSE(me.peer->report(st.stage, 0.01).ok());  // once per stage
          ++me.stages;
          if (me.stages < kStages) {
            submit(st.stage + 1);
          } else {
            me.peer->close();
          }
        },
        [&me](const core::Status& st) { me.done = st; });
    ASSERT_TRUE(me.peer->start().ok());
  }
  loop.run();
  for (const Peer& me : peers) {
    ASSERT_TRUE(me.done.has_value());
    EXPECT_TRUE(me.done->ok()) << me.done->error().message;
    EXPECT_EQ(me.stages, kStages);
    EXPECT_LE(me.worst, 1e-6);
    ASSERT_TRUE(me.job.has_value());
    EXPECT_EQ(me.job->chunks, 4U);
    EXPECT_EQ(me.job->workers, 2U);
  }
  EXPECT_EQ(reports.reported, 2 * static_cast<int>(kStages));
  ASSERT_TRUE(reports.finished.has_value());
}

class StagesClosed final : public ddl::DdlRelayListener {
 public:
  void on_stage(const ddl::DdlRelayStageRow& row) override {
    newest = std::max(newest, row.stage);
    ++closed;
  }
  std::uint32_t newest = 0;
  int closed = 0;
};

// A job of kJobStages stages. Peer 1 submits stage 0 and then falls behind: it submits its next
// stage only after peer 0 ran the whole job (the relay closed stages 1.. at the deadline without
// peer 1) and left. Peer 1 skips ahead, past the job's last stage; it and every stage its loop
// still submits close at once (close_reason 3, nothing received, own fill), nothing of them goes
// to the relay, and the relay runs no stage past the last one. Without the stage count the
// peer would run stages 20.. alone with the relay (the job longer for it than for the others),
// or wait for a relay that has gone.
TEST(GradientPeer, ALaggingPeerStopsAtTheJobsLastStage) {
  constexpr std::uint32_t kJobStages = 20;
  net::SrtpLibraryGuard srtp;
  net::EventLoop loop;
  const net::MonotonicClock clock;
  const ddl::JobKey key = ddl::generate_job_key(wire::SrtpSuite::AeadAes128Gcm);
  ddl::DdlRelayOptions ro = two_peer_relay(key, 20);
  ro.missing_fill = ddl::MissingPolicy::kOwn;
  StagesClosed relay_stages;
  ddl::DdlRelay relay(loop, clock, ro, &relay_stages);
  ASSERT_TRUE(relay.start().ok());

  struct Peer {
    std::unique_ptr<ddl::capi::GradientPeer> peer;
    std::vector<float> gradient = std::vector<float>(kElements, 1.0F);
    std::vector<ddl::capi::GradientStage> rows;
    std::optional<core::Status> done;
  };
  std::vector<Peer> peers(2);
  auto submit = [&peers](std::uint32_t p) {
    auto s = peers[p].peer->submit(peers[p].gradient);
    ASSERT_TRUE(s.ok()) << s.error().message;
  };
  // Peer 1's next step, from the loop rather than inside its stage callback: a stage past the
  // end closes within submit() itself.
  net::Timer resume(loop, [&peers, &submit] {
    if (peers[1].rows.size() == kJobStages) {
      peers[1].peer->close();
    } else {
      submit(1);
    }
  });
  for (std::uint32_t p = 0; p < 2; ++p) {
    ddl::capi::GradientPeerOptions o = peer_of(relay, key, p);
    o.relay_silence_ms = 3000;
    o.stages = kJobStages;
    Peer& me = peers[p];
    me.peer = std::make_unique<ddl::capi::GradientPeer>(
        loop, clock, o, [&submit, p](const ddl::capi::GradientJob&) { submit(p); },
        [&peers, &submit, &resume, p](const ddl::capi::GradientStage& st,
                                      std::span<const float> avg) {
          Peer& self = peers[p];
          self.rows.push_back(st);
          if (st.close_reason == 3) {
            // Nothing received: the own-fill gives back this peer's own gradient.
            EXPECT_EQ(avg[0], 1.0F);
          }
          if (p == 1) {
            // After stage 0 peer 1 waits for peer 0 to leave (below).
            if (self.rows.size() > 1) resume.start(0);
          } else if (self.rows.size() == kJobStages) {
            self.peer->close();
          } else {
            submit(p);
          }
        },
        [&peers, &resume, p](const core::Status& st) {
          peers[p].done = st;
          // Late enough that peer 1 has read the relay's PDSCs up to the last stage.
          if (p == 0) resume.start(100);
        });
    ASSERT_TRUE(me.peer->start().ok());
  }
  loop.run();
  for (const Peer& me : peers) {
    ASSERT_TRUE(me.done.has_value());
    EXPECT_TRUE(me.done->ok()) << me.done->error().message;
    EXPECT_EQ(me.rows.size(), kJobStages);
  }
  ASSERT_EQ(peers[1].rows.size(), kJobStages);
  EXPECT_EQ(peers[1].rows[0].stage, 0U);
  EXPECT_EQ(peers[1].rows[0].close_reason, 0);
  for (std::size_t i = 1; i < peers[1].rows.size(); ++i) {
    const ddl::capi::GradientStage& st = peers[1].rows[i];
    EXPECT_GE(st.stage, kJobStages) << "row " << i;
    EXPECT_EQ(st.close_reason, 3) << "stage " << st.stage;
    EXPECT_EQ(st.received, 0U);
    EXPECT_EQ(st.filled, 4U);
  }
  EXPECT_EQ(peers[0].rows.back().stage, kJobStages - 1);
  EXPECT_EQ(relay_stages.newest, kJobStages - 1);
  EXPECT_EQ(relay_stages.closed, static_cast<int>(kJobStages));
}

TEST(GradientPeer, NoRelayEndsWithNoAnswer) {
  net::SrtpLibraryGuard srtp;
  net::EventLoop loop;
  const net::MonotonicClock clock;
  ddl::capi::GradientPeerOptions o;
  // A port nobody listens on: bind one, close it, use its number.
  std::uint16_t port = 0;
  {
    auto probe = net::UdpEndpoint::open(loop, net::SocketAddress::loopback_v4(0), {},
                                        [](auto, const auto&, auto) {});
    ASSERT_TRUE(probe.ok());
    port = probe.value()->local_address().port();
    probe.value()->close();
  }
  o.relay = net::SocketAddress::loopback_v4(port);
  o.bind = net::SocketAddress::loopback_v4(0);
  o.key = ddl::generate_job_key(wire::SrtpSuite::AeadAes128Gcm);
  o.tensor_elements = 10;
  o.join_timeout_ms = 300;
  std::optional<core::Status> done;
  ddl::capi::GradientPeer peer(
      loop, clock, o, [](const ddl::capi::GradientJob&) { ADD_FAILURE() << "started"; },
      [](const ddl::capi::GradientStage&, std::span<const float>) {},
      [&done](const core::Status& st) { done = st; });
  ASSERT_TRUE(peer.start().ok());
  EXPECT_FALSE(peer.submit(std::vector<float>(10)).ok());  // not started
  loop.run();
  ASSERT_TRUE(done.has_value());
  ASSERT_FALSE(done->ok());
  EXPECT_NE(done->error().message.find("no answer from the relay"), std::string::npos)
      << done->error().message;
  EXPECT_FALSE(peer.submit(std::vector<float>(10)).ok());  // ended: the reason again
}

}  // namespace
}  // namespace predrop

// Streaming mode end to end on loopback: the real server (RTSP, SRTP, pacing, pre-discard, the
// exact rule) and the real measuring client (SRTP, H.264 decode, PSNR vs the reference, PDFB) in
// one libuv loop, both on one FakeClock: the test moves time 1 ms a step, runs the server's pacer
// and the client's timer work, and lets the loop carry every datagram in between, so a packet
// arrives at the fake time it was sent and every figure is the same on every run (nothing sleeps,
// no wall-clock gap is asserted). The client impairs two stages on receipt so the rule must
// react: a quality drop (stage 3) and a reception-period stretch (stage 4).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fake_clock.hpp"
#include "predrop/client/measuring_client.hpp"
#include "predrop/core/exact_rule.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/server/stream_server.hpp"

namespace predrop {
namespace {

constexpr std::uint32_t kStages = 6;
// A paced block of 1 s of media arrives over its duration: first to last packet between these
// (its last picture is sent one frame period before the block's end; arrivals fall on 1 ms steps).
constexpr double kPacedMinUs = 900'000;
constexpr double kPacedMaxUs = 1'000'000;

core::RuleParams rule() {
  core::RuleParams p;
  p.rp = 0.05;
  p.rp1 = 0.05;
  p.rp2 = 0.05;
  p.rmax = 0.5;
  p.t1 = core::Threshold::absolute(0.5);
  p.t2 = core::Threshold::fraction(0.05);
  return p;
}

struct Row {
  std::uint32_t stage;
  bool reported;
  core::StageReport report;
  core::DecisionKind decision;
  double rate;
  double next_rate;
  std::size_t packets, discarded, sent;
  std::string_view reason;
};

class StreamE2E : public ::testing::Test {
 protected:
  void run(std::vector<client::Impairment> impairments, std::string policy = "basic") {
    media::PacketizeOptions po;
    po.block = {media::BlockSize::Unit::kDuration, 1'000'000};
    auto m = media::MediaFile::open(PREDROP_TEST_SAMPLE, po);
    ASSERT_TRUE(m.ok()) << m.error().message;
    server::StreamServerOptions o;
    o.rtsp_listen = net::SocketAddress::loopback_v4(0);
    o.bind_ip = "127.0.0.1";
    o.streams.push_back({"sample", *m});
    o.policy.policy = policy;
    o.policy.rule = rule();
    o.discard = core::DiscardPolicy::kPriority;
    o.max_stages = kStages;
    o.block_attribute = "duration_us=1000000;payload=1200";
    server::StreamServer srv(loop_, clock_, o, [this](const server::BlockTrace& t) {
      rows_.push_back(Row{t.stage, t.reported, t.report, t.decision, t.rate, t.next_rate, t.packets,
                          t.discarded, t.sent, t.reason});
    });
    srv.start();
    client::ClientOptions co;
    co.url = "rtsp://127.0.0.1:" + std::to_string(srv.rtsp_address().port()) + "/sample";
    co.reference = PREDROP_TEST_SAMPLE;
    co.max_blocks = kStages;
    co.impairments = std::move(impairments);
    co.kernel_timestamps = false;
    co.pause_at_ms = pause_.at_ms;
    co.pause_ms = pause_.length_ms;
    co.alert_ms = alert_ms_;
    client::MeasuringClient c(
        loop_, clock_, co,
        [this](const client::BlockResult& r) {
          blocks_.push_back(r);
          reported_at_us_.push_back(clock_.now_us());
        },
        [&](const core::Status& st, const client::ClientSummary& s) {
          status_ = st;
          summary_ = s;
          server_stats_ = srv.stats();
          srv.stop();
        });
    c.start();
    drive(srv, c);
  }

  // Steps of 1 ms until the client is done: three loop passes carry what was sent (a packet, the
  // report it completes, the server's answer), then time moves on and the server's pacer and the
  // client's timer work run at the new time. Then the loop runs out (TEARDOWN, closes).
  void drive(server::StreamServer& srv, client::MeasuringClient& c) {
    constexpr std::uint64_t kMaxSteps = 20'000;
    for (std::uint64_t step = 0; !status_ && step < kMaxSteps; ++step) {
      for (int pass = 0; pass < 3; ++pass) {
        loop_.run_nowait();
      }
      clock_.advance_ms(1);
      srv.run_pacing();
      c.poll();
    }
    EXPECT_TRUE(status_.has_value()) << "not done after " << kMaxSteps << " ms of fake time";
    if (!status_) srv.stop();
    loop_.run();
  }

  net::EventLoop loop_;
  test::FakeClock clock_;
  std::vector<Row> rows_;
  std::vector<client::BlockResult> blocks_;
  std::vector<std::uint64_t> reported_at_us_;
  client::PausePlan pause_;
  std::uint32_t alert_ms_ = 0;
  server::ServerStats server_stats_;
  std::optional<core::Status> status_;
  client::ClientSummary summary_;
};

TEST_F(StreamE2E, EveryBlockReportedAndRuleFollowedOverRealStack) {
  run({client::Impairment{3, 0.4, 0}, client::Impairment{4, 0.0, 400}});
  ASSERT_TRUE(status_.has_value());
  ASSERT_TRUE(status_->ok()) << status_->error().message;
  ASSERT_EQ(blocks_.size(), kStages);
  EXPECT_EQ(summary_.srtp_failures, 0u);

  // The server got a report for every block, in order, none missing.
  ASSERT_EQ(rows_.size(), kStages);
  for (std::uint32_t s = 0; s < kStages; ++s) {
    EXPECT_EQ(rows_[s].stage, s);
    EXPECT_TRUE(rows_[s].reported) << "stage " << s;
    // The server's own count of what it sent equals what the client was told to expect.
    EXPECT_EQ(rows_[s].report.packets_announced, rows_[s].sent);
    EXPECT_NEAR(static_cast<double>(rows_[s].discarded),
                rows_[s].rate * static_cast<double>(rows_[s].packets), 1.0);
  }

  // Replaying the reports through the exact rule gives the server's decisions, one for one.
  core::ExactRule replay(rule());
  for (const Row& r : rows_) {
    auto d = replay.on_report(r.report);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->kind, r.decision) << "stage " << r.stage;
    EXPECT_DOUBLE_EQ(d->rate, r.next_rate) << "stage " << r.stage;
  }

  // Stage 3 lost 40 % of its packets on receipt: quality fell, so R went down (claim 2).
  EXPECT_LT(rows_[3].report.performance, rows_[2].report.performance - 0.5);
  EXPECT_EQ(rows_[3].decision, core::DecisionKind::kDecrease);
  EXPECT_LT(rows_[3].report.packets_received, rows_[3].report.packets_announced);
  // Stage 4's second half arrived 400 ms late: L is its paced length plus exactly those 400 ms,
  // more than 5 % over stage 3's with quality back up, so R went up (claim 3).
  const double stretched = rows_[4].report.reception_period_us - 400'000;
  EXPECT_GE(stretched, kPacedMinUs);
  EXPECT_LE(stretched, kPacedMaxUs);
  EXPECT_EQ(rows_[4].decision, core::DecisionKind::kIncrease);

  // Blocks sent whole and received whole decode to the reference exactly (the PSNR cap); the
  // pacer spreads each block over its duration.
  for (const auto& b : blocks_) {
    if (b.rate == 0.0 && b.received == b.sent && b.stage != 3) {
      EXPECT_DOUBLE_EQ(b.psnr_db, 60.0) << "block " << b.stage;
    }
    if (b.stage != 4) {
      EXPECT_GE(b.reception_period_ms * 1000, kPacedMinUs) << "block " << b.stage;
      EXPECT_LE(b.reception_period_ms * 1000, kPacedMaxUs) << "block " << b.stage;
    }
  }
  EXPECT_TRUE(loop_.close().ok());
}

// RFC 8867 §5.8's pause: the client PAUSEs 2.5 s after PLAY and PLAYs again 3 s later; the
// server keeps the session and goes on where it stopped. Every block is still reported once, in
// order, one of them about 3 s after the one before, and the blocks after the resume are whole.
TEST_F(StreamE2E, APausedSessionResumesWhereItStoppedAndReportsEveryBlock) {
  pause_ = {2'500, 3'000};
  run({});
  ASSERT_TRUE(status_.has_value());
  ASSERT_TRUE(status_->ok()) << status_->error().message;
  ASSERT_EQ(blocks_.size(), kStages);
  std::uint64_t longest_gap = 0;
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    EXPECT_EQ(blocks_[i].stage, i);
    if (i > 0) longest_gap = std::max(longest_gap, reported_at_us_[i] - reported_at_us_[i - 1]);
  }
  EXPECT_GE(longest_gap, 2'500'000u);  // the pause less the part of a block already there
  EXPECT_LT(longest_gap, 5'000'000u);
  for (std::uint32_t s = 3; s < kStages; ++s) {
    EXPECT_EQ(blocks_[s].received, blocks_[s].sent) << "block " << s;
    EXPECT_EQ(blocks_[s].network_loss, 0.0) << "block " << s;
  }
  EXPECT_TRUE(loop_.close().ok());
}

// The block in flight at the PAUSE arrives cut short (what came before it); its report reads
// like heavy network loss. The server knows it paused that stage and keeps the report from the
// policy: on this path, which has no bottleneck, `capacity` stays at R = 0 after the resume
// (fed the cut block, it took the received rate as the path's and discarded from then on).
TEST_F(StreamE2E, TheBlockAPauseCutIsNoReadingOfThePath) {
  pause_ = {2'500, 3'000};
  run({}, "capacity");
  ASSERT_TRUE(status_.has_value());
  ASSERT_TRUE(status_->ok()) << status_->error().message;
  ASSERT_EQ(rows_.size(), kStages);
  std::size_t paused = 0;
  for (const Row& r : rows_) {
    if (r.decision != core::DecisionKind::kPaused) continue;
    ++paused;
    EXPECT_EQ(r.stage, 2u) << "the block 2.0-3.0 s was in flight at 2.5 s";
    EXPECT_LT(r.report.packets_received, r.report.packets_announced) << "cut short";
    EXPECT_NE(r.reason.find("PAUSE"), std::string_view::npos);
  }
  EXPECT_EQ(paused, 1u);
  for (const Row& r : rows_) {
    EXPECT_EQ(r.rate, 0.0) << "stage " << r.stage << ": " << r.reason;
    EXPECT_EQ(r.next_rate, 0.0) << "stage " << r.stage << ": " << r.reason;
  }
  EXPECT_TRUE(loop_.close().ok());
}

// The interim alert over the real stack (docs/design.md §2.9): stage 3's second half arrives
// 400 ms late, so its packets read a 400 ms queue while the block is still being sent. The
// client raises one PDAL for stage 3 (and none for the clean stages); the server reads it,
// `capacity` takes it (the path was open until then: an onset) and the server re-plans the rest
// of stage 3 at once, which it could otherwise do only after stage 3's report, a block later.
TEST_F(StreamE2E, AnInterimAlertReplansTheBlockInFlight) {
  alert_ms_ = 80;
  run({client::Impairment{3, 0.0, 400}}, "capacity");
  ASSERT_TRUE(status_.has_value());
  ASSERT_TRUE(status_->ok()) << status_->error().message;
  ASSERT_EQ(rows_.size(), kStages);
  EXPECT_EQ(summary_.alerts, 1u);
  EXPECT_EQ(server_stats_.alerts, 1u);
  EXPECT_EQ(server_stats_.alerts_taken, 1u);
  // Stages 0-2 went whole; stage 3 started whole and its rest was cut after the alert.
  for (std::uint32_t s = 0; s < 3; ++s) {
    EXPECT_EQ(rows_[s].discarded, 0u) << "stage " << s;
  }
  EXPECT_EQ(rows_[3].rate, 0.0) << "planned whole";
  EXPECT_GT(rows_[3].discarded, 0u) << "re-planned after the alert";
  EXPECT_TRUE(loop_.close().ok());
}

// With alerts off (ClientOptions' default 0; predrop-client --alert-ms 0) the same impairment
// raises no alert and stage 3 goes whole: the server can only answer its report, after the block.
TEST_F(StreamE2E, WithoutAlertsTheBlockInFlightGoesAsPlanned) {
  run({client::Impairment{3, 0.0, 400}}, "capacity");
  ASSERT_TRUE(status_.has_value());
  ASSERT_TRUE(status_->ok()) << status_->error().message;
  ASSERT_EQ(rows_.size(), kStages);
  EXPECT_EQ(summary_.alerts, 0u);
  EXPECT_EQ(server_stats_.alerts, 0u);
  EXPECT_EQ(rows_[3].discarded, 0u);
  EXPECT_TRUE(loop_.close().ok());
}

TEST(ParsePause, TakesSecondsAndRefusesNonsense) {
  auto p = client::parse_pause("40,20");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->at_ms, 40'000u);
  EXPECT_EQ(p->length_ms, 20'000u);
  auto q = client::parse_pause("2.5,0.25");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->at_ms, 2'500u);
  EXPECT_EQ(q->length_ms, 250u);
  for (const char* bad :
       {"", "40", "40,", ",20", "0,20", "40,0", "-1,20", "40,20x", "a,b", "1e9,1", "40;20"}) {
    EXPECT_FALSE(client::parse_pause(bad).ok()) << bad;
  }
}

// A client that sends no feedback (like ffplay) is served at the fixed player rate and the
// server's controller never moves, with player_adaptation fixed (the default, rr, is tested in
// tests/server/test_server_rr_adaptation.cpp).
TEST_F(StreamE2E, PlayerWithoutFeedbackKeepsFixedRate) {
  media::PacketizeOptions po;
  auto m = media::MediaFile::open(PREDROP_TEST_SAMPLE, po);
  ASSERT_TRUE(m.ok());
  server::StreamServerOptions o;
  o.rtsp_listen = net::SocketAddress::loopback_v4(0);
  o.bind_ip = "127.0.0.1";
  o.streams.push_back({"sample", *m});
  o.policy.policy = "basic";
  o.player_rate = 0.1;
  o.player_adaptation = server::PlayerAdaptation::kFixed;
  o.max_stages = 3;
  o.block_attribute = "duration_us=1000000;payload=1200";
  server::StreamServer srv(loop_, clock_, o);
  srv.start();
  client::ClientOptions co;
  co.url = "rtsp://127.0.0.1:" + std::to_string(srv.rtsp_address().port()) + "/sample";
  co.reference = PREDROP_TEST_SAMPLE;
  co.max_blocks = 3;
  co.feedback = false;
  co.kernel_timestamps = false;
  client::MeasuringClient c(
      loop_, clock_, co,
      [&](const client::BlockResult& r) {
        blocks_.push_back(r);
        const auto sessions = srv.sessions();
        EXPECT_EQ(sessions.size(), 1u);
        if (sessions.size() == 1) {
          EXPECT_EQ(sessions[0]->controller().name(), "fixed");
          EXPECT_EQ(sessions[0]->stats().reports, 0u);
        }
      },
      [&](const core::Status& st, const client::ClientSummary&) {
        status_ = st;
        srv.stop();
      });
  c.start();
  drive(srv, c);
  ASSERT_TRUE(status_ && status_->ok());
  ASSERT_EQ(blocks_.size(), 3u);
  for (const auto& b : blocks_)
    EXPECT_NEAR(b.rate, 0.1, 0.02) << "block " << b.stage;
}

}  // namespace
}  // namespace predrop

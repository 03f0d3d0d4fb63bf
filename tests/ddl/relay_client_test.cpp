// ddl::RelayClient, the one relay client of both trainers, against a relay made by hand: a real
// UDP socket on loopback that answers exactly what a test spells out and keeps what the client
// sends. The client runs on a FakeClock and the loop is settled between steps (loop_drive.hpp),
// so every count is exact: PDJN retries and keep-alives to the millisecond, stale answers and
// other SSRCs counted and dropped, a stage's chunks out and its aggregate back (deadline, fill,
// report), a stage the relay closed already closing from the loop, BYE on leave and on an
// exception, the relay's BYE.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "fake_clock.hpp"
#include "loop_drive.hpp"
#include "predrop/ddl/relay_client.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "relay_datagrams.hpp"

namespace predrop {
namespace {

constexpr std::uint64_t kJobNonce = 0x5eed'0000'0000'0001;
constexpr std::uint32_t kRelaySsrc = 0x0e1a;
constexpr std::uint32_t kDownlinkSsrc = 0xd0d0;
constexpr std::uint32_t kElements = 6;  // chunks of 4 and 2
constexpr std::uint16_t kChunkElements = 4;

// The relay, made by hand (plain key: the job tests run SRTP).
class FakeRelay {
 public:
  explicit FakeRelay(net::EventLoop& loop) {
    auto s = net::UdpEndpoint::open(
        loop, net::SocketAddress::loopback_v4(0), {},
        [this](std::span<const std::uint8_t> d, const net::SocketAddress& from, std::uint64_t) {
          on_datagram(d, from);
        });
    EXPECT_TRUE(s.ok());
    socket_ = std::move(s.value());
  }

  net::SocketAddress address() const { return socket_->local_address(); }
  std::uint64_t datagrams() const { return datagrams_; }
  void close() { socket_->close(); }

  /// An answer to the last PDJN (its worker nonce) from `ssrc`.
  void answer(ddl::JoinStatus status, std::uint64_t job_nonce = kJobNonce,
              std::optional<std::uint64_t> worker_nonce = std::nullopt,
              std::uint32_t ssrc = kRelaySsrc) {
    ddl::JoinAnswer a;
    a.status = status;
    a.rank = 1;
    a.workers = 2;
    a.joined = 1;
    a.start_stage = 7;
    a.downlink_ssrc = kDownlinkSsrc;
    a.chunk_elements = kChunkElements;
    a.missing_fill = 1;  // own
    a.stage_deadline_ms = 100;
    a.job_nonce = job_nonce;
    a.worker_nonce = worker_nonce.value_or(joins.empty() ? 0 : joins.back().worker_nonce);
    ddl::ControlMessage m;
    m.answer = a;
    send(m, ssrc);
  }
  /// PDSC of `stage` announcing `packets` aggregate chunks, with the uplink's report.
  void stage_closed(std::uint32_t stage, std::uint16_t packets) {
    ddl::ControlMessage m;
    m.stage_closed = ddl::StageClosed{stage, 0, packets, 2};
    wire::PdfbFeedback fb;
    fb.media_ssrc = worker_ssrc;
    fb.stage_id = stage;
    fb.reception_period_us = 1234;
    fb.packets_received = 2;
    fb.packets_announced = 2;
    m.feedback = fb;
    send(m);
  }
  /// Aggregate chunk `c` (of 2) of `stage`, every value `v`.
  void chunk(std::uint32_t stage, std::uint16_t c, float v) {
    const std::uint32_t offset = c * kChunkElements;
    const std::vector<float> values(c == 0 ? kChunkElements : kElements - kChunkElements, v);
    auto d = test::chunk_datagram(kDownlinkSsrc, sequence_++, {stage, c, 2}, kElements, offset,
                                  values, nullptr);
    socket_->send(d, worker);
  }
  void bye() {
    ddl::ControlMessage m;
    m.bye = true;
    send(m);
  }

  net::SocketAddress worker;
  std::uint32_t worker_ssrc = 0;
  std::vector<ddl::JoinRequest> joins;
  std::vector<wire::PdfbFeedback> reports;
  std::uint32_t keepalives = 0;
  std::uint32_t byes = 0;
  std::vector<std::pair<std::uint32_t, std::vector<float>>> chunks;  // stage, values

 private:
  void send(ddl::ControlMessage m, std::uint32_t ssrc = kRelaySsrc) {
    m.sender_ssrc = ssrc;
    socket_->send(test::control_datagram(m, nullptr), worker);
  }

  void on_datagram(std::span<const std::uint8_t> d, const net::SocketAddress& from) {
    ++datagrams_;
    worker = from;
    if (!wire::looks_like_rtcp(d)) {
      auto p = wire::parse_rtp(d, {1, 0});
      ASSERT_TRUE(p.ok());
      auto c = ddl::parse_chunk(p->payload);
      ASSERT_TRUE(c.ok());
      std::vector<float> values(c->header.count);
      c->copy_to(values);
      chunks.emplace_back(p->stage->stage_id, std::move(values));
      return;
    }
    std::vector<std::uint8_t> buf(d.begin(), d.end());
    buf.resize(ddl::kMaxControlDatagram);
    auto m = ddl::decode_control(buf, d.size(), nullptr);
    ASSERT_TRUE(m.ok()) << m.error().message;
    worker_ssrc = m->sender_ssrc;
    if (m->join) joins.push_back(*m->join);
    if (m->feedback) reports.push_back(*m->feedback);
    if (m->bye) ++byes;
    if (!m->join && !m->feedback && !m->bye) ++keepalives;
  }

  std::unique_ptr<net::UdpEndpoint> socket_;
  std::uint64_t datagrams_ = 0;
  std::uint16_t sequence_ = 0;
};

struct StageSeen {
  std::uint32_t stage;
  ddl::CloseReason reason;
  std::uint32_t received, announced, lost, filled, contributors;
  std::vector<float> aggregate;
};

class Host final : public ddl::RelayClientListener {
 public:
  core::Status on_joined(const ddl::RelayJob& j) override {
    ++joined;
    job = j;
    return refuse_job ? core::make_error("the host cannot take this job")
                      : core::Status(core::Ok{});
  }
  void on_started(const ddl::RelayJob& j) override { started = j.start_stage; }
  void on_stage_closed(const ddl::RelayStage& s) override {
    stages.push_back(StageSeen{s.stage,
                               s.close_reason,
                               s.received,
                               s.announced,
                               s.lost,
                               s.filled,
                               s.contributors,
                               {s.aggregate.begin(), s.aggregate.end()}});
    if (throw_on_stage) throw std::runtime_error("boom");
  }
  void on_uplink_report(const core::StageReport& r) override { uplink.push_back(r); }
  void on_ended(const core::Status& st) override {
    ++ended;
    status = st;
  }

  int joined = 0;
  int ended = 0;
  bool refuse_job = false;
  bool throw_on_stage = false;
  ddl::RelayJob job;
  std::optional<std::uint32_t> started;
  std::vector<StageSeen> stages;
  std::vector<core::StageReport> uplink;
  std::optional<core::Status> status;
};

class RelayClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ddl::RelayClientOptions o;
    o.relay = relay_.address();
    o.bind = net::SocketAddress::loopback_v4(0);
    o.tensor_elements = kElements;
    o.join_timeout_ms = 600;
    o.relay_silence_ms = 2'000;
    client_ = std::make_unique<ddl::RelayClient>(loop_, clock_, o, host_);
    ASSERT_TRUE(client_->start().ok());
    settle();
  }
  void TearDown() override {
    client_.reset();
    relay_.close();
    loop_.run();
    EXPECT_TRUE(loop_.close().ok());
  }

  void settle() {
    test::settle(loop_, [this] { return relay_.datagrams() + client_->counters().datagrams; });
  }
  // Moves the clock on by `ms` and lets the client judge the new time.
  void step(std::uint64_t ms) {
    clock_.advance_ms(ms);
    client_->poll();
    settle();
  }
  // Through the challenge to "start" (stage 7); 3 PDJN.
  void run_job() {
    relay_.answer(ddl::JoinStatus::kChallenge);
    settle();
    relay_.answer(ddl::JoinStatus::kStart);
    settle();
    ASSERT_EQ(host_.started, 7U);
  }

  net::EventLoop loop_;
  test::FakeClock clock_;
  FakeRelay relay_{loop_};
  Host host_;
  std::unique_ptr<ddl::RelayClient> client_;
  const std::vector<float> gradient_{1, 2, 3, 4, 5, 6};
};

TEST_F(RelayClientTest, JoinsThroughTheChallengeRetryingEvery250Ms) {
  ASSERT_EQ(relay_.joins.size(), 1U);
  EXPECT_EQ(relay_.joins[0].job_nonce, 0U);
  EXPECT_EQ(relay_.joins[0].tensor_elements, kElements);
  step(249);
  EXPECT_EQ(relay_.joins.size(), 1U);
  step(1);
  EXPECT_EQ(relay_.joins.size(), 2U);
  // The challenge: the PDJN that echoes the job's nonce goes at once.
  relay_.answer(ddl::JoinStatus::kChallenge);
  settle();
  ASSERT_EQ(relay_.joins.size(), 3U);
  EXPECT_EQ(relay_.joins[2].job_nonce, kJobNonce);
  relay_.answer(ddl::JoinStatus::kWaiting);
  settle();
  EXPECT_EQ(host_.joined, 1);
  EXPECT_EQ(host_.job.rank, 1U);
  EXPECT_EQ(host_.job.workers, 2U);
  EXPECT_EQ(host_.job.plan.size(), 2U);
  EXPECT_EQ(host_.job.fill, ddl::MissingPolicy::kOwn);
  // Waiting: the PDJN goes on as a keep-alive, 250 ms after the last.
  step(249);
  EXPECT_EQ(relay_.joins.size(), 3U);
  step(1);
  EXPECT_EQ(relay_.joins.size(), 4U);
  relay_.answer(ddl::JoinStatus::kStart);
  settle();
  EXPECT_EQ(host_.started, 7U);
  EXPECT_EQ(host_.joined, 1);
  // Running: an empty RR every 250 ms without other control messages, no more PDJN.
  for (int i = 0; i < 8; ++i) {
    step(125);
  }
  EXPECT_EQ(relay_.keepalives, 4U);
  EXPECT_EQ(relay_.joins.size(), 4U);
  const auto c = client_->counters();
  EXPECT_EQ(c.join_requests, 4U);
  EXPECT_EQ(c.keepalives, 4U);
  EXPECT_EQ(c.stale_answers, 0U);
  EXPECT_EQ(host_.ended, 0);
}

TEST_F(RelayClientTest, GivesUpWithoutAnAnswerJustPastTheTimeout) {
  int steps = 0;
  while (host_.ended == 0 && steps < 20) {
    step(100);
    ++steps;
  }
  EXPECT_EQ(steps, 7);  // 700 ms: past the 600 ms time-out
  ASSERT_TRUE(host_.status && !host_.status->ok());
  EXPECT_NE(host_.status->error().message.find("no answer from the relay at " +
                                               relay_.address().to_string() + " within 600 ms"),
            std::string::npos)
      << host_.status->error().message;
  EXPECT_EQ(relay_.joins.size(), 3U);  // 0, 300 and 600 ms (the steps fall on 100 ms marks)
  EXPECT_EQ(relay_.byes, 0U);
}

TEST_F(RelayClientTest, StaleAnswersOtherSsrcsAndOtherAddressesAreCountedAndDropped) {
  // Before the challenge: an answer to another worker's join.
  relay_.answer(ddl::JoinStatus::kChallenge, kJobNonce, 0x7777);
  settle();
  EXPECT_EQ(client_->counters().stale_answers, 1U);
  EXPECT_EQ(relay_.joins.size(), 1U);
  relay_.answer(ddl::JoinStatus::kChallenge);
  settle();
  ASSERT_EQ(relay_.joins.size(), 2U);
  // A start recorded in another job; then the job's start from another SSRC.
  relay_.answer(ddl::JoinStatus::kStart, kJobNonce + 1);
  relay_.answer(ddl::JoinStatus::kStart, kJobNonce, std::nullopt, kRelaySsrc + 1);
  settle();
  EXPECT_EQ(host_.joined, 0);
  EXPECT_EQ(client_->counters().stale_answers, 2U);
  EXPECT_EQ(client_->counters().ssrc_mismatches, 1U);
  // A datagram from another address.
  auto other = net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {},
                                      [](auto, const auto&, auto) {});
  ASSERT_TRUE(other.ok());
  const std::uint8_t junk[16] = {0x80};
  other.value()->send(junk, client_->local_address());
  settle();
  EXPECT_EQ(client_->counters().foreign_datagrams, 1U);
  relay_.answer(ddl::JoinStatus::kStart);
  settle();
  EXPECT_EQ(host_.started, 7U);
  other.value()->close();
}

TEST_F(RelayClientTest, AStageGoesOutAndItsAggregateComesBackFilledAndReported) {
  run_job();
  auto s = client_->begin_stage(7, gradient_);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(*s, 7U);
  settle();
  // The gradient went out as two chunks of stage 7.
  ASSERT_EQ(relay_.chunks.size(), 2U);
  EXPECT_EQ(relay_.chunks[0].first, 7U);
  EXPECT_EQ(relay_.chunks[0].second, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(relay_.chunks[1].second, (std::vector<float>{5, 6}));
  EXPECT_FALSE(client_->begin_stage(8, gradient_).ok()) << "stage 7 is still open";
  // PDSC (2 chunks, the uplink's report with it) and only the first chunk of the aggregate.
  relay_.stage_closed(7, 2);
  relay_.chunk(7, 0, 0.5F);
  settle();
  ASSERT_EQ(host_.uplink.size(), 1U);
  EXPECT_EQ(host_.uplink[0].stage, 7U);
  EXPECT_EQ(host_.uplink[0].packets_received, 2U);
  EXPECT_TRUE(host_.stages.empty());
  // The fixed deadline (100 ms from the first chunk) closes it; chunk 1 is this worker's own.
  step(99);
  EXPECT_TRUE(host_.stages.empty());
  step(1);
  ASSERT_EQ(host_.stages.size(), 1U);
  const StageSeen& st = host_.stages[0];
  EXPECT_EQ(st.stage, 7U);
  EXPECT_EQ(st.reason, ddl::CloseReason::kDeadline);
  EXPECT_EQ(st.received, 1U);
  EXPECT_EQ(st.announced, 2U);
  EXPECT_EQ(st.lost, 1U);
  EXPECT_EQ(st.filled, 1U);
  EXPECT_EQ(st.contributors, 2U);
  EXPECT_EQ(st.aggregate, (std::vector<float>{0.5F, 0.5F, 0.5F, 0.5F, 5, 6}));
  EXPECT_EQ(client_->next_stage(), 8U);
  // P goes to the relay with the stage's counts, once.
  ASSERT_TRUE(client_->report(7, 0.25).ok());
  settle();
  ASSERT_EQ(relay_.reports.size(), 1U);
  EXPECT_EQ(relay_.reports[0].stage_id, 7U);
  EXPECT_EQ(relay_.reports[0].media_ssrc, kDownlinkSsrc);
  EXPECT_EQ(relay_.reports[0].packets_received, 1U);
  EXPECT_EQ(relay_.reports[0].packets_announced, 2U);
  EXPECT_TRUE(relay_.reports[0].performance_valid);
  EXPECT_DOUBLE_EQ(relay_.reports[0].performance, 0.25);
  EXPECT_FALSE(client_->report(7, 0.25).ok()) << "reported already";
  EXPECT_FALSE(client_->report(6, 0.25).ok()) << "never closed";
  EXPECT_EQ(client_->counters().reports, 1U);
}

TEST_F(RelayClientTest, AStageTheRelayClosedAlreadyClosesFromTheLoopNotInsideBeginStage) {
  run_job();
  // The relay went on without this worker: stage 7's aggregate is here before the stage opens.
  relay_.stage_closed(7, 2);
  relay_.chunk(7, 0, 1.0F);
  relay_.chunk(7, 1, 2.0F);
  settle();
  auto s = client_->begin_stage(7, gradient_);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(host_.stages.empty()) << "closed inside begin_stage()";
  settle();
  ASSERT_EQ(host_.stages.size(), 1U);
  EXPECT_EQ(host_.stages[0].reason, ddl::CloseReason::kComplete);
  EXPECT_EQ(host_.stages[0].aggregate, (std::vector<float>{1, 1, 1, 1, 2, 2}));
  EXPECT_EQ(host_.stages[0].filled, 0U);
}

TEST_F(RelayClientTest, LeaveSendsOneByeAndEndsOnce) {
  run_job();
  client_->leave(core::Status(core::Ok{}));
  settle();
  EXPECT_EQ(relay_.byes, 1U);
  EXPECT_EQ(host_.ended, 1);
  ASSERT_TRUE(host_.status);
  EXPECT_TRUE(host_.status->ok());
  client_->leave(core::Status(core::Ok{}));
  EXPECT_EQ(host_.ended, 1);
  EXPECT_FALSE(client_->begin_stage(7, gradient_).ok());
  EXPECT_TRUE(client_->ended());
}

TEST_F(RelayClientTest, AJobTheHostCannotTakeIsLeftWithAByeAndItsReason) {
  host_.refuse_job = true;
  relay_.answer(ddl::JoinStatus::kChallenge);
  settle();
  relay_.answer(ddl::JoinStatus::kWaiting);
  settle();
  EXPECT_EQ(host_.joined, 1);
  EXPECT_EQ(host_.ended, 1);
  ASSERT_TRUE(host_.status && !host_.status->ok());
  EXPECT_EQ(host_.status->error().message, "the host cannot take this job");
  EXPECT_EQ(relay_.byes, 1U);
}

TEST_F(RelayClientTest, AThrowingHostLeavesWithAByeAndTheKindInTheError) {
  run_job();
  ASSERT_TRUE(client_->begin_stage(7, gradient_).ok());
  host_.throw_on_stage = true;
  relay_.stage_closed(7, 2);
  relay_.chunk(7, 0, 1.0F);
  relay_.chunk(7, 1, 2.0F);
  settle();
  EXPECT_EQ(host_.stages.size(), 1U);
  EXPECT_EQ(host_.ended, 1);
  ASSERT_TRUE(host_.status && !host_.status->ok());
  EXPECT_EQ(host_.status->error().message, "internal error in a udp_receive callback: boom");
  EXPECT_EQ(relay_.byes, 1U);
  EXPECT_EQ(client_->counters().callback_errors, 1U);
}

TEST_F(RelayClientTest, TheRelaysByeEndsTheClientWithoutAByeBack) {
  run_job();
  relay_.bye();
  settle();
  EXPECT_EQ(host_.ended, 1);
  ASSERT_TRUE(host_.status && !host_.status->ok());
  EXPECT_EQ(host_.status->error().message, "the relay ended the job (BYE)");
  EXPECT_EQ(relay_.byes, 0U);
}

}  // namespace
}  // namespace predrop

// The relay against hand-made workers (issue 10 item 6): a fake peer is a real UDP socket on
// loopback with the job key, sending exactly the datagrams a test spells out and keeping what the
// relay answers. The relay runs on a FakeClock; the loop is settled between steps
// (loop_drive.hpp), so every count below is exact.
//
//  - a first join with a huge tensor (up to 2^32 - 1 elements) is refused with a reason, and
//    nothing is allocated for it; the bound is inclusive, and so is the 65535-chunk limit;
//  - a join replayed from an earlier job that used the same key is challenged, never admitted; a
//    join replayed within the job fails SRTCP's replay check;
//  - datagrams from a member's address with another SSRC are counted and dropped;
//  - an exception in a listener, thrown inside the UDP callback or inside a deadline close, is
//    caught at the boundary; the job goes on;
//  - ddl.max_tensor_elements is read from the configuration.
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
#include "predrop/config/config.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/ddl/relay.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "relay_datagrams.hpp"

namespace predrop {
namespace {

// A worker made by hand.
class FakePeer {
 public:
  FakePeer(net::EventLoop& loop, const ddl::JobKey& key, std::uint32_t ssrc) : ssrc_(ssrc) {
    if (key.suite) {
      out_.emplace(net::SrtpDirection::Outbound, *key.suite, key.key);
      in_.emplace(net::SrtpDirection::Inbound, *key.suite, key.key);
    }
    auto s =
        net::UdpEndpoint::open(loop, net::SocketAddress::loopback_v4(0), {},
                               [this](std::span<const std::uint8_t> d, const net::SocketAddress&,
                                      std::uint64_t) { on_datagram(d); });
    EXPECT_TRUE(s.ok());
    socket_ = std::move(s.value());
  }

  net::SocketAddress address() const { return socket_->local_address(); }
  std::uint64_t datagrams() const { return datagrams_; }

  /// Sends raw bytes and keeps a copy (for replays).
  void send(const std::vector<std::uint8_t>& d, const net::SocketAddress& to) {
    ASSERT_FALSE(d.empty());
    sent.push_back(d);
    socket_->send(d, to);
  }
  /// A control compound from `ssrc` (default: its own).
  void send_control(ddl::ControlMessage m, const net::SocketAddress& to,
                    std::optional<std::uint32_t> ssrc = std::nullopt) {
    m.sender_ssrc = ssrc.value_or(ssrc_);
    send(test::control_datagram(m, out_ ? &*out_ : nullptr), to);
  }
  void join(const net::SocketAddress& to, ddl::JoinRequest j,
            std::optional<std::uint32_t> ssrc = std::nullopt) {
    ddl::ControlMessage m;
    m.join = j;
    send_control(m, to, ssrc);
  }
  /// One gradient chunk of `stage` (index of count), values all `v`.
  void chunk(const net::SocketAddress& to, std::uint32_t stage, std::uint16_t index,
             std::uint16_t count, std::uint32_t tensor, std::uint32_t offset, std::uint16_t n,
             float v, std::optional<std::uint32_t> ssrc = std::nullopt) {
    const std::vector<float> values(n, v);
    send(test::chunk_datagram(ssrc.value_or(ssrc_), sequence_++, {stage, index, count}, tensor,
                              offset, values, out_ ? &*out_ : nullptr),
         to);
  }

  std::vector<ddl::JoinAnswer> answers;
  std::vector<ddl::StageClosed> closed;
  std::vector<std::vector<std::uint8_t>> sent;

 private:
  void on_datagram(std::span<const std::uint8_t> d) {
    ++datagrams_;
    if (!wire::looks_like_rtcp(d)) return;  // the aggregate: not looked at here
    std::vector<std::uint8_t> buf(d.begin(), d.end());
    buf.resize(ddl::kMaxControlDatagram);
    auto m = ddl::decode_control(buf, d.size(), in_ ? &*in_ : nullptr);
    ASSERT_TRUE(m.ok()) << m.error().message;
    if (m->answer) answers.push_back(*m->answer);
    if (m->stage_closed) closed.push_back(*m->stage_closed);
  }

  std::uint32_t ssrc_;
  std::uint16_t sequence_ = 0;
  std::optional<net::SrtpSession> out_, in_;
  std::unique_ptr<net::UdpEndpoint> socket_;
  std::uint64_t datagrams_ = 0;
};

class Recorder : public ddl::DdlRelayListener {
 public:
  void on_stage(const ddl::DdlRelayStageRow& row) override {
    stages.push_back(row);
    if (throw_on_stage) {
      throw_on_stage = false;
      throw std::runtime_error("listener failed on a stage");
    }
  }
  void on_event(const ddl::DdlRelayEvent& e) override {
    events.push_back(e);
    if (throw_on_join && e.kind == ddl::DdlRelayEvent::Kind::kJoined) {
      throw_on_join = false;
      throw std::runtime_error("listener failed on a join");
    }
  }
  void on_finished(const core::Status& st) override { finished = st; }

  std::vector<ddl::DdlRelayStageRow> stages;
  std::vector<ddl::DdlRelayEvent> events;
  std::optional<core::Status> finished;
  bool throw_on_join = false;
  bool throw_on_stage = false;
};

// A relay on a FakeClock and its fake peers, on one loop.
struct Harness {
  explicit Harness(ddl::DdlRelayOptions o,
                   std::optional<wire::SrtpSuite> suite = wire::SrtpSuite::AeadAes128Gcm)
      : key(ddl::generate_job_key(suite)) {
    o.listen = net::SocketAddress::loopback_v4(0);
    o.key = key;
    if (o.policy.policy.empty()) o.policy.policy = "fixed";
    relay = std::make_unique<ddl::DdlRelay>(loop, clock, o, &recorder);
    EXPECT_TRUE(relay->start().ok());
  }

  FakePeer& peer(std::uint32_t ssrc) {
    peers.push_back(std::make_unique<FakePeer>(loop, key, ssrc));
    return *peers.back();
  }
  net::SocketAddress at() const { return relay->local_address(); }

  void settle() {
    test::settle(loop, [this] {
      std::uint64_t n = relay->stats().datagrams;
      for (const auto& p : peers)
        n += p->datagrams();
      return n;
    });
  }

  // The challenge, then the join that echoes its nonce; returns the answer to the join.
  ddl::JoinAnswer join(FakePeer& p, ddl::JoinRequest j) {
    p.join(at(), j);
    settle();
    EXPECT_FALSE(p.answers.empty());
    if (p.answers.empty()) return {};
    EXPECT_EQ(p.answers.back().status, ddl::JoinStatus::kChallenge);
    EXPECT_EQ(p.answers.back().worker_nonce, j.worker_nonce);
    j.job_nonce = p.answers.back().job_nonce;
    const std::size_t before = p.answers.size();
    p.join(at(), j);
    settle();
    EXPECT_EQ(p.answers.size(), before + 1);
    return p.answers.back();
  }

  net::SrtpLibraryGuard srtp;
  ddl::JobKey key;
  net::EventLoop loop;
  test::FakeClock clock;
  Recorder recorder;
  std::unique_ptr<ddl::DdlRelay> relay;
  std::vector<std::unique_ptr<FakePeer>> peers;
};

ddl::DdlRelayOptions options(std::uint32_t workers) {
  ddl::DdlRelayOptions o;
  o.workers = workers;
  return o;
}

// The regression of issue 10 item 6: with one worker the first join also starts the job, which
// sized the aggregation buffers by the joiner's tensor_elements (2^32 - 1: about 16 GB, inside the
// UDP callback). Now the join is refused with a reason, the relay stays up and a sane join after
// it is admitted: the huge tensor was never fixed for the job.
TEST(DdlRelayHardening, HugeTensorJoinIsRefusedWithAReason) {
  Harness h(options(1));
  FakePeer& p = h.peer(0x1111);
  const ddl::JoinAnswer a = h.join(p, {ddl::kAnyRank, 0xFFFFFFFFu, 7, 0, 42});
  EXPECT_EQ(a.status, ddl::JoinStatus::kRefused);
  EXPECT_EQ(a.worker_nonce, 42u);
  EXPECT_EQ(a.reason(),
            "the worker's model has 4294967295 parameters, more than this relay takes "
            "(ddl.max_tensor_elements = 67108864)");
  const ddl::DdlRelayStats& s = h.relay->stats();
  EXPECT_EQ(s.refused, 1u);
  EXPECT_EQ(s.joined, 0u);
  EXPECT_EQ(s.challenges, 1u);
  EXPECT_EQ(s.callback_errors, 0u);
  ASSERT_EQ(h.recorder.events.size(), 1u);
  EXPECT_EQ(h.recorder.events[0].kind, ddl::DdlRelayEvent::Kind::kRefused);
  EXPECT_EQ(h.recorder.events[0].text, a.reason());

  p.join(h.at(), {ddl::kAnyRank, 1000, 7, a.job_nonce, 42});
  h.settle();
  ASSERT_EQ(p.answers.size(), 3u);
  EXPECT_EQ(p.answers[2].status, ddl::JoinStatus::kStart);
  EXPECT_EQ(p.answers[2].rank, 0u);
  EXPECT_EQ(h.relay->stats().joined, 1u);
  EXPECT_FALSE(h.recorder.finished.has_value());
}

TEST(DdlRelayHardening, TensorBoundAndChunkLimitAreInclusive) {
  ddl::DdlRelayOptions o = options(2);
  o.max_tensor_elements = 1000;
  o.chunk_elements = 10;
  Harness h(o);
  FakePeer& p = h.peer(0x1111);
  ddl::JoinAnswer a = h.join(p, {ddl::kAnyRank, 1001, 7, 0, 1});
  EXPECT_EQ(a.status, ddl::JoinStatus::kRefused);
  EXPECT_NE(a.reason().find("ddl.max_tensor_elements = 1000"), std::string_view::npos)
      << a.reason();
  a = h.join(p, {ddl::kAnyRank, 1000, 7, 0, 1});
  EXPECT_EQ(a.status, ddl::JoinStatus::kWaiting) << a.reason();

  // 65536 chunks of 1 value cannot be announced in a stage (16-bit count); 65535 can.
  ddl::DdlRelayOptions c = options(2);
  c.chunk_elements = 1;
  Harness g(c);
  FakePeer& q = g.peer(0x2222);
  a = g.join(q, {ddl::kAnyRank, 65536, 7, 0, 2});
  EXPECT_EQ(a.status, ddl::JoinStatus::kRefused);
  EXPECT_EQ(a.reason(),
            "the worker's model of 65536 parameters needs 65536 chunks of 1 values, more than "
            "the 65535 a stage can announce; raise ddl.chunk_bytes");
  a = g.join(q, {ddl::kAnyRank, 65535, 7, 0, 2});
  EXPECT_EQ(a.status, ddl::JoinStatus::kWaiting) << a.reason();
}

// Job 1 admits a worker; its join datagram is recorded. Job 2 runs with the same key (a fixed
// PREDROP_DDL_KEY): the recorded join authenticates there, but it carries job 1's nonce, so it
// only gets a challenge. Replayed once more it fails SRTCP's replay check. A join recorded in
// job 2 and replayed there from another address fails that check too.
TEST(DdlRelayHardening, ReplayedJoinIsNeverAdmitted) {
  Harness job1(options(2));
  FakePeer& w = job1.peer(0x1111);
  ASSERT_EQ(job1.join(w, {0, 1000, 7, 0, 5}).status, ddl::JoinStatus::kWaiting);
  const std::vector<std::uint8_t> recorded = w.sent.back();

  ddl::DdlRelayOptions o = options(2);
  o.listen = net::SocketAddress::loopback_v4(0);
  o.key = job1.key;
  o.policy.policy = "fixed";
  Recorder recorder2;
  ddl::DdlRelay job2(job1.loop, job1.clock, o, &recorder2);
  ASSERT_TRUE(job2.start().ok());
  FakePeer& attacker = job1.peer(0x9999);
  attacker.send(recorded, job2.local_address());
  job1.settle();
  EXPECT_EQ(job2.stats().challenges, 1u);
  EXPECT_EQ(job2.stats().joined, 0u);
  EXPECT_EQ(job2.stats().refused, 0u);
  EXPECT_TRUE(recorder2.events.empty());
  ASSERT_EQ(attacker.answers.size(), 1u);
  EXPECT_EQ(attacker.answers[0].status, ddl::JoinStatus::kChallenge);
  EXPECT_NE(attacker.answers[0].job_nonce, w.answers.back().job_nonce);

  attacker.send(recorded, job2.local_address());
  job1.settle();
  EXPECT_EQ(job2.stats().srtp_failures, 1u);
  EXPECT_EQ(job2.stats().challenges, 1u);

  // Within job 1: the same join again, from another address.
  attacker.send(recorded, job1.at());
  job1.settle();
  EXPECT_EQ(job1.relay->stats().srtp_failures, 1u);
  EXPECT_EQ(job1.relay->stats().joined, 1u);
  job2.stop("test over");
}

// A member is its address *and* its SSRC.
TEST(DdlRelayHardening, AnotherSsrcFromAMembersAddressIsDropped) {
  ddl::DdlRelayOptions o = options(2);
  o.chunk_elements = 10;
  Harness h(o);
  FakePeer& p = h.peer(0x1111);
  FakePeer& q = h.peer(0x2222);
  ASSERT_EQ(h.join(p, {0, 20, 7, 0, 1}).status, ddl::JoinStatus::kWaiting);
  const std::uint64_t nonce = p.answers.back().job_nonce;

  ddl::ControlMessage bye;
  bye.bye = true;
  p.send_control(bye, h.at(), 0x3333);           // a BYE under another SSRC
  p.join(h.at(), {1, 20, 7, nonce, 9}, 0x3333);  // a join under another SSRC
  h.settle();
  EXPECT_EQ(h.relay->stats().ssrc_mismatches, 2u);
  EXPECT_EQ(h.relay->stats().left, 0u);
  EXPECT_EQ(h.relay->stats().challenges, 1u);
  EXPECT_EQ(h.relay->stats().joined, 1u);

  ASSERT_EQ(h.join(q, {1, 20, 7, 0, 2}).status, ddl::JoinStatus::kStart);
  p.chunk(h.at(), 0, 0, 2, 20, 0, 10, 1.0f, 0x3333);  // stage 0 chunk under another SSRC
  h.settle();
  EXPECT_EQ(h.relay->stats().ssrc_mismatches, 3u);
  EXPECT_EQ(h.relay->stats().chunks_received, 0u);
  p.chunk(h.at(), 0, 0, 2, 20, 0, 10, 1.0f);
  p.chunk(h.at(), 0, 1, 2, 20, 10, 10, 1.0f);
  q.chunk(h.at(), 0, 0, 2, 20, 0, 10, 3.0f);
  q.chunk(h.at(), 0, 1, 2, 20, 10, 10, 3.0f);
  h.settle();
  EXPECT_EQ(h.relay->stats().chunks_received, 4u);
  EXPECT_EQ(h.relay->stats().stages, 1u);
  ASSERT_EQ(h.recorder.stages.size(), 1u);
  EXPECT_EQ(h.recorder.stages[0].reason, 0) << "complete";
  EXPECT_EQ(h.relay->stats().ssrc_mismatches, 3u);
}

// The listener throws while the relay handles a join (inside the UDP callback): the boundary
// catches it, nobody is evicted for it, and the worker's retry gets its answer.
TEST(DdlRelayHardening, ExceptionInTheDatagramCallbackIsCaught) {
  Harness h(options(2));
  h.recorder.throw_on_join = true;
  FakePeer& p = h.peer(0x1111);
  p.join(h.at(), {0, 1000, 7, 0, 1});
  h.settle();
  ASSERT_EQ(p.answers.size(), 1u);
  const std::uint64_t nonce = p.answers[0].job_nonce;
  p.join(h.at(), {0, 1000, 7, nonce, 1});
  h.settle();
  EXPECT_EQ(h.relay->stats().callback_errors, 1u);
  EXPECT_EQ(p.answers.size(), 1u) << "the failure cut the answer short";
  p.join(h.at(), {0, 1000, 7, nonce, 1});  // the worker's retry
  h.settle();
  ASSERT_EQ(p.answers.size(), 2u);
  EXPECT_EQ(p.answers[1].status, ddl::JoinStatus::kWaiting);
  FakePeer& q = h.peer(0x2222);
  EXPECT_EQ(h.join(q, {1, 1000, 7, 0, 2}).status, ddl::JoinStatus::kStart);
  ASSERT_EQ(p.answers.size(), 3u);
  EXPECT_EQ(p.answers[2].status, ddl::JoinStatus::kStart);
  EXPECT_EQ(h.relay->stats().joined, 2u);
  EXPECT_EQ(h.relay->stats().evicted, 0u);
  EXPECT_EQ(h.relay->stats().callback_errors, 1u);
  EXPECT_FALSE(h.recorder.finished.has_value());
}

// The listener throws on a stage closed by the deadline (poll(), as the timer would): caught;
// the worker already had its PDSC, and the next stage closes normally.
TEST(DdlRelayHardening, ExceptionInADeadlineCloseIsCaught) {
  ddl::DdlRelayOptions o = options(1);
  o.chunk_elements = 10;
  o.stage_deadline_ms = 100;
  Harness h(o);
  h.recorder.throw_on_stage = true;
  FakePeer& p = h.peer(0x1111);
  ASSERT_EQ(h.join(p, {0, 20, 7, 0, 1}).status, ddl::JoinStatus::kStart);
  p.chunk(h.at(), 0, 0, 2, 20, 0, 10, 1.0f);  // half of stage 0
  h.settle();
  EXPECT_EQ(h.relay->stats().stages, 0u);
  h.clock.advance_ms(100);
  h.relay->poll();
  h.settle();
  EXPECT_EQ(h.relay->stats().callback_errors, 1u);
  ASSERT_EQ(p.closed.size(), 1u);
  EXPECT_EQ(p.closed[0].stage, 0u);
  EXPECT_EQ(p.closed[0].reason, 1) << "deadline";
  p.chunk(h.at(), 1, 0, 2, 20, 0, 10, 1.0f);
  p.chunk(h.at(), 1, 1, 2, 20, 10, 10, 1.0f);
  h.settle();
  ASSERT_EQ(p.closed.size(), 2u);
  EXPECT_EQ(p.closed[1].stage, 1u);
  EXPECT_EQ(p.closed[1].reason, 0) << "complete";
  EXPECT_EQ(h.relay->stats().stages, 2u);
  EXPECT_EQ(h.relay->stats().callback_errors, 1u);
  EXPECT_EQ(h.relay->stats().evicted, 0u);
}

TEST(DdlRelayHardening, MaxTensorElementsIsAConfigKey) {
  auto c = config::parse_config("[server]\nmode = \"ddl\"\n[ddl]\nmax_tensor_elements = 1000\n",
                                "t.toml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->ddl.max_tensor_elements, 1000u);
  auto d = config::parse_config("[server]\nmode = \"ddl\"\n", "t.toml");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->ddl.max_tensor_elements, ddl::kDefaultMaxTensorElements);
  auto zero =
      config::parse_config("[server]\nmode = \"ddl\"\n[ddl]\nmax_tensor_elements = 0\n", "t.toml");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("ddl.max_tensor_elements"), std::string::npos)
      << zero.error().message;
}

}  // namespace
}  // namespace predrop

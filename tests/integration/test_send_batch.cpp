// The shared send batch of the egress chain (issue 6): transmitters of one socket queue into one
// sendmmsg batch while a SendBatchScope is open, their counters are credited at the flush, a
// transmitter destroyed with datagrams queued sends them first, and the per-stage header template
// writes the same fields write_rtp_packet() would. Also the lateness counters. Real UDP on
// loopback, one libuv loop, no sleeps.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <vector>

#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/wire/rtp.hpp"

namespace predrop {
namespace {

constexpr wire::RtpExtensionIds kIds{1, 2};

struct Received {
  wire::RtpHeader header;
  wire::StageExtension stage;
  std::size_t payload = 0;
};

class SendBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rx = net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {},
                                     [this](auto data, const auto&, std::uint64_t) {
                                       auto v = wire::parse_rtp(data, kIds);
                                       ASSERT_TRUE(v.ok());
                                       ASSERT_TRUE(v->stage.has_value());
                                       got_.push_back({v->header, *v->stage, v->payload.size()});
                                       if (got_.size() >= want_) loop_.stop();
                                     });
    ASSERT_TRUE(rx.ok());
    rx_ = std::move(rx.value());
    auto tx = net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {}, {});
    ASSERT_TRUE(tx.ok());
    tx_ = std::move(tx.value());
  }
  void TearDown() override {
    rx_.reset();
    tx_.reset();
    EXPECT_TRUE(loop_.close().ok());
  }

  std::unique_ptr<chain::StageTransmitter> transmitter(std::uint32_t ssrc, std::uint16_t seq0) {
    chain::TransmitterConfig tc;
    tc.extension_ids = kIds;
    tc.max_payload_size = 1200;
    tc.tracks.push_back(chain::TrackConfig{ssrc, 96, seq0, 1000, rx_->local_address(), {}});
    return std::make_unique<chain::StageTransmitter>(
        *tx_, tc, std::nullopt, core::DiscardPlanner(core::DiscardPolicy::kUniform));
  }

  void receive(std::size_t n) {
    want_ = n;
    net::Timer guard(loop_, [this] { loop_.stop(); });  // ctest's timeout is the real bound
    guard.start(5000);
    if (got_.size() < want_) loop_.run();
  }

  std::vector<chain::OutgoingPacket> packets(std::size_t n, std::uint64_t due_us = 0) {
    std::vector<chain::OutgoingPacket> p(n);
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = chain::OutgoingPacket{0, i + 1 == n, static_cast<std::uint32_t>(i * 3000),
                                   std::span<const std::uint8_t>(payload_.data(), 100 + i), due_us};
    }
    return p;
  }

  net::EventLoop loop_;
  std::unique_ptr<net::UdpEndpoint> rx_;
  std::unique_ptr<net::UdpEndpoint> tx_;
  std::vector<Received> got_;
  std::size_t want_ = 0;
  std::vector<std::uint8_t> payload_ = std::vector<std::uint8_t>(1200, 0x42);
};

TEST_F(SendBatchTest, TransmittersShareOneSendmmsgInsideAScope) {
  auto a = transmitter(0xA, 100);
  auto b = transmitter(0xB, 200);
  const std::vector<std::uint8_t> importance(10, 1);
  a->begin_stage(7, 0.0, importance);
  b->begin_stage(9, 0.0, importance);
  const auto pa = packets(10);
  chain::SendBatch batch(*tx_, 2048);
  {
    chain::SendBatchScope scope(batch);
    EXPECT_EQ(a->send(pa, 0, 1'000'000), 10u);  // queued
    EXPECT_EQ(b->send(pa, 0, 1'000'000), 10u);
    EXPECT_EQ(batch.size(), 20u);
    EXPECT_EQ(a->stats().packets_sent, 0u) << "credited at the flush";
    EXPECT_EQ(batch.flushes(), 0u);
  }
  EXPECT_EQ(batch.size(), 0u);
  EXPECT_EQ(batch.flushes(), 1u);
  EXPECT_EQ(a->stats().packets_sent, 10u);
  EXPECT_EQ(b->stats().packets_sent, 10u);
  receive(20);
  ASSERT_EQ(got_.size(), 20u);
  // The header template: per packet the same fields write_rtp_packet would write.
  for (std::size_t i = 0; i < 10; ++i) {
    const Received& r = got_[i];
    EXPECT_EQ(r.header.ssrc, 0xAu);
    EXPECT_EQ(r.header.sequence, 100 + i);
    EXPECT_EQ(r.header.timestamp, 1000 + i * 3000);
    EXPECT_EQ(r.header.marker, i == 9);
    EXPECT_EQ(r.header.payload_type, 96);
    EXPECT_EQ(r.stage.stage_id, 7u);
    EXPECT_EQ(r.stage.index, i);
    EXPECT_EQ(r.stage.count, 10u);
    EXPECT_EQ(r.payload, 100 + i);
    EXPECT_EQ(got_[10 + i].header.ssrc, 0xBu);
    EXPECT_EQ(got_[10 + i].stage.stage_id, 9u);
  }
}

TEST_F(SendBatchTest, ReplanningTheRestOfAStageDiscardsOnlyLaterPacketsAndAnnouncesTheNewCount) {
  // A report arrives after 4 of 10 packets went out at R = 0: the other 6 are planned anew at
  // R = 0.5 (uniform discard: 3 of them go). The 4 sent announce 10; the later ones announce
  // 4 + 3 = 7, the count a receiver ends the stage with.
  auto a = transmitter(0xA, 0);
  const std::vector<std::uint8_t> importance(10, 1);
  a->begin_stage(3, 0.0, importance);
  const auto p = packets(10);
  EXPECT_EQ(a->send(std::span(p).first(4), 0, 1'000'000), 4u);
  const chain::StagePlan plan = a->replan_rest(0.5, std::span(importance).subspan(4), 4);
  EXPECT_EQ(plan.packets, 10u);
  EXPECT_EQ(plan.discarded, 3u);
  EXPECT_EQ(plan.to_send, 7u);
  EXPECT_EQ(a->stats().packets_discarded, 3u);
  EXPECT_EQ(a->send(std::span(p).subspan(4), 4, 1'000'000), 3u);
  receive(7);
  ASSERT_EQ(got_.size(), 7u);
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(got_[i].stage.index, i);
    EXPECT_EQ(got_[i].stage.count, i < 4 ? 10u : 7u);
    EXPECT_EQ(got_[i].header.sequence, i);
  }
  // The first four are packets 0-3; the rest are 3 of packets 4-9 (payload 100 + index).
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(got_[i].payload, 100 + i);
  }
  for (std::size_t i = 4; i < 7; ++i) {
    EXPECT_GE(got_[i].payload, 104u);
  }
  // A rest that does not match the stage changes nothing.
  EXPECT_EQ(a->replan_rest(0.9, std::span(importance).subspan(2), 4).to_send, 7u);
}

TEST_F(SendBatchTest, WithoutAScopeEachCallFlushes) {
  auto a = transmitter(0xA, 0);
  const std::vector<std::uint8_t> importance(5, 1);
  a->begin_stage(0, 0.0, importance);
  EXPECT_EQ(a->send(packets(5), 0, 1'000'000), 5u);
  EXPECT_EQ(a->stats().packets_sent, 5u);
  receive(5);
  EXPECT_EQ(got_.size(), 5u);
}

TEST_F(SendBatchTest, FullBatchFlushesAndDestroyedTransmitterSendsFirst) {
  auto a = transmitter(0xA, 0);
  auto b = transmitter(0xB, 0);
  const std::vector<std::uint8_t> importance(50, 1);
  a->begin_stage(0, 0.0, importance);
  b->begin_stage(0, 0.0, importance);
  const auto p = packets(50);
  chain::SendBatch batch(*tx_, 2048);
  {
    chain::SendBatchScope scope(batch);
    a->send(p, 0, 1'000'000);
    b->send(p, 0, 1'000'000);  // 100 packets: one full batch of 64 went out already
    EXPECT_EQ(batch.flushes(), 1u);
    EXPECT_EQ(batch.size(), 36u);
    b.reset();  // its 36 queued datagrams must go now, not point at a dead transmitter
    EXPECT_EQ(batch.size(), 0u);
  }
  EXPECT_EQ(a->stats().packets_sent, 50u);
  receive(100);
  EXPECT_EQ(got_.size(), 100u);
}

TEST_F(SendBatchTest, DiscardsAndLatenessAreCounted) {
  chain::TransmitterConfig tc;
  tc.extension_ids = kIds;
  tc.late_after_us = 20'000;
  tc.tracks.push_back(chain::TrackConfig{1, 96, 0, 0, rx_->local_address(), {}});
  chain::StageTransmitter t(*tx_, tc, std::nullopt,
                            core::DiscardPlanner(core::DiscardPolicy::kUniform));
  const std::vector<std::uint8_t> importance(10, 1);
  const std::uint64_t now = 10'000'000;
  t.begin_stage(0, 0.5, importance);  // 5 of 10 discarded
  EXPECT_EQ(t.send(packets(10, now - 5'000), 0, now), 5u);
  EXPECT_EQ(t.stats().late_packets, 0u);
  EXPECT_EQ(t.stats().max_lag_us, 5'000u);
  t.begin_stage(1, 0.0, importance);
  t.send(packets(10, now - 30'000), 0, now);
  t.send(packets(10, now + 1'000), 0, now);  // early: not late
  EXPECT_EQ(t.stats().late_packets, 10u);
  EXPECT_EQ(t.stats().late_stages, 1u);
  EXPECT_EQ(t.stats().max_lag_us, 30'000u);
  receive(25);
  ASSERT_EQ(got_.size(), 25u);
  // Stage 0 announced the 5 it sent and numbered them 0..4.
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(got_[i].stage.count, 5u);
    EXPECT_EQ(got_[i].stage.index, i);
    EXPECT_EQ(got_[i].header.sequence, i);  // renumbered over what was sent
  }
}

}  // namespace
}  // namespace predrop

// Stages over real loopback UDP with real SRTP/SRTCP: a sender with a controller pre-discards,
// a receiver measures L, reports it with a P chosen by the test over PDFB, and the sender's R
// follows the exact rule. A real libuv loop on a FakeClock: the loop carries each half of a stage
// before the test moves time on, so every packet arrives at the fake time it was sent and L is
// exact (0, or the pause between the halves); no sleeps, no wall-clock gaps.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "fake_clock.hpp"
#include "predrop/chain/feedback.hpp"
#include "predrop/chain/stage_receiver.hpp"
#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/core/exact_rule.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop {
namespace {

using net::SrtpDirection;
using net::SrtpSession;
using wire::SrtpSuite;

constexpr std::size_t kPacketsPerStage = 200;
constexpr std::uint32_t kStages = 5;

struct Script {
  double performance;    // P the receiver reports for the stage
  std::uint64_t gap_ms;  // pause between the stage's two halves (L exactly)
  core::DecisionKind expect;
};

// Stage 0: baseline. 1: P drops 2 dB -> decrease. 2: L stretched by a 100 ms pause -> increase.
// 3: same L, same P -> keep. 4: P drops again -> decrease.
const Script kScript[kStages] = {
    {40.0, 0, core::DecisionKind::kInitial},    {38.0, 0, core::DecisionKind::kDecrease},
    {38.0, 100, core::DecisionKind::kIncrease}, {38.0, 100, core::DecisionKind::kKeep},
    {36.0, 100, core::DecisionKind::kDecrease},
};

class StageLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = net::random_srtp_key(SrtpSuite::AesCm128HmacSha1_80);
    core::RuleParams p;
    p.rp = 0.20;
    p.rp1 = 0.10;
    p.rp2 = 0.05;
    p.rmax = 0.5;
    p.t1 = core::Threshold::absolute(0.5);
    p.t2 = core::Threshold::absolute(30'000);  // 30 ms
    controller_ = std::make_unique<core::ExactRule>(p);

    auto rx = net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {},
                                     [this](auto data, const auto&, std::uint64_t) {
                                       receiver_->on_datagram(data, clock_.now_us());
                                     });
    ASSERT_TRUE(rx.ok()) << rx.error().message;
    rx_socket_ = std::move(rx.value());
    auto tx = net::UdpEndpoint::open(
        loop_, net::SocketAddress::loopback_v4(0), {},
        [this](auto data, const auto&, std::uint64_t) { on_feedback_datagram(data); });
    ASSERT_TRUE(tx.ok()) << tx.error().message;
    tx_socket_ = std::move(tx.value());

    chain::TransmitterConfig tc;
    tc.tracks.push_back(chain::TrackConfig{0x1234, 96, 1000, 0, rx_socket_->local_address(), {}});
    transmitter_ = std::make_unique<chain::StageTransmitter>(
        *tx_socket_, tc, SrtpSession(SrtpDirection::Outbound, SrtpSuite::AesCm128HmacSha1_80, key_),
        core::DiscardPlanner(core::DiscardPolicy::kUniform));

    chain::ReceiverConfig rc;
    rc.meter.reorder_grace_us = 1'000'000;
    receiver_ = std::make_unique<chain::StageReceiver>(
        rc, SrtpSession(SrtpDirection::Inbound, SrtpSuite::AesCm128HmacSha1_80, key_),
        [this](const wire::RtpPacketView& v, std::uint64_t) {
          ++payloads_received_;
          EXPECT_EQ(v.payload.size(), 100u);
        },
        [this](const core::StageMeasurement& m) { on_stage_measured(m); });
    feedback_in_.emplace(SrtpDirection::Inbound, SrtpSuite::AesCm128HmacSha1_80, key_);
    feedback_out_.emplace(SrtpDirection::Outbound, SrtpSuite::AesCm128HmacSha1_80, key_);
    payload_.assign(100, 0xab);
    packets_.resize(kPacketsPerStage);
    for (std::size_t i = 0; i < kPacketsPerStage; ++i) {
      packets_[i] = chain::OutgoingPacket{0, i + 1 == kPacketsPerStage,
                                          static_cast<std::uint32_t>(i * 90), payload_};
    }
    importance_.assign(kPacketsPerStage, 0);
  }

  // Runs the loop without blocking until `done` (bounded: every datagram here is on loopback, in
  // the receiver's queue when the send returns).
  template <class Done>
  void carry(Done done) {
    for (int pass = 0; pass < 100 && !done(); ++pass) {
      loop_.run_nowait();
    }
    ASSERT_TRUE(done());
  }

  // Stage `s`: its first half, the pause, its second half; then its report and decision.
  void run_stage(std::uint32_t s) {
    const auto plan = transmitter_->begin_stage(s, controller_->rate(), importance_);
    plans_.push_back(plan);
    const std::size_t sent = transmitter_->stats().packets_sent;
    transmitter_->send(std::span(packets_).first(kPacketsPerStage / 2), 0, clock_.now_us());
    const std::size_t first_half = transmitter_->stats().packets_sent - sent;
    carry([&] { return receiver_->stats().delivered == delivered_ + first_half; });
    clock_.advance_ms(kScript[s].gap_ms);
    transmitter_->send(std::span(packets_).subspan(kPacketsPerStage / 2), kPacketsPerStage / 2,
                       clock_.now_us());
    delivered_ += plan.to_send;
    carry([&] { return decisions_.size() == s + 1; });
    clock_.advance_ms(10);  // between stages
  }

  void on_stage_measured(const core::StageMeasurement& m) {
    measurements_.push_back(m);
    auto fb =
        chain::make_feedback(m, kScript[m.stage].performance, wire::PdfbMetric::kPsnrDb, 0x1234);
    std::uint8_t buf[256];
    auto n = chain::encode_feedback(buf, 0x5678, fb, &*feedback_out_);
    ASSERT_TRUE(n.ok()) << n.error().message;
    rx_socket_->send(std::span<const std::uint8_t>(buf, *n), tx_socket_->local_address());
  }

  void on_feedback_datagram(std::span<const std::uint8_t> data) {
    std::vector<std::uint8_t> buf(data.begin(), data.end());
    buf.resize(buf.size() + net::kSrtpMaxTrailer);
    auto compound = chain::decode_rtcp(buf, data.size(), &*feedback_in_);
    ASSERT_TRUE(compound.ok()) << compound.error().message;
    ASSERT_EQ(compound->pdfb().size(), 1u);
    auto d = controller_->on_report(chain::to_stage_report(compound->pdfb()[0]));
    ASSERT_TRUE(d.ok()) << d.error().message;
    decisions_.push_back(*d);
  }

  net::EventLoop loop_;
  test::FakeClock clock_;
  wire::SrtpKeyMaterial key_;
  std::unique_ptr<core::ExactRule> controller_;
  std::unique_ptr<net::UdpEndpoint> tx_socket_, rx_socket_;
  std::unique_ptr<chain::StageTransmitter> transmitter_;
  std::unique_ptr<chain::StageReceiver> receiver_;
  std::optional<SrtpSession> feedback_in_, feedback_out_;
  std::vector<std::uint8_t> payload_;
  std::vector<chain::OutgoingPacket> packets_;
  std::vector<std::uint8_t> importance_;
  std::vector<chain::StagePlan> plans_;
  std::vector<core::StageMeasurement> measurements_;
  std::vector<core::Decision> decisions_;
  std::size_t payloads_received_ = 0;
  std::size_t delivered_ = 0;  // packets the receiver delivered before the stage under way
};

TEST_F(StageLoopTest, ControllerFollowsTheRuleOverRealSrtp) {
  for (std::uint32_t s = 0; s < kStages; ++s) {
    run_stage(s);
  }
  tx_socket_->close();
  rx_socket_->close();
  loop_.run();
  ASSERT_EQ(decisions_.size(), kStages);
  double expected_rate = 0.0;
  const double after[kStages] = {0.20, 0.15, 0.25, 0.25, 0.20};
  for (std::uint32_t s = 0; s < kStages; ++s) {
    SCOPED_TRACE("stage " + std::to_string(s));
    // The stage was sent at the rate decided before it and discarded round(R x n) packets.
    EXPECT_DOUBLE_EQ(plans_[s].rate, expected_rate);
    EXPECT_NEAR(static_cast<double>(plans_[s].discarded), expected_rate * kPacketsPerStage, 1.0);
    // The receiver saw every packet that was sent (loopback, no loss) and knew how many to expect.
    EXPECT_EQ(measurements_[s].received, plans_[s].to_send);
    EXPECT_EQ(measurements_[s].announced, plans_[s].to_send);
    EXPECT_EQ(decisions_[s].kind, kScript[s].expect) << to_string(decisions_[s].kind);
    EXPECT_NEAR(decisions_[s].rate, after[s], 1e-12);
    expected_rate = decisions_[s].rate;
  }
  // L is the pause between the halves, to the microsecond: none, then 100 ms, past the rule's
  // 30 ms threshold.
  for (std::uint32_t s = 0; s < kStages; ++s) {
    EXPECT_DOUBLE_EQ(measurements_[s].reception_period_us,
                     static_cast<double>(kScript[s].gap_ms * 1000))
        << "stage " << s;
  }
  EXPECT_EQ(receiver_->stats().srtp_auth_failed, 0u);
  EXPECT_TRUE(loop_.close().ok());
  EXPECT_EQ(loop_.forced_closes(), 0u);
}

}  // namespace
}  // namespace predrop

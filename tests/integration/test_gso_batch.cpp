// UDP GSO inside the shared sendmmsg batch (issue 14 item 4): with UdpEndpoint::set_gso(true) the
// packets of one frame to one destination (equal lengths, the last may be shorter) go as one
// UDP_SEGMENT message, and the receiver still gets them as separate, correct SRTP datagrams.
// Real UDP on loopback, real libsrtp on both sides, one libuv loop, no sleeps. The kernel of the
// machine this runs on must have UDP GSO (Linux 4.18+); if it refuses, the endpoint falls back to
// plain sendmmsg, which the test reports as a skip after checking the packets still arrive.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/wire/rtp.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop {
namespace {

constexpr wire::RtpExtensionIds kIds{1, 2};
constexpr auto kSuite = wire::SrtpSuite::AesCm128HmacSha1_80;

struct Got {
  std::uint32_t ssrc = 0;
  std::uint16_t sequence = 0;
  std::size_t datagram = 0;  // bytes on the wire (SRTP)
  std::vector<std::uint8_t> payload;
};

class GsoBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = net::random_srtp_key(kSuite);
    for (int i = 0; i < 2; ++i) {
      auto rx = net::UdpEndpoint::open(
          loop_, net::SocketAddress::loopback_v4(0), {},
          [this](auto data, const auto&, std::uint64_t) { on_datagram(data); });
      ASSERT_TRUE(rx.ok());
      rx_[i] = std::move(rx.value());
    }
    auto tx = net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {}, {});
    ASSERT_TRUE(tx.ok());
    tx_ = std::move(tx.value());
    for (std::size_t i = 0; i < payload_.size(); ++i)
      payload_[i] = static_cast<std::uint8_t>(i);
  }
  void TearDown() override {
    rx_ = {};
    tx_.reset();
    EXPECT_TRUE(loop_.close().ok());
  }

  void on_datagram(std::span<const std::uint8_t> data) {
    Got g;
    g.datagram = data.size();
    std::array<std::uint8_t, 2048> buf{};
    std::copy(data.begin(), data.end(), buf.begin());
    // One inbound context per SSRC (libsrtp keys its streams by SSRC; one session would do, but
    // this also checks each packet on its own).
    auto v0 = wire::parse_rtp(std::span<const std::uint8_t>(buf.data(), data.size()), kIds);
    ASSERT_TRUE(v0.ok());
    auto [it, fresh] =
        inbound_.try_emplace(v0->header.ssrc, net::SrtpDirection::Inbound, kSuite, key_);
    const net::SrtpResult r = it->second.unprotect_rtp(buf, data.size());
    ASSERT_TRUE(r) << "SRTP verification failed for datagram " << got_.size();
    auto v = wire::parse_rtp(std::span<const std::uint8_t>(buf.data(), r.length), kIds);
    ASSERT_TRUE(v.ok());
    g.ssrc = v->header.ssrc;
    g.sequence = v->header.sequence;
    g.payload.assign(v->payload.begin(), v->payload.end());
    got_.push_back(std::move(g));
    if (got_.size() >= want_) loop_.stop();
  }

  std::unique_ptr<chain::StageTransmitter> transmitter(std::uint32_t ssrc, int rx) {
    chain::TransmitterConfig tc;
    tc.extension_ids = kIds;
    tc.max_payload_size = 1200;
    tc.tracks.push_back(chain::TrackConfig{ssrc, 96, 0, 0, rx_[rx]->local_address(), {}});
    return std::make_unique<chain::StageTransmitter>(
        *tx_, tc, net::SrtpSession(net::SrtpDirection::Outbound, kSuite, key_),
        core::DiscardPlanner(core::DiscardPolicy::kUniform));
  }

  // A frame: `full` packets of 1200 payload bytes and a last one of `last` bytes.
  std::vector<chain::OutgoingPacket> frame(std::size_t full, std::size_t last) {
    std::vector<chain::OutgoingPacket> p;
    for (std::size_t i = 0; i <= full; ++i) {
      const std::size_t len = i < full ? 1200 : last;
      p.push_back(chain::OutgoingPacket{
          0, i == full, 9000, std::span<const std::uint8_t>(payload_.data() + i, len), 0});
    }
    return p;
  }

  void receive(std::size_t n) {
    want_ = n;
    net::Timer guard(loop_, [this] { loop_.stop(); });  // ctest's timeout is the real bound
    guard.start(5000);
    if (got_.size() < want_) loop_.run();
  }

  net::EventLoop loop_;
  wire::SrtpKeyMaterial key_;
  std::array<std::unique_ptr<net::UdpEndpoint>, 2> rx_;
  std::unique_ptr<net::UdpEndpoint> tx_;
  std::map<std::uint32_t, net::SrtpSession> inbound_;
  std::vector<Got> got_;
  std::size_t want_ = 0;
  std::array<std::uint8_t, 1300> payload_{};
};

TEST_F(GsoBatchTest, FramesGoAsGsoMessagesAndArriveAsSeparateSrtpDatagrams) {
  tx_->set_gso(true);
  ASSERT_TRUE(tx_->gso_batching());
  // Three sessions, two destinations: A and B to receiver 0 (one after the other, so their
  // frames are separate runs only where the lengths say so), C to receiver 1.
  auto a = transmitter(0xA, 0);
  auto b = transmitter(0xB, 0);
  auto c = transmitter(0xC, 1);
  const auto fa = frame(4, 300);   // 5 packets: 4 full + 1 short: one GSO message
  const auto fb = frame(2, 1200);  // 3 full-size packets
  const auto fc = frame(0, 500);   // a single packet: no GSO
  const std::vector<std::uint8_t> importance(8, 1);
  a->begin_stage(1, 0.0, std::span(importance).first(fa.size()));
  b->begin_stage(1, 0.0, std::span(importance).first(fb.size()));
  c->begin_stage(1, 0.0, std::span(importance).first(fc.size()));
  chain::SendBatch batch(*tx_, 2048);
  {
    chain::SendBatchScope scope(batch);
    a->send(fa, 0, 1'000'000);
    b->send(fb, 0, 1'000'000);
    c->send(fc, 0, 1'000'000);
  }
  const std::size_t total = fa.size() + fb.size() + fc.size();
  EXPECT_EQ(a->stats().packets_sent + b->stats().packets_sent + c->stats().packets_sent, total);
  EXPECT_EQ(tx_->stats().sent, total);
  EXPECT_EQ(tx_->stats().send_errors, 0u);
  receive(total);
  ASSERT_EQ(got_.size(), total) << "every segment arrives as its own datagram";
  // Per SSRC in order, with the right sequence numbers and payload bytes.
  std::map<std::uint32_t, std::vector<const Got*>> by_ssrc;
  for (const Got& g : got_)
    by_ssrc[g.ssrc].push_back(&g);
  const std::map<std::uint32_t, const std::vector<chain::OutgoingPacket>*> sent{
      {0xA, &fa}, {0xB, &fb}, {0xC, &fc}};
  for (const auto& [ssrc, frame] : sent) {
    const auto& g = by_ssrc[ssrc];
    ASSERT_EQ(g.size(), frame->size()) << std::hex << ssrc;
    for (std::size_t i = 0; i < g.size(); ++i) {
      EXPECT_EQ(g[i]->sequence, i);
      const auto want = (*frame)[i].payload;
      EXPECT_TRUE(std::equal(want.begin(), want.end(), g[i]->payload.begin(), g[i]->payload.end()))
          << std::hex << ssrc << std::dec << " packet " << i;
    }
  }
  if (tx_->stats().gso_fallbacks != 0) GTEST_SKIP() << "this kernel refused UDP GSO";
  // A's 5 and B's 3 to receiver 0 are 1200+header bytes but A's last is short: A is one
  // message, B another; C's single packet goes without GSO.
  EXPECT_EQ(tx_->stats().gso_messages, 2u);
  EXPECT_TRUE(tx_->gso_batching());
}

TEST_F(GsoBatchTest, UnequalLengthsAndOtherDestinationsSplitTheRuns) {
  tx_->set_gso(true);
  auto a = transmitter(0xA, 0);
  auto c = transmitter(0xC, 1);
  // Growing lengths: no two neighbours can share a message.
  std::vector<chain::OutgoingPacket> grow;
  for (std::size_t i = 0; i < 4; ++i) {
    grow.push_back(chain::OutgoingPacket{
        0, false, 0, std::span<const std::uint8_t>(payload_.data(), 100 + i), 0});
  }
  const auto fc = frame(1, 1200);  // two full packets to receiver 1
  const std::vector<std::uint8_t> importance(4, 1);
  a->begin_stage(1, 0.0, importance);
  c->begin_stage(1, 0.0, std::span(importance).first(fc.size()));
  chain::SendBatch batch(*tx_, 2048);
  {
    chain::SendBatchScope scope(batch);
    a->send(std::span(grow).first(2), 0, 1'000'000);
    c->send(fc, 0, 1'000'000);  // between A's packets: a different destination
    a->send(std::span(grow).subspan(2), 2, 1'000'000);
  }
  receive(grow.size() + fc.size());
  ASSERT_EQ(got_.size(), grow.size() + fc.size());
  if (tx_->stats().gso_fallbacks != 0) GTEST_SKIP() << "this kernel refused UDP GSO";
  EXPECT_EQ(tx_->stats().gso_messages, 1u) << "only C's two equal packets";
}

TEST_F(GsoBatchTest, OffByDefault) {
  EXPECT_FALSE(tx_->gso_batching());
  auto a = transmitter(0xA, 0);
  const auto fa = frame(3, 1200);
  const std::vector<std::uint8_t> importance(4, 1);
  a->begin_stage(1, 0.0, importance);
  chain::SendBatch batch(*tx_, 2048);
  {
    chain::SendBatchScope scope(batch);
    a->send(fa, 0, 1'000'000);
  }
  receive(fa.size());
  EXPECT_EQ(got_.size(), fa.size());
  EXPECT_EQ(tx_->stats().gso_messages, 0u);
}

}  // namespace
}  // namespace predrop

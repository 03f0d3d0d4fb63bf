// The per-packet path allocates nothing (docs/design.md §5), checked on the real chain rather
// than on the codecs alone: this binary replaces the global operator new with one that counts
// while armed, and arms it around the steady state of
//   egress:  StageTransmitter::send -> header template -> SRTP protect (libsrtp) -> sendmmsg,
//            with its private batch, and with a shared SendBatch under a scope, GSO on and off;
//            begin_stage of a stage no larger than an earlier one is counted too; and with the
//            transport-wide sequence number (a WebRTC peer with transport-cc) and its send log,
//            and with a second (Opus) track beside the video on the same transport;
//   ingress: UdpEndpoint receive (libuv recvmmsg) -> StageReceiver: SRTP unprotect -> RTP parse
//            -> stage accounting, for every packet of a stage after its first (the first closes
//            the previous stage, whose report is allowed to allocate).
// A first stage warms everything up (libsrtp creates a stream per SSRC on its first packet; the
// discard mask and the private batch slab are sized on first use). Real UDP on loopback, real
// libsrtp, one libuv loop, no sleeps. The counter (tests/support/allocation_counter.cpp) sees
// operator new only: NSS's own mallocs inside libsrtp are not ours (bench/perf/README.md).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "allocation_counter.hpp"
#include "predrop/chain/stage_receiver.hpp"
#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop {
namespace {

constexpr wire::RtpExtensionIds kIds{1, 2};
constexpr auto kSuite = wire::SrtpSuite::AesCm128HmacSha1_80;
constexpr std::size_t kPackets = 120;  // one stage: frames of 6 packets, the last one shorter

class PacketPathNoAlloc : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = net::random_srtp_key(kSuite);
    auto rx = net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {},
                                     [this](auto data, const auto&, std::uint64_t arrival_us) {
                                       on_datagram(data, arrival_us);
                                     });
    ASSERT_TRUE(rx.ok());
    rx_ = std::move(rx.value());
    auto tx = net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {}, {});
    ASSERT_TRUE(tx.ok());
    tx_ = std::move(tx.value());
    for (std::size_t i = 0; i < payload_.size(); ++i) {
      payload_[i] = static_cast<std::uint8_t>(i * 7);
    }
    for (std::size_t i = 0; i < kPackets; ++i) {
      const bool last_of_frame = i % 6 == 5;
      packets_.push_back(chain::OutgoingPacket{
          0, last_of_frame, static_cast<std::uint32_t>(i / 6 * 3000),
          std::span<const std::uint8_t>(payload_.data(), last_of_frame ? 400 : 1200), 0});
    }
    importance_.assign(kPackets, 1);
    transport_seen_.reserve(4 * kPackets);
    build(kIds, nullptr);
  }

  // The transmitter and the receiver for these extension ids (a new SRTP context each).
  void build(const wire::RtpExtensionIds& ids, chain::TransportSendLog* log) {
    chain::TransmitterConfig tc;
    tc.extension_ids = ids;
    tc.max_payload_size = 1200;
    tc.tracks.push_back(chain::TrackConfig{0xABCD, 96, 0, 0, rx_->local_address(), {}});
    // A WHEP session's Opus track: its own SSRC and payload type on the same transport.
    if (with_audio_)
      tc.tracks.push_back(chain::TrackConfig{0xABCF, 111, 0, 0, rx_->local_address(), {}});
    transmitter_ = std::make_unique<chain::StageTransmitter>(
        *tx_, tc, net::SrtpSession(net::SrtpDirection::Outbound, kSuite, key_),
        core::DiscardPlanner(core::DiscardPolicy::kUniform));
    transmitter_->set_send_log(log);

    chain::ReceiverConfig rc;
    rc.extension_ids = ids;
    receiver_ = std::make_unique<chain::StageReceiver>(
        rc, net::SrtpSession(net::SrtpDirection::Inbound, kSuite, key_),
        [this](const wire::RtpPacketView& p, std::uint64_t) {
          ++delivered_;
          if (p.stage) current_stage_ = p.stage->stage_id;
          if (p.transport_sequence) transport_seen_.push_back(*p.transport_sequence);
          if (p.header.ssrc == 0xABCF) ++audio_delivered_;
        },
        [](const core::StageMeasurement&) {});
  }

  void TearDown() override {
    transmitter_.reset();
    receiver_.reset();
    rx_.reset();
    tx_.reset();
    EXPECT_TRUE(loop_.close().ok());
  }

  void on_datagram(std::span<const std::uint8_t> data, std::uint64_t arrival_us) {
    receiver_->on_datagram(data, arrival_us);
    // Armed from the second packet of the measured stage on: the first closed the stage before.
    if (measure_stage_ && current_stage_ == *measure_stage_ && !rx_counter_) {
      rx_counter_.emplace();
    }
    if (delivered_ >= want_) loop_.stop();
  }

  // Runs the loop until `n` packets in all were delivered (ctest's timeout is the real bound).
  void receive(std::size_t n) {
    want_ = n;
    net::Timer guard(loop_, [this] { loop_.stop(); });
    guard.start(3000);
    if (delivered_ < want_) loop_.run();
    ASSERT_EQ(delivered_, want_) << receiver_->stats().datagrams << " datagrams arrived";
  }

  // One stage sent frame by frame, as the server's pacer sends it; returns the allocations made
  // by begin_stage and the sends. With `batch`, each frame goes into the shared batch.
  std::size_t send_stage(std::uint32_t stage, double rate, chain::SendBatch* batch) {
    test::AllocationScope counter;
    const chain::StagePlan plan = transmitter_->begin_stage(stage, rate, importance_);
    for (std::size_t first = 0; first < kPackets; first += 6) {
      const std::span<const chain::OutgoingPacket> frame(packets_.data() + first, 6);
      if (batch != nullptr) {
        chain::SendBatchScope scope(*batch);
        transmitter_->send(frame, first, 1'000'000 + first * 1000);
      } else {
        transmitter_->send(frame, first, 1'000'000 + first * 1000);
      }
    }
    sent_ += plan.to_send;
    return counter.count();
  }

  // One stage sent frame by frame, each frame received before the next is sent (a burst of a
  // whole stage would overflow the receiving socket's default buffer on loopback).
  void send_and_receive_stage(std::uint32_t stage) {
    const chain::StagePlan plan = transmitter_->begin_stage(stage, 0.0, importance_);
    ASSERT_EQ(plan.to_send, kPackets);
    for (std::size_t first = 0; first < kPackets; first += 6) {
      const std::span<const chain::OutgoingPacket> frame(packets_.data() + first, 6);
      transmitter_->send(frame, first, 1'000'000 + first * 1000);
      sent_ += frame.size();
      receive(sent_);
    }
  }

  net::EventLoop loop_;
  wire::SrtpKeyMaterial key_;
  std::unique_ptr<net::UdpEndpoint> rx_;
  std::unique_ptr<net::UdpEndpoint> tx_;
  std::array<std::uint8_t, 1300> payload_{};
  std::vector<chain::OutgoingPacket> packets_;
  std::vector<std::uint8_t> importance_;
  std::unique_ptr<chain::StageTransmitter> transmitter_;
  std::unique_ptr<chain::StageReceiver> receiver_;
  std::size_t delivered_ = 0;
  std::size_t want_ = 0;
  std::size_t sent_ = 0;
  std::uint32_t current_stage_ = 0;
  std::optional<std::uint32_t> measure_stage_;
  std::optional<test::AllocationScope> rx_counter_;
  std::vector<std::uint16_t> transport_seen_;  // transport-wide sequence numbers received
  bool with_audio_ = false;                    // build() adds the Opus track (SSRC 0xABCF)
  std::size_t audio_delivered_ = 0;
};

TEST_F(PacketPathNoAlloc, CounterSeesAllocations) {
  test::AllocationScope counter;
  auto p = std::make_unique<int>(1);
  EXPECT_GE(counter.count(), 1u);
}

TEST_F(PacketPathNoAlloc, EgressWithItsPrivateBatchAllocatesNothing) {
  (void)send_stage(0, 0.0, nullptr);  // warm-up
  EXPECT_EQ(send_stage(1, 0.0, nullptr), 0u);
  EXPECT_EQ(send_stage(2, 0.3, nullptr), 0u) << "a stage with pre-discard";
  EXPECT_EQ(transmitter_->stats().send_drops + transmitter_->stats().protect_errors, 0u);
}

TEST_F(PacketPathNoAlloc, EgressIntoASharedBatchAllocatesNothingWithAndWithoutGso) {
  chain::SendBatch batch(*tx_, 2048);
  for (const bool gso : {false, true}) {
    SCOPED_TRACE(gso ? "GSO" : "plain sendmmsg");
    tx_->set_gso(gso);
    const auto base = static_cast<std::uint32_t>(gso ? 10 : 0);
    (void)send_stage(base, 0.0, &batch);  // warm-up (GSO builds its control messages once)
    EXPECT_EQ(send_stage(base + 1, 0.0, &batch), 0u);
    EXPECT_EQ(send_stage(base + 2, 0.3, &batch), 0u);
  }
  EXPECT_EQ(transmitter_->stats().send_drops + transmitter_->stats().protect_errors, 0u);
}

// A WebRTC peer with transport-cc: every packet sent carries the next transport-wide sequence
// number and is logged with its stage, index and send time; pre-discarded packets get none (no
// gap for the browser to read as a loss); still nothing allocated per packet.
TEST_F(PacketPathNoAlloc, TransportWideSequenceNumbersOnlySentPacketsWithoutAllocating) {
  auto log = std::make_unique<chain::TransportSendLog>();
  build(wire::RtpExtensionIds{1, 2, 3}, log.get());
  send_and_receive_stage(0);  // warm-up
  // A stage with pre-discard, frame by frame, each received before the next goes.
  const chain::StagePlan plan = transmitter_->begin_stage(1, 0.3, importance_);
  ASSERT_GT(plan.discarded, 0u);
  for (std::size_t first = 0; first < kPackets; first += 6) {
    const std::span<const chain::OutgoingPacket> frame(packets_.data() + first, 6);
    sent_ += transmitter_->send(frame, first, 2'000'000 + first * 1000);
    receive(sent_);
  }
  ASSERT_EQ(transport_seen_.size(), kPackets + plan.to_send);
  for (std::size_t i = 0; i < transport_seen_.size(); ++i) {
    ASSERT_EQ(transport_seen_[i], i) << "numbers are contiguous over the pre-discards";
  }
  const auto last_sent = static_cast<std::uint16_t>(transport_seen_.size() - 1);
  const chain::SentPacket* last = log->find(last_sent);
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->stage, 1u);
  EXPECT_EQ(last->index, plan.to_send - 1);
  EXPECT_EQ(last->count, plan.to_send);
  const std::size_t payload = transmitter_->will_send(kPackets - 1) ? 400 : 1200;
  EXPECT_EQ(last->bytes, 32 + payload + 10 + core::kLinkOverheadBytes)
      << "header with the three elements (12 + 4 + 16), payload, SRTP tag, link overhead";
  EXPECT_EQ(log->find(static_cast<std::uint16_t>(last_sent + 1)), nullptr) << "never sent";
  // And numbering plus logging allocate nothing.
  EXPECT_EQ(send_stage(2, 0.3, nullptr), 0u);
  EXPECT_EQ(transmitter_->next_transport_sequence(),
            transport_seen_.size() + transmitter_->plan().to_send);
}

// A WebRTC peer with NACK and RTX (docs/webrtc.md "NACK and RTX"): every packet sent is also
// kept in the retransmission history, and NACKed ones go out again as RTX. After the RTX
// stream's first packet (libsrtp makes that SSRC's stream context then, once per session),
// neither keeping nor resending allocates.
TEST_F(PacketPathNoAlloc, RetransmissionHistoryAndRtxAllocateNothing) {
  auto log = std::make_unique<chain::TransportSendLog>();
  build(wire::RtpExtensionIds{0, 0, 3}, log.get());
  chain::RetransmitConfig rtx;
  rtx.ssrc = 0xABCE;
  rtx.payload_type = 97;
  transmitter_->enable_retransmission(rtx);
  send_and_receive_stage(0);  // warm-up, and credit for the resends
  const auto last = static_cast<std::uint16_t>(transmitter_->track(0).next_sequence - 1);
  const std::array<std::uint16_t, 1> first{last};
  ASSERT_EQ(transmitter_->retransmit(first, 2'000'000), 1u);
  EXPECT_EQ(send_stage(1, 0.3, nullptr), 0u);
  const auto newest = static_cast<std::uint16_t>(transmitter_->track(0).next_sequence - 1);
  const std::array<std::uint16_t, 4> lost{static_cast<std::uint16_t>(newest - 3),
                                          static_cast<std::uint16_t>(newest - 2),
                                          static_cast<std::uint16_t>(newest - 1), newest};
  std::size_t resent = 0;
  {
    test::AllocationScope counter;
    resent = transmitter_->retransmit(lost, 3'000'000);
    EXPECT_EQ(counter.count(), 0u);
  }
  EXPECT_EQ(resent, 4u);
  EXPECT_EQ(transmitter_->retransmit_stats().sent, 5u);
}

// A WHEP session with Opus audio (docs/webrtc.md "Audio"): a second track on the same SRTP
// transport, one Opus packet in each frame of 6, importance 255. Pre-discard never takes one;
// each takes the next transport-wide sequence number like the video's; after the warm-up stage
// (libsrtp makes the audio SSRC's stream context on its first packet) nothing allocates.
TEST_F(PacketPathNoAlloc, OpusBesideTheVideoIsNeverDiscardedAndAllocatesNothing) {
  auto log = std::make_unique<chain::TransportSendLog>();
  with_audio_ = true;
  build(wire::RtpExtensionIds{0, 0, 3}, log.get());
  chain::RetransmitConfig rtx;
  rtx.ssrc = 0xABCE;
  rtx.payload_type = 97;
  transmitter_->enable_retransmission(rtx);
  std::size_t audio = 0;
  for (std::size_t i = 2; i < kPackets; i += 6) {
    packets_[i].track = 1;
    packets_[i].payload = std::span<const std::uint8_t>(payload_.data(), 160);
    importance_[i] = core::kNeverDrop;
    ++audio;
  }
  send_and_receive_stage(0);  // warm-up
  EXPECT_EQ(audio_delivered_, audio);
  const chain::StagePlan plan = transmitter_->begin_stage(1, 0.3, importance_);
  ASSERT_GT(plan.discarded, 0u);
  for (std::size_t first = 0; first < kPackets; first += 6) {
    const std::span<const chain::OutgoingPacket> frame(packets_.data() + first, 6);
    sent_ += transmitter_->send(frame, first, 2'000'000 + first * 1000);
    receive(sent_);
  }
  EXPECT_EQ(audio_delivered_, 2 * audio) << "no Opus packet pre-discarded";
  ASSERT_EQ(transport_seen_.size(), kPackets + plan.to_send);
  for (std::size_t i = 0; i < transport_seen_.size(); ++i) {
    ASSERT_EQ(transport_seen_[i], i) << "one transport-wide sequence over both tracks";
  }
  EXPECT_EQ(transmitter_->track(1).packets, 2 * audio);
  EXPECT_EQ(send_stage(2, 0.3, nullptr), 0u);
  EXPECT_EQ(transmitter_->track(1).packets, 3 * audio);
}

// Counted from the second packet of stage 1 to its last: receiving (and, in between, sending)
// the rest of the stage.
TEST_F(PacketPathNoAlloc, IngressAllocatesNothingAfterAStagesFirstPacket) {
  send_and_receive_stage(0);
  ASSERT_EQ(receiver_->stats().srtp_auth_failed, 0u);
  measure_stage_ = 1;
  send_and_receive_stage(1);
  ASSERT_TRUE(rx_counter_.has_value()) << "no packet of stage 1 arrived";
  const std::size_t allocations = rx_counter_->count();
  rx_counter_.reset();
  EXPECT_EQ(delivered_, 2 * kPackets);
  EXPECT_EQ(receiver_->stats().srtp_auth_failed + receiver_->stats().malformed, 0u);
  EXPECT_EQ(allocations, 0u) << "the receive path of " << kPackets - 1 << " packets allocated";
}

}  // namespace
}  // namespace predrop

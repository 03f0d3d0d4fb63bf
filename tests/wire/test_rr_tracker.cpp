// The sender's RR arithmetic (wire/include/predrop/wire/rr_tracker.hpp): RFC 3550 §6.4.1 RTT from
// LSR/DLSR, delta of the cumulative lost, extended highest sequence mapped across the 16-bit
// wrap, forged blocks refused. Time is the NTP compact value the test passes in (no clock).
#include <gtest/gtest.h>

#include <cstdint>

#include "predrop/wire/rr_tracker.hpp"

namespace predrop::wire {
namespace {

constexpr std::uint32_t kOneSecond = 65'536;  // NTP compact units (1/65536 s)

ReportBlock block(std::uint32_t ext_highest, std::int32_t cumulative_lost, std::uint32_t lsr = 0,
                  std::uint32_t dlsr = 0) {
  ReportBlock b;
  b.ssrc = 0xBEEF;
  b.extended_highest_sequence = ext_highest;
  b.cumulative_lost = cumulative_lost;
  b.last_sr = lsr;
  b.delay_since_last_sr = dlsr;
  return b;
}

TEST(RrRoundTrip, Rfc3550Figure2) {
  // RFC 3550 §6.4.1's example: A = 0xB710:8000 (46864.5 s), LSR = 0xB705:2000 (46853.125 s),
  // DLSR = 0x0005:4000 (5.25 s): RTT = 6.125 s = 0x0006:2000.
  EXPECT_EQ(rr_round_trip(0xB7108000U, 0xB7052000U, 0x00054000U), 0x00062000U);
}

TEST(RrRoundTrip, NoSrYetOrDlsrTooLong) {
  EXPECT_FALSE(rr_round_trip(1000, 0, 0));           // LSR 0: no SR received
  EXPECT_FALSE(rr_round_trip(1000, 900, 101));       // DLSR longer than A - LSR
  EXPECT_EQ(rr_round_trip(1000, 900, 100), 0U);      // zero RTT is valid
  EXPECT_EQ(rr_round_trip(5, 0xFFFFFFF0U, 1), 20U);  // A wrapped past 2^32 (every 18 h)
}

TEST(RrPacketIndex, MapsLowBitsOntoPacketsSent) {
  // First sequence 65530: packet i has sequence (65530 + i) mod 2^16.
  EXPECT_EQ(rr_packet_index(65530, 65530, 1), 0U);
  EXPECT_EQ(rr_packet_index(65530, 65535, 10), 5U);
  // The receiver wrapped: its extended value is 1 cycle + seq 3, i.e. packet 9.
  EXPECT_EQ(rr_packet_index(65530, 0x00010003U, 10), 9U);
  // The receiver's cycle count is its own (it started later): only the low bits count.
  EXPECT_EQ(rr_packet_index(65530, 0x00070003U, 10), 9U);
  // A sequence number not sent yet (forged, or from another session).
  EXPECT_FALSE(rr_packet_index(65530, 0x00010004U, 10));
  EXPECT_FALSE(rr_packet_index(100, 100, 0));
}

TEST(RrPacketIndex, NewestPacketWithThoseBitsAfterManyWraps) {
  // 200000 packets sent from sequence 0: sequence 1000 last went out as packet 196608 + 1000.
  EXPECT_EQ(rr_packet_index(0, 1000, 200'000), 197'608U);
  EXPECT_EQ(rr_packet_index(0, 0x00030D3FU, 200'000), 199'999U);  // 200000 - 1 = 0x30D3F
}

TEST(RrTracker, IntervalsAreDeltasOfTheCommittedBaseline) {
  RrTracker t(1000, 90'000);
  // First RR: packets 0..99 (seq 1000..1099), 10 lost since the start.
  auto a = t.measure(block(1099, 10), 120, 0);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->highest_index, 99U);
  EXPECT_EQ(a->expected, 100U);
  EXPECT_EQ(a->lost, 10U);
  EXPECT_EQ(a->received(), 90U);
  t.commit(*a);
  // Second RR: up to packet 299, 25 lost in all: the interval is 200 packets, 15 lost.
  auto b = t.measure(block(1299, 25), 300, 0);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->expected, 200U);
  EXPECT_EQ(b->lost, 15U);
}

TEST(RrTracker, UncommittedIntervalsAddUp) {
  RrTracker t(0, 90'000);
  auto a = t.measure(block(99, 0), 100, 0);
  ASSERT_TRUE(a);
  t.commit(*a);
  auto b = t.measure(block(149, 5), 200, 0);  // not used by the caller: not committed
  ASSERT_TRUE(b);
  auto c = t.measure(block(199, 8), 200, 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->expected, 100U);
  EXPECT_EQ(c->lost, 8U);
}

TEST(RrTracker, DuplicatesMakeLossNegativeWhichClampsToZero) {
  RrTracker t(0, 90'000);
  auto a = t.measure(block(99, 4), 100, 0);
  ASSERT_TRUE(a);
  t.commit(*a);
  auto b = t.measure(block(199, -2), 200, 0);  // RFC 3550 §6.4.1: duplicates count negative
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->lost, 0U);
  EXPECT_EQ(b->expected, 100U);
}

TEST(RrTracker, AcrossTheSequenceWrap) {
  RrTracker t(65'000, 90'000);
  auto a = t.measure(block(65'499, 0), 500, 0);  // packets 0..499
  ASSERT_TRUE(a);
  t.commit(*a);
  // Packets 500..1499: sequence 65500 .. 65535, 0 .. 963; the receiver says 1 cycle + 963.
  auto b = t.measure(block(0x000103C3U, 50), 1500, 0);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->highest_index, 1499U);
  EXPECT_EQ(b->expected, 1000U);
  EXPECT_EQ(b->lost, 50U);
}

TEST(RrTracker, RttAndQueueDelayFromKnownSrs) {
  RrTracker t(0, 90'000);
  const std::uint32_t sr1 = 10 * kOneSecond;
  const std::uint32_t sr2 = 11 * kOneSecond;
  t.note_sender_report(sr1);
  t.note_sender_report(sr2);
  // RR 20 ms after SR 1 arrived... it left 5 ms after receiving it: RTT = 15 ms (of 1/65536 s).
  auto a = t.measure(block(99, 0, sr1, kOneSecond / 200), 100, sr1 + kOneSecond / 50);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(a->rtt_us);
  EXPECT_NEAR(*a->rtt_us, 15'000, 20);
  EXPECT_NEAR(*a->queue_delay_us, 0, 1e-9);  // the first sample is the base
  t.commit(*a);
  // Next RR names SR 2 and shows 75 ms RTT: 60 ms of queue above the base.
  auto b = t.measure(block(199, 0, sr2, 0), 200, sr2 + kOneSecond * 75 / 1000);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_NEAR(*b->rtt_us, 75'000, 20);
  EXPECT_NEAR(*b->queue_delay_us, 60'000, 40);
  // Even an RR that is not committed is an RTT sample: a smaller RTT lowers the base.
  auto c = t.measure(block(199, 0, sr2, 0), 200, sr2 + kOneSecond / 100);
  ASSERT_TRUE(c);
  EXPECT_NEAR(*c->queue_delay_us, 0, 1e-9);
}

TEST(RrTracker, JitterInMicroseconds) {
  RrTracker t(0, 90'000);
  ReportBlock b = block(9, 0);
  b.jitter = 900;  // 900 ticks of 90 kHz
  auto a = t.measure(b, 10, 0);
  ASSERT_TRUE(a);
  EXPECT_DOUBLE_EQ(a->jitter_us, 10'000);
}

TEST(RrTracker, ForgedAndStaleBlocksAreRefused) {
  RrTracker t(0, 90'000);
  t.note_sender_report(5 * kOneSecond);
  // A packet never sent.
  EXPECT_FALSE(t.measure(block(500, 0), 100, 0));
  // More lost than sent.
  EXPECT_FALSE(t.measure(block(99, 101), 100, 0));
  // An LSR this track never sent.
  EXPECT_FALSE(t.measure(block(99, 0, 5 * kOneSecond + 1, 0), 100, 6 * kOneSecond));
  // DLSR longer than the time since the SR.
  EXPECT_FALSE(t.measure(block(99, 0, 5 * kOneSecond, 2 * kOneSecond), 100, 6 * kOneSecond));
  auto a = t.measure(block(99, 0), 100, 0);
  ASSERT_TRUE(a);
  t.commit(*a);
  // Going backwards (an old RR replayed, or reordered).
  EXPECT_FALSE(t.measure(block(50, 0), 200, 0));
  // The same highest again is an empty interval, not an error.
  auto same = t.measure(block(99, 0), 200, 0);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->expected, 0U);
}

TEST(RrTracker, OldSrsAgeOut) {
  RrTracker t(0, 90'000);
  for (std::uint32_t i = 1; i <= kRrSrHistory + 1; ++i) {
    t.note_sender_report(i * kOneSecond);
  }
  // SR 1 was pushed out by the 17th.
  EXPECT_FALSE(t.measure(block(9, 0, kOneSecond, 0), 10, 20 * kOneSecond));
  EXPECT_TRUE(t.measure(block(9, 0, 2 * kOneSecond, 0), 10, 20 * kOneSecond));
}

}  // namespace
}  // namespace predrop::wire

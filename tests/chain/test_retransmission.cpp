// The sent-packet history and the byte credit of NACK retransmission (chain/retransmission.hpp):
// exactly the last `slots` numbers are found, over the 16-bit wrap; a number never recorded
// (a pre-discarded packet took none) or overwritten is not; the credit never lets more out than
// its fraction of what was sent plus the burst.
#include "predrop/chain/retransmission.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace predrop::chain {
namespace {

std::vector<std::uint8_t> payload(std::uint16_t seq, std::size_t size = 40) {
  std::vector<std::uint8_t> p(size);
  for (std::size_t i = 0; i < size; ++i) {
    p[i] = static_cast<std::uint8_t>(seq + i);
  }
  return p;
}

TEST(SentPacketRing, KeepsExactlyTheLastSlotsOverTheWrap) {
  SentPacketRing ring(100, 64);  // rounded up to 128
  ASSERT_EQ(ring.slots(), 128U);
  const std::uint16_t first = 65500;
  for (std::uint32_t k = 0; k < 300; ++k) {
    const auto seq = static_cast<std::uint16_t>(first + k);
    ring.record(seq, k % 10 == 9, 3000 * k, payload(seq));
  }
  const auto last = static_cast<std::uint16_t>(first + 299);
  for (std::uint32_t back = 0; back < 128; ++back) {
    const auto seq = static_cast<std::uint16_t>(last - back);
    SentRtpPacket* p = ring.find(seq);
    ASSERT_NE(p, nullptr) << seq;
    EXPECT_EQ(p->sequence, seq);
    const std::uint32_t k = 299 - back;
    EXPECT_EQ(p->timestamp, 3000 * k);
    EXPECT_EQ(p->marker, k % 10 == 9);
    EXPECT_EQ(p->resent, 0);
    const auto kept = ring.payload(*p);
    const auto want = payload(seq);
    EXPECT_TRUE(std::equal(kept.begin(), kept.end(), want.begin(), want.end()));
  }
  EXPECT_EQ(ring.find(static_cast<std::uint16_t>(last - 128)), nullptr);  // overwritten
  EXPECT_EQ(ring.find(static_cast<std::uint16_t>(last + 1)), nullptr);    // not sent yet
  EXPECT_EQ(ring.find(first), nullptr);
}

TEST(SentPacketRing, NeverRecordedNumbersAreNotFound) {
  SentPacketRing ring(16, 64);
  EXPECT_EQ(ring.find(0), nullptr);  // empty slots are not packet 0
  ring.record(10, false, 1, payload(10));
  ring.record(11, false, 2, payload(11));
  EXPECT_NE(ring.find(10), nullptr);
  EXPECT_EQ(ring.find(26), nullptr);  // same slot as 10, another number
  EXPECT_EQ(ring.find(12), nullptr);
}

TEST(SentPacketRing, APayloadTooLargeEmptiesItsSlot) {
  SentPacketRing ring(16, 64);
  ring.record(5, false, 1, payload(5));
  ring.record(21, false, 2, payload(21, 65));  // same slot, too large: nothing kept there
  EXPECT_EQ(ring.find(5), nullptr);
  EXPECT_EQ(ring.find(21), nullptr);
  ring.record(6, true, 3, {});
  ASSERT_NE(ring.find(6), nullptr);
  EXPECT_TRUE(ring.payload(*ring.find(6)).empty());
}

TEST(RetransmitBudget, AllowsTheFractionOfWhatWasSentPlusNoMoreThanTheBurst) {
  RetransmitBudget b(0.25, 1000);
  EXPECT_FALSE(b.take(1));  // nothing sent yet
  for (int i = 0; i < 10; ++i) {
    b.on_sent(100);
  }
  EXPECT_DOUBLE_EQ(b.credit(), 250.0);
  EXPECT_TRUE(b.take(200));
  EXPECT_FALSE(b.take(100));  // 50 left
  EXPECT_TRUE(b.take(50));
  for (int i = 0; i < 1000; ++i) {
    b.on_sent(1000);  // 250 000 bytes of credit, banked at most 1000
  }
  EXPECT_DOUBLE_EQ(b.credit(), 1000.0);
  EXPECT_FALSE(b.take(1001));
  EXPECT_TRUE(b.take(1000));
}

}  // namespace
}  // namespace predrop::chain

// Generic NACK (RFC 4585 §6.2.1), PLI (§6.3.1) and FIR (RFC 5104 §4.3.1) from annotated hex
// fixtures, round trips through the NACK writer, and malformed or hostile messages bounded.
#include "predrop/wire/rtcp_nack.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace predrop::wire {
namespace {

// Two FCIs: 100 with 101, 103 and 116 (BLP bits 0, 2, 15), and 65535 alone (then 0 by wrap).
constexpr std::array<std::uint8_t, 20> kNack = {
    0x81, 0xcd, 0x00, 0x04,  // V=2, FMT=1, PT=205 (RTPFB), length 4 (20 bytes)
    0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
    0x12, 0x34, 0x56, 0x78,  // SSRC of media source
    0x00, 0x64, 0x80, 0x05,  // PID 100, BLP 1000 0000 0000 0101: +1, +3, +16
    0xff, 0xff, 0x00, 0x01,  // PID 65535, BLP bit 0: 0 (wraps)
};

// A PLI (no FCI).
constexpr std::array<std::uint8_t, 12> kPli = {
    0x81, 0xce, 0x00, 0x02,  // V=2, FMT=1, PT=206 (PSFB), length 2 (12 bytes)
    0x00, 0x00, 0x00, 0x01,  // sender SSRC
    0x12, 0x34, 0x56, 0x78,  // media SSRC
};

// A FIR: media source field 0, one FCI naming 0x12345678, command sequence number 7.
constexpr std::array<std::uint8_t, 20> kFir = {
    0x84, 0xce, 0x00, 0x04,  // V=2, FMT=4, PT=206, length 4
    0x00, 0x00, 0x00, 0x01,  // sender SSRC
    0x00, 0x00, 0x00, 0x00,  // media SSRC (unused)
    0x12, 0x34, 0x56, 0x78,  // FCI: SSRC
    0x07, 0x00, 0x00, 0x00,  // seq nr 7, reserved
};

TEST(GenericNack, ReadsPidAndBlp) {
  std::vector<std::uint16_t> seqs;
  const auto n = parse_generic_nack(kNack, seqs);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->sender_ssrc, 1U);
  EXPECT_EQ(n->media_ssrc, 0x12345678U);
  EXPECT_EQ(n->fcis, 2);
  EXPECT_EQ(n->truncated, 0U);
  EXPECT_EQ(seqs, (std::vector<std::uint16_t>{100, 101, 103, 116, 65535, 0}));
}

TEST(GenericNack, AppendsAndKeepsWhatWasThere) {
  std::vector<std::uint16_t> seqs{7};
  ASSERT_TRUE(parse_generic_nack(kNack, seqs));
  EXPECT_EQ(seqs.size(), 7U);
  EXPECT_EQ(seqs.front(), 7);
}

TEST(GenericNack, RefusesMalformed) {
  std::vector<std::uint16_t> seqs;
  auto bad = kNack;
  bad[2] = 0x00;
  bad[3] = 0x05;  // length past the end
  EXPECT_FALSE(parse_generic_nack(bad, seqs));
  bad = kNack;
  bad[3] = 0x02;  // no FCI
  EXPECT_FALSE(parse_generic_nack(std::span(bad).first(12), seqs));
  bad = kNack;
  bad[0] = 0x8f;  // transport-cc, not a NACK
  EXPECT_FALSE(parse_generic_nack(bad, seqs));
  bad = kNack;
  bad[0] = 0x41;  // version 1
  EXPECT_FALSE(parse_generic_nack(bad, seqs));
  EXPECT_FALSE(parse_generic_nack(kPli, seqs));
  EXPECT_FALSE(parse_generic_nack(std::span(kNack).first(11), seqs));
  EXPECT_TRUE(seqs.empty());
}

TEST(GenericNack, ReadsOnlyItsOwnLength) {
  // A NACK followed by more bytes (the rest of a compound): only its FCIs count.
  std::array<std::uint8_t, 24> more{};
  std::copy(kNack.begin(), kNack.end(), more.begin());
  more[20] = 0xAA;
  std::vector<std::uint16_t> seqs;
  ASSERT_TRUE(parse_generic_nack(more, seqs));
  EXPECT_EQ(seqs.size(), 6U);
}

TEST(GenericNack, BoundsAHostileBurst) {
  // 255 FCIs each with every BLP bit: 17 numbers each, 4335 in all; only 100 are taken.
  std::vector<std::uint8_t> m(12 + 255 * 4);
  m[0] = 0x81;
  m[1] = 0xcd;
  m[2] = 0x01;
  m[3] = 0x01;  // length 257: 258 words
  for (std::size_t i = 0; i < 255; ++i) {
    m[12 + 4 * i] = static_cast<std::uint8_t>(i);
    m[14 + 4 * i] = 0xff;
    m[15 + 4 * i] = 0xff;
  }
  std::vector<std::uint16_t> seqs;
  const auto n = parse_generic_nack(m, seqs, 100);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->fcis, 255);
  EXPECT_EQ(seqs.size(), 100U);
  EXPECT_EQ(n->truncated, 255U * 17 - 100);
}

TEST(GenericNack, WriterRoundTrips) {
  const std::vector<std::uint16_t> lost{100, 101, 103, 116, 65535, 0};
  std::array<std::uint8_t, 64> out{};
  const std::size_t n = write_generic_nack(1, 0x12345678, lost, out);
  ASSERT_EQ(n, kNack.size());
  EXPECT_TRUE(std::equal(kNack.begin(), kNack.end(), out.begin()));
  std::vector<std::uint16_t> back;
  ASSERT_TRUE(parse_generic_nack(std::span(out).first(n), back));
  EXPECT_EQ(back, lost);
  EXPECT_EQ(write_generic_nack(1, 2, lost, std::span(out).first(16)), 0U);  // too small
  EXPECT_EQ(write_generic_nack(1, 2, {}, out), 0U);
}

TEST(KeyFrameRequest, ReadsPliAndFir) {
  const auto pli = parse_key_frame_request(kPli);
  ASSERT_TRUE(pli);
  EXPECT_EQ(pli->kind, KeyFrameRequestKind::kPli);
  EXPECT_EQ(pli->media_ssrc, 0x12345678U);
  const auto fir = parse_key_frame_request(kFir);
  ASSERT_TRUE(fir);
  EXPECT_EQ(fir->kind, KeyFrameRequestKind::kFir);
  EXPECT_EQ(fir->sender_ssrc, 1U);
  EXPECT_EQ(fir->media_ssrc, 0x12345678U);
}

TEST(KeyFrameRequest, RefusesOthers) {
  EXPECT_FALSE(parse_key_frame_request(kNack));                      // RTPFB
  EXPECT_FALSE(parse_key_frame_request(std::span(kFir).first(12)));  // FIR without FCI
  EXPECT_FALSE(parse_key_frame_request(std::span(kPli).first(8)));   // short
  auto bad = kPli;
  bad[0] = 0x82;  // SLI: not read
  EXPECT_FALSE(parse_key_frame_request(bad));
  bad = kPli;
  bad[3] = 0x03;  // length past the end
  EXPECT_FALSE(parse_key_frame_request(bad));
}

}  // namespace
}  // namespace predrop::wire

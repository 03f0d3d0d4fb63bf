// Transport-cc feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1) from annotated
// hex fixtures, round trips through the writer, and malformed messages refused.
#include "predrop/wire/transport_cc.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace predrop::wire {
namespace {

// A run-length chunk: three packets from 10, all with small deltas.
constexpr std::array<std::uint8_t, 28> kRunLength = {
    0x8f, 0xcd, 0x00, 0x06,  // V=2, FMT=15, PT=205 (RTPFB), length 6 (28 bytes)
    0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
    0x00, 0x00, 0x00, 0x02,  // SSRC of media source
    0x00, 0x0a, 0x00, 0x03,  // base sequence 10, packet status count 3
    0x00, 0x00, 0x10, 0x05,  // reference time 16 (x 64 ms), feedback packet count 5
    0x20, 0x03,              // run length chunk: 0 | symbol 01 (small delta) | run 3
    0x04, 0x08, 0x02,        // deltas: 4, 8, 2 (x 250 us)
    0x00, 0x00, 0x00,        // padding to 32 bits
};

// A two-bit status vector over a sequence wrap: received, lost, received with a negative delta.
constexpr std::array<std::uint8_t, 28> kStatusVector = {
    0x8f, 0xcd, 0x00, 0x06,  // header, length 6
    0x00, 0x00, 0x00, 0x01,  // sender SSRC
    0x00, 0x00, 0x00, 0x02,  // media SSRC
    0xff, 0xfe, 0x00, 0x03,  // base sequence 65534, count 3
    0xff, 0xff, 0xff, 0x00,  // reference time -1 (-64 ms), feedback count 0
    0xd2, 0x00,              // 1 | S=1 | 01 00 10 00 00 00 00: small, lost, large
    0x10,                    // small delta 16 (4 ms)
    0xff, 0xf8,              // large delta -8 (-2 ms)
    0x00, 0x00, 0x00,        // padding
};

TEST(TransportCc, ReadsARunLengthChunk) {
  std::vector<TwccPacket> p;
  const auto f = parse_transport_cc(kRunLength, p);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->sender_ssrc, 1U);
  EXPECT_EQ(f->media_ssrc, 2U);
  EXPECT_EQ(f->base_sequence, 10);
  EXPECT_EQ(f->reference_time, 16);
  EXPECT_EQ(f->feedback_count, 5);
  ASSERT_EQ(p.size(), 3U);
  EXPECT_EQ(p[0], (TwccPacket{10, true, 1'025'000}));
  EXPECT_EQ(p[1], (TwccPacket{11, true, 1'027'000}));
  EXPECT_EQ(p[2], (TwccPacket{12, true, 1'027'500}));
}

TEST(TransportCc, ReadsATwoBitVectorWithALossAndANegativeDeltaAcrossTheWrap) {
  std::vector<TwccPacket> p;
  const auto f = parse_transport_cc(kStatusVector, p);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->reference_time, -1);
  ASSERT_EQ(p.size(), 3U);
  EXPECT_EQ(p[0], (TwccPacket{65534, true, -60'000}));
  EXPECT_EQ(p[1], (TwccPacket{65535, false, 0}));
  EXPECT_EQ(p[2], (TwccPacket{0, true, -62'000}));
}

TEST(TransportCc, WriterRoundTripsThroughTheParser) {
  std::vector<TwccPacket> in;
  for (std::uint16_t i = 0; i < 40; ++i) {
    in.push_back({static_cast<std::uint16_t>(65520 + i), i % 5 != 3,
                  i % 5 != 3 ? 2'000'000 + std::int64_t{i} * 1250 - (i == 7 ? 9000 : 0) : 0});
  }
  std::array<std::uint8_t, 512> buf{};
  const TwccFeedback h{7, 8, 0, 0, 31, 9};
  const std::size_t n = write_transport_cc(h, in, buf);
  ASSERT_GT(n, 0U);
  EXPECT_EQ(n % 4, 0U);
  std::vector<TwccPacket> out;
  const auto f = parse_transport_cc(std::span(buf).first(n), out);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->status_count, 40);
  EXPECT_EQ(out, in);
}

TEST(TransportCc, RefusesTruncatedAndReservedAndOtherRtcp) {
  std::vector<TwccPacket> p;
  EXPECT_FALSE(parse_transport_cc(std::span(kRunLength).first(24), p));  // length says 28
  auto reserved = kRunLength;
  reserved[20] = 0x60;  // run length chunk with symbol 11
  EXPECT_FALSE(parse_transport_cc(reserved, p));
  auto short_deltas = kRunLength;
  short_deltas[15] = 0x07;  // seven packets with 1-byte deltas, six bytes left after the chunk
  short_deltas[21] = 0x07;
  EXPECT_FALSE(parse_transport_cc(short_deltas, p));
  auto nack = kRunLength;
  nack[0] = 0x81;  // RTPFB FMT 1: a generic NACK
  EXPECT_FALSE(parse_transport_cc(nack, p));
  EXPECT_TRUE(p.empty());
}

}  // namespace
}  // namespace predrop::wire

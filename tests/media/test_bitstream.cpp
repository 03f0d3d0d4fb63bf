// Pure H.264 / AAC helpers of the packetizer (media/src/bitstream.hpp), on annotated byte fixtures.
#include "bitstream.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace predrop::media::detail {
namespace {

using V = std::vector<std::uint8_t>;

V to_vec(Bytes b) {
  return V(b.begin(), b.end());
}

TEST(Bitstream, SplitsAnnexBWithThreeAndFourByteStartCodes) {
  const V data = {
      0x00, 0x00, 0x00, 0x01, 0x67, 0x42, 0x00,  // 4-byte start code, SPS (3 bytes)
      0x00, 0x00, 0x01, 0x68, 0xce,              // 3-byte start code, PPS
      0x00, 0x00, 0x00, 0x01, 0x65, 0x88, 0x00,  // IDR slice with a trailing_zero_8bits byte
  };
  std::vector<Bytes> out;
  EXPECT_TRUE(split_annexb(data, out));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(to_vec(out[0]), (V{0x67, 0x42}));  // the zero before the next start code is trailing
  EXPECT_EQ(to_vec(out[1]), (V{0x68, 0xce}));
  EXPECT_EQ(to_vec(out[2]), (V{0x65, 0x88}));
  EXPECT_EQ(nal_type(out[2]), kNalIdr);
  EXPECT_EQ(nal_ref_idc(out[2]), 3);
}

TEST(Bitstream, AnnexBJunkBeforeFirstStartCodeIsReported) {
  const V data = {0x12, 0x00, 0x00, 0x01, 0x09, 0xf0};
  std::vector<Bytes> out;
  EXPECT_FALSE(split_annexb(data, out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(nal_type(out[0]), kNalAud);
}

TEST(Bitstream, SplitsLengthPrefixedAndStopsAtOverrun) {
  const V good = {0x00, 0x00, 0x00, 0x02, 0x06, 0x05,  // SEI, 2 bytes
                  0x00, 0x00, 0x00, 0x01, 0x41};       // P slice, 1 byte
  std::vector<Bytes> out;
  EXPECT_TRUE(split_length_prefixed(good, 4, out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(nal_type(out[1]), kNalSlice);

  const V overrun = {0x00, 0x02, 0x06, 0x05,  // 2-byte lengths: SEI
                     0x00, 0x09, 0x41};       // claims 9 bytes, has 1
  out.clear();
  EXPECT_FALSE(split_length_prefixed(overrun, 2, out));
  EXPECT_EQ(out.size(), 1u);
  out.clear();
  EXPECT_FALSE(split_length_prefixed(good, 3, out));  // 3-byte lengths do not exist
}

TEST(Bitstream, ParsesAvcC) {
  const V avcc = {
      0x01, 0x64, 0x00, 0x1e,        // version 1, High profile, compat, level 3.0
      0xff,                          // 111111 + lengthSizeMinusOne = 3
      0xe1,                          // 111 + one SPS
      0x00, 0x03, 0x67, 0x64, 0x00,  // SPS of 3 bytes
      0x01,                          // one PPS
      0x00, 0x02, 0x68, 0xef,        // PPS of 2 bytes
  };
  auto c = parse_avcc(avcc);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->length_size, 4);
  ASSERT_EQ(c->sps.size(), 1u);
  EXPECT_EQ(c->sps[0], (V{0x67, 0x64, 0x00}));
  ASSERT_EQ(c->pps.size(), 1u);
  EXPECT_EQ(c->pps[0], (V{0x68, 0xef}));

  V truncated(avcc.begin(), avcc.end() - 1);
  EXPECT_FALSE(parse_avcc(truncated));
  EXPECT_FALSE(parse_avcc(V{0x00, 0x00, 0x00, 0x01, 0x67, 0x64, 0x00}));  // Annex-B
}

TEST(Bitstream, ReadsSliceTypeThroughEmulationPrevention) {
  // first_mb_in_slice = 0 ("1"), slice_type = 1 (B, "010"): bits 1010 0000 -> 0xa0.
  EXPECT_EQ(parse_slice_type(V{0x01, 0xa0}), 1);
  // slice_type = 7 (I, all slices; "0001000"): bits 1 0001000 -> 0x88 -> 7 % 5 = 2.
  EXPECT_EQ(parse_slice_type(V{0x65, 0x88, 0x80}), 2);
  // first_mb_in_slice with 23 leading zeros: RBSP 00 00 01 00 00 01 (ue = 2^23 - 1, then
  // slice_type "1" = 0, P) must be escaped as 00 00 03 01 00 00 03 01. Reading the escaped bytes
  // literally would give no valid slice type.
  EXPECT_EQ(parse_slice_type(V{0x41, 0x00, 0x00, 0x03, 0x01, 0x00, 0x00, 0x03, 0x01}), 0);
  EXPECT_FALSE(parse_slice_type(V{0x41}));
  EXPECT_FALSE(parse_slice_type(V{0x41, 0x00, 0x00}));  // Exp-Golomb runs off the end
}

TEST(Bitstream, ParsesAdtsAndBuildsAudioSpecificConfig) {
  // FF F1: syncword, MPEG-4, layer 0, no CRC. 4C: profile 01 (AAC-LC), sampling index 0011
  // (48 kHz), private 0, channel bit 0. 80: channel bits 10 (stereo), then frame_length 100 =
  // 00 | 0C | 100 over d[3..5], buffer fullness, and 00 = one raw data block.
  const V adts = {0xff, 0xf1, 0x4c, 0x80, 0x0c, 0x9f, 0xfc};
  auto h = parse_adts(adts);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->header_size, 7u);
  EXPECT_EQ(h->object_type, 2);
  EXPECT_EQ(h->sample_rate_index, 3);
  EXPECT_EQ(h->channel_config, 2);
  EXPECT_EQ(h->frame_size, 100u);
  EXPECT_EQ(h->raw_blocks, 1);
  // AAC-LC 48 kHz stereo: 00010 0011 0010 000 = 0x11 0x90 (the "config=1190" of SDPs).
  EXPECT_EQ(audio_specific_config(2, 3, 2), (V{0x11, 0x90}));
  EXPECT_FALSE(parse_adts(V{0xff, 0xf1, 0x4c}));
  EXPECT_FALSE(parse_adts(V{0x12, 0xf1, 0x4c, 0x80, 0x0c, 0x9f, 0xfc}));
}

TEST(Bitstream, Base64AndHex) {
  EXPECT_EQ(base64(V{}), "");
  EXPECT_EQ(base64(V{'f'}), "Zg==");
  EXPECT_EQ(base64(V{'f', 'o'}), "Zm8=");
  EXPECT_EQ(base64(V{'f', 'o', 'o'}), "Zm9v");
  EXPECT_EQ(base64(V{0x68, 0xef, 0xbc, 0xb0}), "aO+8sA==");  // a PPS from the sample's SDP
  EXPECT_EQ(hex_upper(V{0x64, 0x00, 0x1e}), "64001E");
}

}  // namespace
}  // namespace predrop::media::detail

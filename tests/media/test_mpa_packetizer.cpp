// RFC 2250 §3.5 MPEG audio: the frame-length parser (ISO/IEC 11172-3 / 13818-3 §2.4.2.3) against
// annotated header fixtures, the 4-byte MPA header of whole frames and fragments, and the
// reassembler's handling of lost fragments.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "predrop/media/mpa.hpp"

namespace predrop::media {
namespace {

using V = std::vector<std::uint8_t>;

TEST(Mpa, FrameLengthFromTheHeader) {
  // FF FB 90 00: sync 0xFFE, version 11 (MPEG-1), layer 01 (III), no CRC; bitrate 1001 (128
  // kbit/s), rate 00 (44.1 kHz), no padding: 144 * 128000 / 44100 = 417.
  EXPECT_EQ(mpeg_audio_frame_bytes(V{0xff, 0xfb, 0x90, 0x00}), 417u);
  // The same with the padding bit (0x02 in byte 2): 418.
  EXPECT_EQ(mpeg_audio_frame_bytes(V{0xff, 0xfb, 0x92, 0x00}), 418u);
  // FF FB E4 00: 1110 = 320 kbit/s, 01 = 48 kHz: 144 * 320000 / 48000 = 960.
  EXPECT_EQ(mpeg_audio_frame_bytes(V{0xff, 0xfb, 0xe4, 0x00}), 960u);
  // FF F3 80 00: version 10 (MPEG-2), layer III; 1000 = 64 kbit/s, 00 = 22.05 kHz:
  // 72 * 64000 / 22050 = 208.
  EXPECT_EQ(mpeg_audio_frame_bytes(V{0xff, 0xf3, 0x80, 0x00}), 208u);
  // FF FD A4 00: MPEG-1 layer II (10); 1010 = 192 kbit/s, 48 kHz: 144 * 192000 / 48000 = 576.
  EXPECT_EQ(mpeg_audio_frame_bytes(V{0xff, 0xfd, 0xa4, 0x00}), 576u);
  // FF FF 90 00: MPEG-1 layer I (11); 1001 = 288 kbit/s, 44.1 kHz: (12 * 288000 / 44100) * 4 = 312.
  EXPECT_EQ(mpeg_audio_frame_bytes(V{0xff, 0xff, 0x90, 0x00}), 312u);
  // FF E3 80 00: version 00 (MPEG-2.5), layer III, 64 kbit/s, 11.025 kHz: 72 * 64000 / 11025 = 417.
  EXPECT_EQ(mpeg_audio_frame_bytes(V{0xff, 0xe3, 0x80, 0x00}), 417u);

  EXPECT_FALSE(mpeg_audio_frame_bytes(V{0xff, 0xfb, 0x00, 0x00}));  // free format
  EXPECT_FALSE(mpeg_audio_frame_bytes(V{0xff, 0xfb, 0xf0, 0x00}));  // bitrate index 15
  EXPECT_FALSE(mpeg_audio_frame_bytes(V{0xff, 0xfb, 0x9c, 0x00}));  // rate index 3
  EXPECT_FALSE(mpeg_audio_frame_bytes(V{0xff, 0xeb, 0x90, 0x00}));  // version 01 (reserved)
  EXPECT_FALSE(mpeg_audio_frame_bytes(V{0xff, 0xf9, 0x90, 0x00}));  // layer 00 (reserved)
  EXPECT_FALSE(mpeg_audio_frame_bytes(V{0xfe, 0xfb, 0x90, 0x00}));  // no sync word
  EXPECT_FALSE(mpeg_audio_frame_bytes(V{0xff, 0xfb, 0x90}));        // too short
}

// A 418-byte MPEG-1 layer III frame (128 kbit/s, 44.1 kHz, padded) with a counting body.
V frame418() {
  V f(418);
  f[0] = 0xff;
  f[1] = 0xfb;
  f[2] = 0x92;
  f[3] = 0x00;
  for (std::size_t i = 4; i < f.size(); ++i) {
    f[i] = static_cast<std::uint8_t>(i);
  }
  return f;
}

std::vector<V> packetize(const V& frame, std::size_t limit) {
  std::vector<V> out;
  EXPECT_TRUE(packetize_mpa(
      frame, limit, [&](std::span<const std::uint8_t> head, std::span<const std::uint8_t> body) {
        V p(head.begin(), head.end());
        p.insert(p.end(), body.begin(), body.end());
        out.push_back(std::move(p));
      }));
  return out;
}

TEST(Mpa, OneFramePerPacketFragmentedOnlyAboveTheLimit) {
  const V frame = frame418();
  // Fits: MBZ 00 00, Frag_offset 00 00, then the frame as is.
  const auto whole = packetize(frame, 1200);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(V(whole[0].begin(), whole[0].begin() + 8),
            (V{0x00, 0x00, 0x00, 0x00, 0xff, 0xfb, 0x92, 0x00}));
  EXPECT_EQ(whole[0].size(), 422u);
  // A 204-byte limit: 200 bytes of data per packet at offsets 0, 200 (00 c8), 400 (01 90).
  const auto parts = packetize(frame, 204);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(V(parts[1].begin(), parts[1].begin() + 4), (V{0x00, 0x00, 0x00, 0xc8}));
  EXPECT_EQ(V(parts[2].begin(), parts[2].begin() + 4), (V{0x00, 0x00, 0x01, 0x90}));
  EXPECT_EQ(parts[2].size(), 4u + 18u);
  auto parsed = parse_mpa_payload(parts[2]);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->fragment_offset, 400u);
  EXPECT_EQ(parsed->data.size(), 18u);
  EXPECT_FALSE(parse_mpa_payload(V{0, 0, 0, 0}));  // a header without data
  EXPECT_FALSE(packetize_mpa(frame, 4, [](auto, auto) {}));
}

TEST(Mpa, ReassemblerKeepsWholeFramesAndDropsBrokenOnes) {
  const V frame = frame418();
  const auto parts = packetize(frame, 204);
  std::vector<std::pair<std::uint32_t, V>> got;
  MpaReassembler r([&](std::uint32_t ts, std::span<const std::uint8_t> f) {
    got.emplace_back(ts, V(f.begin(), f.end()));
  });
  // Frame at 0 whole; frame at 2351 without its middle fragment; frame at 4702 without its last;
  // frame at 7053 whole.
  for (const auto& p : parts)
    r.push(0, p);
  r.push(2351, parts[0]);
  r.push(2351, parts[2]);
  r.push(4702, parts[0]);
  r.push(4702, parts[1]);
  for (const auto& p : parts)
    r.push(7053, p);
  r.flush();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, 0u);
  EXPECT_EQ(got[0].second, frame);
  EXPECT_EQ(got[1].first, 7053u);
  EXPECT_EQ(got[1].second, frame);
  EXPECT_EQ(r.malformed(), 2u);
}

}  // namespace
}  // namespace predrop::media

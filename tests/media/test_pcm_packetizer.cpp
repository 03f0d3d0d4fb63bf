// RFC 3551 §4.5.11 (L16) and RFC 3190 §4 (L24): byte order against annotated hex fixtures, whole
// sample frames per packet under the payload limit and the 20 ms ptime, the payload check of the
// receive side, the float conversion of the audio score, and a round trip at several limits.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "predrop/media/pcm.hpp"

namespace predrop::media {
namespace {

using V = std::vector<std::uint8_t>;

std::vector<std::pair<V, std::size_t>> packetize(const V& network, std::size_t frame_bytes,
                                                 std::size_t per_packet) {
  std::vector<std::pair<V, std::size_t>> out;
  packetize_pcm(network, frame_bytes, per_packet,
                [&](std::span<const std::uint8_t> p, std::size_t first) {
                  out.emplace_back(V(p.begin(), p.end()), first);
                });
  return out;
}

TEST(Pcm, LittleEndianS16BecomesNetworkOrder) {
  // WAV pcm_s16le, stereo: L0 = 0x0102, R0 = 0xfffe (-2), L1 = 0x7fff, R1 = 0x8000.
  const V wav = {0x02, 0x01, /**/ 0xfe, 0xff, /**/ 0xff, 0x7f, /**/ 0x00, 0x80};
  V net;
  pcm_to_network_order(wav, 2, true, net);
  // L16: the same samples, most significant byte first.
  EXPECT_EQ(net, (V{0x01, 0x02, /**/ 0xff, 0xfe, /**/ 0x7f, 0xff, /**/ 0x80, 0x00}));
  // Big-endian input (pcm_s16be) is copied as is; a trailing odd byte is left out.
  V copy;
  pcm_to_network_order(V{0x01, 0x02, 0x03}, 2, false, copy);
  EXPECT_EQ(copy, (V{0x01, 0x02}));
}

TEST(Pcm, LittleEndianS24BecomesNetworkOrder) {
  // WAV pcm_s24le, mono: s0 = 0x123456, s1 = 0xfffffe (-2).
  const V wav = {0x56, 0x34, 0x12, /**/ 0xfe, 0xff, 0xff, /**/ 0xaa};
  V net;
  pcm_to_network_order(wav, 3, true, net);
  // L24: 3 bytes per sample, most significant first; the partial sample is left out.
  EXPECT_EQ(net, (V{0x12, 0x34, 0x56, /**/ 0xff, 0xff, 0xfe}));
}

TEST(Pcm, PacketsHoldWholeFramesUnderTheLimitAndThePtime) {
  // 48 kHz stereo L16: 4-byte frames; 1200 bytes hold 300 frames (6.25 ms), under 20 ms.
  EXPECT_EQ(pcm_frames_per_packet({2, 2, 48000}, 1200), 300u);
  // 48 kHz stereo L24: 6-byte frames; 1200 / 6 = 200.
  EXPECT_EQ(pcm_frames_per_packet({3, 2, 48000}, 1200), 200u);
  // 8 kHz mono L16: 20 ms = 160 frames = 320 bytes, though 600 would fit.
  EXPECT_EQ(pcm_frames_per_packet({2, 1, 8000}, 1200), 160u);
  // 6 channels of L24 (18-byte frames) in a 64-byte payload: 3 frames, 54 bytes.
  EXPECT_EQ(pcm_frames_per_packet({3, 6, 48000}, 64), 3u);
  EXPECT_EQ(pcm_frames_per_packet({3, 32, 48000}, 64), 0u);  // not even one frame fits

  // Ten stereo L16 frames at 4 frames per packet: 4 + 4 + 2, timestamps +0, +4, +8.
  V net(40);
  for (std::size_t i = 0; i < net.size(); ++i) {
    net[i] = static_cast<std::uint8_t>(i);
  }
  const auto packets = packetize(net, 4, 4);
  ASSERT_EQ(packets.size(), 3u);
  EXPECT_EQ(packets[0].first, V(net.begin(), net.begin() + 16));
  EXPECT_EQ(packets[0].second, 0u);
  EXPECT_EQ(packets[1].second, 4u);
  EXPECT_EQ(packets[2].first, V(net.begin() + 32, net.end()));
  EXPECT_EQ(packets[2].second, 8u);
}

TEST(Pcm, ReceiverCountsWholeFramesOnly) {
  const PcmFormat l24_stereo{3, 2, 48000};
  EXPECT_EQ(pcm_payload_frames(V(12), l24_stereo), 2u);
  EXPECT_FALSE(pcm_payload_frames(V(13), l24_stereo));  // a partial frame (RFC 3551 §4.3)
  EXPECT_FALSE(pcm_payload_frames(V{}, l24_stereo));
  EXPECT_FALSE(pcm_payload_frames(V(4), PcmFormat{2, 0, 48000}));
}

TEST(Pcm, FloatSamplesAreSignedFullScale) {
  std::vector<float> f;
  // L16: 0x7fff, 0x8000, 0xffff, 0x0000.
  pcm_to_float(V{0x7f, 0xff, 0x80, 0x00, 0xff, 0xff, 0x00, 0x00}, 2, f);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_FLOAT_EQ(f[0], 32767.0f / 32768.0f);
  EXPECT_FLOAT_EQ(f[1], -1.0f);
  EXPECT_FLOAT_EQ(f[2], -1.0f / 32768.0f);
  EXPECT_FLOAT_EQ(f[3], 0.0f);
  f.clear();
  // L24: 0x800000 (-1.0), 0x400000 (0.5), trailing partial sample ignored.
  pcm_to_float(V{0x80, 0x00, 0x00, 0x40, 0x00, 0x00, 0x01}, 3, f);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_FLOAT_EQ(f[0], -1.0f);
  EXPECT_FLOAT_EQ(f[1], 0.5f);
}

TEST(Pcm, RoundTripAtSeveralLimits) {
  std::mt19937 gen(24);
  for (const PcmFormat format : {PcmFormat{2, 1, 44100}, PcmFormat{2, 2, 48000},
                                 PcmFormat{3, 2, 96000}, PcmFormat{3, 6, 48000}}) {
    for (const std::size_t limit : {64u, 100u, 1200u, 9000u}) {
      V raw(4099);
      for (auto& b : raw) {
        b = static_cast<std::uint8_t>(gen());
      }
      V net;
      pcm_to_network_order(raw, format.sample_bytes, true, net);
      const std::size_t per = pcm_frames_per_packet(format, limit);
      ASSERT_GT(per, 0u);
      V back;
      std::size_t next_frame = 0;
      for (const auto& [payload, first] : packetize(net, format.frame_bytes(), per)) {
        EXPECT_LE(payload.size(), limit);
        EXPECT_EQ(first, next_frame);
        const auto frames = pcm_payload_frames(payload, format);
        ASSERT_TRUE(frames);
        next_frame += *frames;
        back.insert(back.end(), payload.begin(), payload.end());
      }
      const std::size_t whole = raw.size() / format.frame_bytes() * format.frame_bytes();
      ASSERT_EQ(back.size(), whole);
      // Swapping back gives the input's whole frames.
      V again;
      pcm_to_network_order(back, format.sample_bytes, true, again);
      EXPECT_EQ(again, V(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(whole)));
    }
  }
}

}  // namespace
}  // namespace predrop::media

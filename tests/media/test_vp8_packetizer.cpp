// RFC 7741: the VP8 payload descriptor against annotated hex fixtures, the frame-header parser
// (RFC 6386 §9.1, §19.2) on key and inter frames, the depacketizer's loss handling, and a round
// trip of random frames at several payload limits.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "payload_test_util.hpp"
#include "predrop/media/vp8_depacketizer.hpp"
#include "vp8_packetizer.hpp"

namespace predrop::media::detail {
namespace {

using V = std::vector<std::uint8_t>;

std::vector<V> packetize(const V& frame, std::uint16_t picture_id, bool non_reference,
                         std::size_t max_payload) {
  return test::collect_payloads([&](const auto& emit) {
    packetize_vp8(frame, picture_id, non_reference, max_payload, emit);
  });
}

// The boolean encoder of RFC 6386 §7.3 (the test's own, to write inter-frame headers).
class BoolEncoder {
 public:
  void put(bool bit, int prob = 128) {
    const std::uint32_t split = 1 + (((range_ - 1) * static_cast<std::uint32_t>(prob)) >> 8);
    if (bit) {
      bottom_ += split;
      range_ -= split;
    } else {
      range_ = split;
    }
    while (range_ < 128) {
      range_ <<= 1;
      if (bottom_ & (1u << 31)) carry();
      bottom_ <<= 1;
      if (!--bit_count_) {
        out_.push_back(static_cast<std::uint8_t>(bottom_ >> 24));
        bottom_ &= (1 << 24) - 1;
        bit_count_ = 8;
      }
    }
  }
  void literal(std::uint32_t v, int bits) {
    while (bits-- > 0)
      put(((v >> bits) & 1) != 0);
  }
  V finish() {
    for (int i = 0; i < 32; ++i)
      put(false);
    return out_;
  }

 private:
  void carry() {
    for (auto it = out_.rbegin(); it != out_.rend(); ++it) {
      if (*it != 0xff) {
        ++*it;
        return;
      }
      *it = 0;
    }
  }
  std::uint32_t range_ = 255;
  std::uint32_t bottom_ = 0;
  int bit_count_ = 24;
  V out_;
};

// An inter frame whose header refreshes exactly what is asked (no segmentation, no deltas).
V inter_frame(bool refresh_golden, bool refresh_alt, bool refresh_entropy, bool refresh_last) {
  BoolEncoder e;
  e.put(false);             // segmentation_enabled
  e.literal(0, 1 + 6 + 3);  // filter_type, loop_filter_level, sharpness_level
  e.put(false);             // loop_filter_adj_enable
  e.literal(0, 2);          // log2_nbr_of_dct_partitions
  e.literal(10, 7);         // y_ac_qi
  for (int i = 0; i < 5; ++i)
    e.put(false);  // no quantizer deltas
  e.put(refresh_golden);
  e.put(refresh_alt);
  if (!refresh_golden) e.literal(0, 2);  // copy_buffer_to_golden
  if (!refresh_alt) e.literal(0, 2);     // copy_buffer_to_alternate
  e.literal(0, 2);                       // sign biases
  e.put(refresh_entropy);
  e.put(refresh_last);
  const V part = e.finish();
  // Frame tag: inter (bit 0 = 1), version 0, show_frame, first_part_size.
  const std::uint32_t tag = 1 | (1 << 4) | (static_cast<std::uint32_t>(part.size()) << 5);
  V frame = {static_cast<std::uint8_t>(tag), static_cast<std::uint8_t>(tag >> 8),
             static_cast<std::uint8_t>(tag >> 16)};
  frame.insert(frame.end(), part.begin(), part.end());
  return frame;
}

TEST(Vp8Descriptor, ShortestAndLongestForms) {
  // 0x10: X=0, N=0, S=1, PID=0; then the payload.
  auto d = parse_vp8_descriptor(V{0x10, 0x9d});
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->start);
  EXPECT_FALSE(d->picture_id);
  EXPECT_EQ(d->size, 1u);
  // 0xb1: X=1, N=1, S=1, PID=1 | 0xf0: I L T K | 0x92 0x34: M=1, PictureID 0x1234 |
  // 0x56: TL0PICIDX | 0x85: TID=2, Y=0, KEYIDX=5 | payload 0xaa.
  d = parse_vp8_descriptor(V{0xb1, 0xf0, 0x92, 0x34, 0x56, 0x85, 0xaa});
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->non_reference);
  EXPECT_EQ(d->partition, 1);
  EXPECT_EQ(d->picture_id, 0x1234);
  EXPECT_EQ(d->tl0_pic_idx, 0x56);
  EXPECT_EQ(d->tid, 2);
  EXPECT_FALSE(d->layer_sync);
  EXPECT_EQ(d->key_idx, 5);
  EXPECT_EQ(d->size, 6u);
  // 7-bit PictureID (M=0): 0x90 0x80 0x05.
  d = parse_vp8_descriptor(V{0x90, 0x80, 0x05, 0x00});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->picture_id, 5);
  // Truncated: the extension byte promises fields that are not there, or no payload follows.
  EXPECT_FALSE(parse_vp8_descriptor(V{0x90, 0x80, 0x85}));
  EXPECT_FALSE(parse_vp8_descriptor(V{0x10}));
  EXPECT_FALSE(parse_vp8_descriptor(V{}));
}

TEST(Vp8Packetizer, DescriptorOfEveryPacket) {
  const V frame(100, 0x5a);
  const auto out = packetize(frame, 0x1234, true, 64);
  ASSERT_EQ(out.size(), 2u);
  // 0xb0: X=1, N=1, S=1, PID=0 | 0x80: I | 0x92 0x34: M=1, PictureID 0x1234 | 60 frame bytes.
  EXPECT_EQ(V(out[0].begin(), out[0].begin() + 4), (V{0xb0, 0x80, 0x92, 0x34}));
  EXPECT_EQ(out[0].size(), 64u);
  // The continuation: S=0.
  EXPECT_EQ(V(out[1].begin(), out[1].begin() + 4), (V{0xa0, 0x80, 0x92, 0x34}));
  EXPECT_EQ(out[1].size(), 4u + 40u);
}

TEST(Vp8Frame, KeyAndInterFramesAndWhatTheyRefresh) {
  // Key frame: tag 0x10 0x00 0x00 (key, show_frame), start code 9d 01 2a, 320x240.
  auto info = parse_vp8_frame(V{0x10, 0x00, 0x00, 0x9d, 0x01, 0x2a, 0x40, 0x01, 0xf0, 0x00});
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->key);
  EXPECT_TRUE(info->reference);
  EXPECT_FALSE(parse_vp8_frame(V{0x10, 0x00, 0x00, 0x9d, 0x01, 0x2b, 0x40, 0x01, 0xf0, 0x00}));

  info = parse_vp8_frame(inter_frame(false, false, false, true));
  ASSERT_TRUE(info);
  EXPECT_FALSE(info->key);
  EXPECT_TRUE(info->reference);  // refreshes the last frame
  info = parse_vp8_frame(inter_frame(false, false, false, false));
  ASSERT_TRUE(info);
  EXPECT_FALSE(info->reference);  // nothing refreshed, entropy context discarded: droppable
  info = parse_vp8_frame(inter_frame(false, false, true, false));
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->reference);  // keeps its probabilities for later frames
  info = parse_vp8_frame(inter_frame(true, false, false, false));
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->reference);     // refreshes golden
  EXPECT_EQ(info->temporal_id, 1);  // and nothing else: layer 1 of a 0-2-1-2 pattern
  info = parse_vp8_frame(inter_frame(true, false, false, true));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->temporal_id, 0);  // golden and last: layer 0
  info = parse_vp8_frame(inter_frame(false, true, false, false));
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->reference);
  EXPECT_EQ(info->temporal_id, 0);  // an altref: not a layer-1 picture
  info = parse_vp8_frame(inter_frame(false, false, false, true));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->temporal_id, 0);
  // A first partition size beyond the frame.
  V bad = inter_frame(false, false, false, false);
  bad.resize(5);
  EXPECT_FALSE(parse_vp8_frame(bad));
}

struct Unit {
  V data;
  bool damaged;
};

TEST(Vp8Depacketizer, FrameWithALostPacketIsDroppedWhole) {
  std::vector<Unit> units;
  Vp8Depacketizer d([&](const AccessUnit& au) {
    units.push_back({V(au.data.begin(), au.data.end()), false});
  });
  d.push(1, 0, false, V{0x90, 0x80, 0x80, 0x00, 0x01, 0x02});  // start of frame 0
  d.push(3, 0, true, V{0x80, 0x80, 0x80, 0x00, 0x05});         // its end; 2 was lost
  EXPECT_TRUE(units.empty());
  d.push(4, 3000, false, V{0x90, 0x80, 0x80, 0x01, 0x0a});  // frame 1, whole
  d.push(5, 3000, true, V{0x80, 0x80, 0x80, 0x01, 0x0b});
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].data, (V{0x0a, 0x0b}));
  d.push(7, 6000, true, V{0x80, 0x80, 0x80, 0x02, 0x0c});  // no start: dropped
  EXPECT_EQ(units.size(), 1u);
  // The partial frame 0, its orphaned end, and the start-less packet 7.
  EXPECT_EQ(d.stats().dropped_fragments, 3u);
}

TEST(Vp8RoundTrip, RandomFramesComeBackByteForByte) {
  test::expect_random_frames_round_trip<Vp8Depacketizer>(
      7741, {64u, 500u, 1200u}, [](const V& frame, int f, std::size_t max_payload) {
        return packetize(frame, static_cast<std::uint16_t>(f), false, max_payload);
      });
}

}  // namespace
}  // namespace predrop::media::detail

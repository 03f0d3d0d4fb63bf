// RFC 9628: the VP9 payload descriptor against annotated hex fixtures, the uncompressed-header
// parser (VP9 bitstream spec §6.2, superframes Annex B), the depacketizer's loss handling, and a
// round trip of random samples at several payload limits.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "payload_test_util.hpp"
#include "predrop/media/vp9_depacketizer.hpp"
#include "vp9_packetizer.hpp"

namespace predrop::media::detail {
namespace {

using V = std::vector<std::uint8_t>;

std::vector<V> packetize(const V& sample, std::uint16_t picture_id, bool inter,
                         std::size_t max_payload) {
  return test::collect_payloads(
      [&](const auto& emit) { packetize_vp9(sample, picture_id, inter, max_payload, emit); });
}

// Writes fixed-width fields MSB first, for uncompressed headers.
struct BitWriter {
  V out;
  int used = 8;
  void put(std::uint32_t value, int bits) {
    while (bits-- > 0) {
      if (used == 8) {
        out.push_back(0);
        used = 0;
      }
      out.back() |= static_cast<std::uint8_t>(((value >> bits) & 1) << (7 - used++));
    }
  }
};

// A profile-0 inter frame header: refresh_frame_flags and refresh_frame_context as asked.
V inter_frame(std::uint32_t refresh, bool error_resilient, bool refresh_context) {
  BitWriter w;
  w.put(2, 2);  // frame_marker
  w.put(0, 2);  // profile 0
  w.put(0, 1);  // show_existing_frame
  w.put(1, 1);  // frame_type: non-key
  w.put(1, 1);  // show_frame
  w.put(error_resilient ? 1 : 0, 1);
  if (!error_resilient) w.put(0, 2);  // reset_frame_context
  w.put(refresh, 8);
  for (int i = 0; i < 3; ++i)
    w.put(i, 4);  // ref_frame_idx, sign bias
  w.put(1, 1);    // found_ref
  w.put(0, 1);    // render_and_frame_size_different
  w.put(0, 1);    // allow_high_precision_mv
  w.put(1, 1);    // is_filter_switchable
  if (!error_resilient) {
    w.put(refresh_context ? 1 : 0, 1);
    w.put(0, 1);  // frame_parallel_decoding_mode
  }
  w.put(0, 16);  // the rest of the frame
  return w.out;
}

TEST(Vp9Descriptor, ShortestAndLongestForms) {
  // 0x8c: I, B, E | 0x80 0x05: M=1, PICTURE ID 5 | payload.
  auto d = parse_vp9_descriptor(V{0x8c, 0x80, 0x05, 0xaa});
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->begin);
  EXPECT_TRUE(d->end);
  EXPECT_FALSE(d->inter_predicted);
  EXPECT_EQ(d->picture_id, 5);
  EXPECT_EQ(d->size, 3u);
  // 0xe8: I, P, L, B (non-flexible) | 0x17: 7-bit PICTURE ID 0x17 | 0x43: TID 2, U 0, SID 1,
  // D 1 | 0x09: TL0PICIDX | payload.
  d = parse_vp9_descriptor(V{0xe8, 0x17, 0x43, 0x09, 0xbb});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->picture_id, 0x17);
  EXPECT_EQ(d->tid, 2);
  EXPECT_EQ(d->sid, 1);
  EXPECT_EQ(d->tl0_pic_idx, 9);
  EXPECT_EQ(d->size, 4u);
  // 0xd2: I, P, F, V | 0x81 0x00: PICTURE ID 256 | 0x03 0x04: two P_DIFF (N on the first) |
  // SS 0x18: N_S = 1, Y, G | 0x01 0x40 0x00 0xb4: 320x180 | N_G 1 | 0x04: R = 1 | 0x01 P_DIFF
  // | payload.
  d = parse_vp9_descriptor(
      V{0xd2, 0x81, 0x00, 0x03, 0x04, 0x18, 0x01, 0x40, 0x00, 0xb4, 0x01, 0x04, 0x01, 0xcc});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->picture_id, 256);
  EXPECT_EQ(d->reference_diffs, 2);
  EXPECT_TRUE(d->scalability);
  EXPECT_EQ(d->size, 13u);
  // Truncated, or four P_DIFF in a row (at most three).
  EXPECT_FALSE(parse_vp9_descriptor(V{0x8c, 0x80}));
  EXPECT_FALSE(parse_vp9_descriptor(V{0x8c, 0x80, 0x05}));
  EXPECT_FALSE(parse_vp9_descriptor(V{0x50, 0x01, 0x01, 0x01, 0x01, 0xaa}));
}

TEST(Vp9Packetizer, DescriptorOfEveryPacket) {
  const auto out = packetize(V(100, 0x5a), 0x1234, true, 64);
  ASSERT_EQ(out.size(), 2u);
  // 0xc8: I, P, B | 0x92 0x34: M=1, PICTURE ID 0x1234 | 61 sample bytes.
  EXPECT_EQ(V(out[0].begin(), out[0].begin() + 3), (V{0xc8, 0x92, 0x34}));
  EXPECT_EQ(out[0].size(), 64u);
  // 0xc4: I, P, E | the remaining 39 bytes.
  EXPECT_EQ(V(out[1].begin(), out[1].begin() + 3), (V{0xc4, 0x92, 0x34}));
  EXPECT_EQ(out[1].size(), 3u + 39u);
}

TEST(Vp9Frame, KeyInterAndSuperframes) {
  // Key frame: marker 2, profile 0, show_existing 0, frame_type 0, show 1, error_res 0 ->
  // 1000 0010 = 0x82, then the sync code 49 83 42 shifted by one bit... written with BitWriter.
  BitWriter key;
  key.put(2, 2);
  key.put(0, 2);
  key.put(0, 1);
  key.put(0, 1);  // KEY_FRAME
  key.put(1, 1);
  key.put(0, 1);
  key.put(0x498342, 24);
  key.put(0, 16);
  auto info = parse_vp9_frame(key.out);
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->key);
  EXPECT_TRUE(info->reference);

  info = parse_vp9_frame(inter_frame(0x01, false, false));
  ASSERT_TRUE(info);
  EXPECT_FALSE(info->key);
  EXPECT_TRUE(info->reference);  // refreshes slot 0
  info = parse_vp9_frame(inter_frame(0, true, false));
  ASSERT_TRUE(info);
  EXPECT_FALSE(info->reference);  // no slot, error resilient: droppable
  info = parse_vp9_frame(inter_frame(0, false, true));
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->reference);  // saves its entropy context

  // A superframe of a droppable frame and a referenced one: the sample is a reference.
  const V a = inter_frame(0, true, false);
  const V b = inter_frame(0x02, true, false);
  V super = a;
  super.insert(super.end(), b.begin(), b.end());
  // Index: 110 00 001 = 0xc1 (2 frames, 1-byte sizes), sizes, 0xc1.
  const V index = {0xc1, static_cast<std::uint8_t>(a.size()), static_cast<std::uint8_t>(b.size()),
                   0xc1};
  super.insert(super.end(), index.begin(), index.end());
  info = parse_vp9_frame(super);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->frames, 2);
  EXPECT_TRUE(info->reference);
  EXPECT_FALSE(parse_vp9_frame(V{0x00, 0x00}));  // frame_marker 0
}

TEST(Vp9Depacketizer, PictureWithALostPacketIsDroppedWhole) {
  std::vector<V> units;
  Vp9Depacketizer d(
      [&](const AccessUnit& au) { units.emplace_back(au.data.begin(), au.data.end()); });
  d.push(1, 0, false, V{0x88, 0x80, 0x00, 0x01});  // B
  d.push(3, 0, true, V{0x84, 0x80, 0x00, 0x03});   // E; 2 lost
  EXPECT_TRUE(units.empty());
  d.push(4, 3000, false, V{0xc8, 0x80, 0x01, 0x0a});
  d.push(5, 3000, true, V{0xc4, 0x80, 0x01, 0x0b});
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0], (V{0x0a, 0x0b}));
}

TEST(Vp9RoundTrip, RandomSamplesComeBackByteForByte) {
  test::expect_random_frames_round_trip<Vp9Depacketizer>(
      9628, {64u, 700u, 1200u}, [](const V& frame, int f, std::size_t max_payload) {
        return packetize(frame, static_cast<std::uint16_t>(f), f % 3 != 0, max_payload);
      });
}

}  // namespace
}  // namespace predrop::media::detail

// AOMedia "RTP Payload Format For AV1" v1.0: LEB128 (AV1 spec §4.10.5), the OBU splitter, the
// aggregation header and OBU elements against annotated hex fixtures, fragments across packets
// (Y then Z), a lost fragment dropping its OBU, and a round trip of random temporal units at
// several payload limits; the sequence and frame header readers on bit-by-bit fixtures and the
// importance of temporal layers (OBU extension headers) through the priority planner's order.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "av1_packetizer.hpp"
#include "importance.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/media/av1_depacketizer.hpp"

namespace predrop::media::detail {
namespace {

using V = std::vector<std::uint8_t>;

std::vector<V> packetize(const V& tu, bool new_sequence, std::size_t limit) {
  std::vector<V> out;
  EXPECT_TRUE(packetize_av1(tu, new_sequence, limit, [&](std::span<const std::uint8_t> p) {
    EXPECT_LE(p.size(), limit);
    out.emplace_back(p.begin(), p.end());
  }));
  return out;
}

// Pushes payloads as one unit (marker on the last), skipping index `skip`; returns the units.
std::vector<std::pair<V, bool>> depacketize(const std::vector<V>& payloads, int skip = -1) {
  std::vector<std::pair<V, bool>> units;
  Av1Depacketizer d([&](const AccessUnit& au) {
    units.emplace_back(V(au.data.begin(), au.data.end()), au.damaged);
  });
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    if (static_cast<int>(i) == skip) continue;
    d.push(static_cast<std::uint16_t>(i), 3000, i + 1 == payloads.size(), payloads[i]);
  }
  d.flush();
  return units;
}

TEST(Av1, Leb128) {
  EXPECT_EQ(read_leb128(V{0x05}), (std::pair<std::uint32_t, std::size_t>{5, 1}));
  // 0xE5 0x8E 0x26 = 0x65 + (0x0E << 7) + (0x26 << 14) = 624485 (the textbook example).
  EXPECT_EQ(read_leb128(V{0xe5, 0x8e, 0x26}), (std::pair<std::uint32_t, std::size_t>{624485, 3}));
  // A padded encoding is allowed: 0x80 0x00 = 0 in 2 bytes.
  EXPECT_EQ(read_leb128(V{0x80, 0x00}), (std::pair<std::uint32_t, std::size_t>{0, 2}));
  EXPECT_FALSE(read_leb128(V{0x80, 0x80}));                    // never ends
  EXPECT_FALSE(read_leb128(V{0xff, 0xff, 0xff, 0xff, 0x7f}));  // 2^35 - 1 > 2^32 - 1
  V out;
  write_leb128(624485, out);
  EXPECT_EQ(out, (V{0xe5, 0x8e, 0x26}));
}

// A temporal unit: temporal delimiter, sequence header, padding, and a frame OBU with an
// extension header (temporal_id 1).
const V kUnit = {
    0x12, 0x00,                    // TD: type 2 (0x10) | has_size (0x02); size 0
    0x0a, 0x03, 0xaa, 0xbb, 0xcc,  // sequence header: type 1 (0x08) | has_size; size 3; data
    0x7a, 0x01, 0xee,              // padding: type 15 (0x78) | has_size; size 1
    0x36, 0x20, 0x05,              // frame: type 6 (0x30) | extension (0x04) | has_size;
    0x01, 0x02, 0x03, 0x04, 0x05,  //   extension: temporal_id 1 (0x20), spatial_id 0; size 5
};

TEST(Av1, SplitsTheLowOverheadFormat) {
  std::vector<Av1Obu> obus;
  ASSERT_TRUE(split_av1_obus(kUnit, obus));
  ASSERT_EQ(obus.size(), 4u);
  EXPECT_EQ(obus[0].type, kAv1TemporalDelimiter);
  EXPECT_EQ(obus[1].type, kAv1SequenceHeader);
  EXPECT_EQ(obus[1].payload.size(), 3u);
  EXPECT_EQ(obus[3].type, kAv1Frame);
  EXPECT_TRUE(obus[3].has_extension);
  EXPECT_EQ(obus[3].temporal_id, 1);
  EXPECT_EQ(obus[3].spatial_id, 0);
  EXPECT_EQ(obus[3].header.size(), 2u);
  // The last OBU may omit its size: it runs to the end.
  obus.clear();
  ASSERT_TRUE(split_av1_obus(V{0x30, 0x01, 0x02}, obus));
  EXPECT_EQ(obus[0].payload.size(), 2u);
  obus.clear();
  EXPECT_FALSE(split_av1_obus(V{0x92, 0x00}, obus));        // forbidden bit
  EXPECT_FALSE(split_av1_obus(V{0x0a, 0x05, 0x01}, obus));  // size past the end
}

TEST(Av1, OneAggregationPacketWithLengthPrefixedElements) {
  const auto payloads = packetize(kUnit, true, 1200);
  ASSERT_EQ(payloads.size(), 1u);
  EXPECT_EQ(payloads[0], (V{
                             0x08,                          // Z=0 Y=0 W=0 N=1
                             0x04, 0x08, 0xaa, 0xbb, 0xcc,  // length 4; seq header, size bit off
                             0x07, 0x34, 0x20,              // length 7; frame header 0x36 & ~0x02
                             0x01, 0x02, 0x03, 0x04, 0x05,  //   + extension; data
                         }));
  // Back: a temporal delimiter first, sizes restored, padding gone.
  const auto units = depacketize(payloads);
  ASSERT_EQ(units.size(), 1u);
  EXPECT_FALSE(units[0].second);
  EXPECT_EQ(units[0].first, (V{0x12, 0x00, 0x0a, 0x03, 0xaa, 0xbb, 0xcc, 0x36, 0x20, 0x05, 0x01,
                               0x02, 0x03, 0x04, 0x05}));
}

TEST(Av1, FragmentsCarryYThenZAndALostOneDropsItsObu) {
  // A frame OBU of 40 data bytes at a 16-byte limit: the sequence header aggregates with the
  // frame's first fragment; later packets continue it (Z) and all but the last go on (Y).
  V tu = {0x0a, 0x03, 0xaa, 0xbb, 0xcc, 0x32, 40};
  for (std::uint8_t i = 0; i < 40; ++i) {
    tu.push_back(i);
  }
  const auto payloads = packetize(tu, false, 16);
  ASSERT_GE(payloads.size(), 3u);
  EXPECT_EQ(payloads.front()[0], 0x40);  // Y
  for (std::size_t i = 1; i + 1 < payloads.size(); ++i) {
    EXPECT_EQ(payloads[i][0], 0xc0);  // Z and Y
  }
  EXPECT_EQ(payloads.back()[0], 0x80);  // Z only
  auto units = depacketize(payloads);
  ASSERT_EQ(units.size(), 1u);
  V want = {0x12, 0x00};
  want.insert(want.end(), tu.begin(), tu.end());
  EXPECT_EQ(units[0].first, want);
  // Without the middle packet the frame OBU is dropped; the sequence header stays.
  units = depacketize(payloads, 1);
  ASSERT_EQ(units.size(), 1u);
  EXPECT_TRUE(units[0].second);
  EXPECT_EQ(units[0].first, (V{0x12, 0x00, 0x0a, 0x03, 0xaa, 0xbb, 0xcc}));
}

TEST(Av1, RandomTemporalUnitsRoundTrip) {
  std::mt19937 rng(2024);
  for (const std::size_t limit : {8u, 50u, 300u, 1200u}) {
    for (int n = 0; n < 60; ++n) {
      V tu;
      V want = {0x12, 0x00};
      const int obus = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < obus; ++k) {
        const std::uint8_t type = k == 0 ? 1 : (rng() % 2 ? 6 : 5);
        const bool ext = rng() % 2 != 0;
        const std::size_t size = rng() % 4 == 0 ? rng() % 5000 : rng() % 200;
        V obu = {static_cast<std::uint8_t>(type << 3 | (ext ? 0x04 : 0) | 0x02)};
        if (ext) obu.push_back(static_cast<std::uint8_t>(rng() & 0xf8));
        write_leb128(static_cast<std::uint32_t>(size), obu);
        for (std::size_t i = 0; i < size; ++i) {
          obu.push_back(static_cast<std::uint8_t>(rng()));
        }
        tu.insert(tu.end(), obu.begin(), obu.end());
        want.insert(want.end(), obu.begin(), obu.end());
      }
      const auto units = depacketize(packetize(tu, n == 0, limit));
      ASSERT_EQ(units.size(), 1u) << limit;
      EXPECT_FALSE(units[0].second);
      EXPECT_EQ(units[0].first, want) << "limit " << limit << " unit " << n;
    }
  }
}

// Writes f(n) fields most significant bit first (AV1 spec §4.10.2), for the fixtures below.
class BitWriter {
 public:
  BitWriter& f(int bits, std::uint32_t value) {
    for (int i = bits - 1; i >= 0; --i) {
      if (used_ % 8 == 0) out_.push_back(0);
      out_.back() |= static_cast<std::uint8_t>(((value >> i) & 1u) << (7 - used_ % 8));
      ++used_;
    }
    return *this;
  }
  V bytes(std::size_t padding = 4) const {
    V out = out_;
    out.resize(out.size() + padding, 0);  // what the readers do not reach (color config, tiles)
    return out;
  }

 private:
  V out_;
  std::size_t used_ = 0;
};

// A sequence header (§5.5.1) for two temporal layers: operating point 0 decodes both
// (operating_point_idc 0x103: temporal layers 0 and 1, spatial layer 0), order hints of 7 bits,
// screen content tools and integer MVs chosen per frame.
V sequence_header_payload() {
  BitWriter w;
  w.f(3, 0)          // seq_profile
      .f(1, 0)       // still_picture
      .f(1, 0)       // reduced_still_picture_header
      .f(1, 0)       // timing_info_present_flag
      .f(1, 0)       // initial_display_delay_present_flag
      .f(5, 0)       // operating_points_cnt_minus_1
      .f(12, 0x103)  // operating_point_idc[0]
      .f(5, 4)       // seq_level_idx[0] (<= 7: no seq_tier)
      .f(4, 8)       // frame_width_bits_minus_1
      .f(4, 8)       // frame_height_bits_minus_1
      .f(9, 319)     // max_frame_width_minus_1
      .f(9, 239)     // max_frame_height_minus_1
      .f(1, 0)       // frame_id_numbers_present_flag
      .f(3, 0)       // use_128x128_superblock, enable_filter_intra, enable_intra_edge_filter
      .f(4, 0)       // interintra, masked compound, warped motion, dual filter
      .f(1, 1)       // enable_order_hint
      .f(2, 0)       // enable_jnt_comp, enable_ref_frame_mvs
      .f(1, 1)       // seq_choose_screen_content_tools -> SELECT
      .f(1, 1)       // seq_choose_integer_mv -> SELECT
      .f(3, 6);      // order_hint_bits_minus_1
  return w.bytes();
}

// A frame header (§5.9.2) of a shown frame: a key frame, or an inter frame refreshing `refresh`.
V frame_header_payload(bool key, std::uint8_t order_hint, std::uint8_t refresh) {
  BitWriter w;
  w.f(1, 0)               // show_existing_frame
      .f(2, key ? 0 : 1)  // frame_type: KEY_FRAME / INTER_FRAME
      .f(1, 1);           // show_frame
  if (!key) w.f(1, 0);    // error_resilient_mode (implied 1 for a shown key frame)
  w.f(1, 0)               // disable_cdf_update
      .f(1, 0)            // allow_screen_content_tools (SELECT)
      .f(1, 0)            // frame_size_override_flag
      .f(7, order_hint);
  if (!key) w.f(3, 7).f(8, refresh);  // primary_ref_frame (NONE), refresh_frame_flags
  return w.bytes();
}

// An OBU with its size field, with an extension header when `temporal_id` is set.
V obu(std::uint8_t type, const V& payload, std::optional<std::uint8_t> temporal_id = {}) {
  V out = {static_cast<std::uint8_t>(type << 3 | (temporal_id ? 0x04 : 0) | 0x02)};
  if (temporal_id) out.push_back(static_cast<std::uint8_t>(*temporal_id << 5));  // spatial 0
  write_leb128(static_cast<std::uint32_t>(payload.size()), out);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

TEST(Av1Headers, SequenceAndFrameHeadersAreRead) {
  const auto seq = parse_av1_sequence_header(sequence_header_payload());
  ASSERT_TRUE(seq);
  EXPECT_FALSE(seq->reduced_still_picture_header);
  EXPECT_EQ(seq->operating_points, 1);
  EXPECT_EQ(seq->operating_point_idc[0], 0x103);
  EXPECT_EQ(seq->order_hint_bits, 7);
  EXPECT_EQ(seq->force_screen_content_tools, 2);
  EXPECT_EQ(seq->force_integer_mv, 2);
  auto h = parse_av1_frame_header(frame_header_payload(true, 0, 0), *seq, 0, 0);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->frame_type, 0);
  EXPECT_TRUE(h->show_frame);
  EXPECT_EQ(h->refresh_frame_flags, 0xff);
  h = parse_av1_frame_header(frame_header_payload(false, 5, 0x24), *seq, 1, 0);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->frame_type, 1);
  EXPECT_EQ(h->refresh_frame_flags, 0x24);
  EXPECT_FALSE(parse_av1_sequence_header(V{0x00, 0x00}));
  EXPECT_FALSE(parse_av1_frame_header(V{0x20}, *seq, 0, 0));  // inter frame cut short
}

// Two temporal layers in a repeating L0 L1 L0 L1 pattern after a key frame (the sequence header in
// front of it): the layer-1 pictures that refresh nothing are disposable and the whole top layer
// ranks below the base layer, so the priority planner's order takes every layer-1 packet first
// and never the sequence header; the key frame goes last.
TEST(Av1Importance, TopTemporalLayerGoesFirstAndTheSequenceHeaderNever) {
  std::vector<std::uint8_t> arena;
  std::vector<StagedPacket> packets;
  PayloadSink sink(arena, packets);
  std::vector<std::string> warnings;
  Av1Packetizer packetizer(200, [&](std::string w) { warnings.push_back(std::move(w)); });
  packetizer.configure({});
  std::vector<StagedFrame> video;
  std::vector<std::uint8_t> tid_of_packet;
  const V filler(300, 0x5a);  // tile data, so that every picture takes two packets
  for (int n = 0; n < 16; ++n) {
    const bool key = n == 0;
    const std::uint8_t tid = key ? 0 : static_cast<std::uint8_t>(n % 2);
    V unit = obu(kAv1TemporalDelimiter, {});
    if (key) {
      const V seq = obu(kAv1SequenceHeader, sequence_header_payload());
      unit.insert(unit.end(), seq.begin(), seq.end());
    }
    // Base-layer frames refresh slot 0; every fourth layer-1 frame refreshes slot 1 (referenced
    // by its layer only), the others nothing.
    const std::uint8_t refresh = tid == 0 ? 0x01 : (n % 4 == 3 ? 0x02 : 0x00);
    V payload = frame_header_payload(key, static_cast<std::uint8_t>(n), refresh);
    payload.insert(payload.end(), filler.begin(), filler.end());
    const V frame = obu(kAv1Frame, payload, tid);
    unit.insert(unit.end(), frame.begin(), frame.end());

    StagedFrame f;
    f.first_staged = sink.count();
    const auto picture = packetizer.add_sample(unit, key, sink);
    ASSERT_TRUE(picture) << n;
    EXPECT_EQ(picture->type, key ? FrameType::kKey : FrameType::kPredicted) << n;
    EXPECT_EQ(picture->temporal_id, tid) << n;
    EXPECT_EQ(picture->reference, refresh != 0 || key) << n;
    f.staged_count = sink.count() - f.first_staged;
    f.frame.type = picture->type;
    f.frame.reference = picture->reference;
    f.frame.temporal_id = picture->temporal_id;
    video.push_back(f);
    tid_of_packet.insert(tid_of_packet.end(), f.staged_count, tid);
  }
  EXPECT_TRUE(warnings.empty());
  // The key frame's first packet: N set, the sequence header first, staged as never dropped.
  EXPECT_EQ(arena[packets[0].offset] & 0x08, 0x08);
  EXPECT_TRUE(packets[0].parameter_set);
  for (std::size_t i = 1; i < packets.size(); ++i) {
    EXPECT_FALSE(packets[i].parameter_set) << i;
    EXPECT_EQ(arena[packets[i].offset] & 0x08, 0) << i;
  }
  std::vector<std::uint32_t> display(video.size());
  for (std::uint32_t i = 0; i < display.size(); ++i) {
    display[i] = i;
  }
  std::vector<StagedFrame> audio;
  assign_importance(video, audio, display, 1);
  std::vector<std::uint8_t> importance;
  for (const StagedFrame& f : video) {
    for (std::uint32_t i = 0; i < f.staged_count; ++i) {
      const bool never = packets[f.first_staged + i].parameter_set;
      importance.push_back(never ? kImportanceNever : f.frame.importance);
    }
  }
  std::vector<std::uint32_t> order(importance.size());
  const std::size_t droppable = core::DiscardPlanner::priority_order(importance, order);
  EXPECT_EQ(droppable, importance.size() - 1);  // all but the sequence header's packet
  std::size_t top_layer = 0;
  for (std::uint8_t t : tid_of_packet) {
    top_layer += t == 1 ? 1 : 0;
  }
  ASSERT_EQ(top_layer, 16u);  // 8 pictures of 2 packets
  for (std::size_t k = 0; k < droppable; ++k) {
    EXPECT_EQ(tid_of_packet[order[k]] == 1, k < top_layer) << "rank " << k;
    EXPECT_NE(order[k], 0u);
  }
  // Within the top layer the disposable pictures go before its referenced ones; the key frame's
  // second packet is the very last.
  const std::uint32_t last = order[droppable - 1];
  EXPECT_EQ(last, 1u);
  for (std::size_t k = 0; k < 8; ++k) {
    std::uint32_t packet = order[k];
    std::size_t frame = 0;
    while (packet >= video[frame].staged_count) {
      packet -= video[frame++].staged_count;
    }
    EXPECT_FALSE(video[frame].frame.reference) << "rank " << k;
  }
}

}  // namespace
}  // namespace predrop::media::detail

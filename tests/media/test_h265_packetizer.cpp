// RFC 7798: the H.265 packetizer (single NAL unit, AP, FU) against annotated hex fixtures, the
// depacketizer's loss handling, and a round trip of random units at several payload limits.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "h265_packetizer.hpp"
#include "predrop/media/h265_depacketizer.hpp"

namespace predrop::media::detail {
namespace {

using V = std::vector<std::uint8_t>;

// Packetizes `units` and returns each payload (head + body).
std::vector<V> packetize(const std::vector<V>& units, std::size_t max_payload) {
  std::vector<Bytes> spans(units.begin(), units.end());
  std::vector<V> out;
  V scratch;
  packetize_h265(spans, max_payload, scratch, [&](Bytes head, Bytes body) {
    V p(head.begin(), head.end());
    p.insert(p.end(), body.begin(), body.end());
    out.push_back(std::move(p));
  });
  return out;
}

TEST(H265NalHeader, FieldsOfTheTwoByteHeader) {
  // 0x40 0x01: F=0, Type=32 (VPS), LayerId=0, TID=1 -> TemporalId 0.
  auto h = parse_h265_nal_header(V{0x40, 0x01});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->type, h265::kVps);
  EXPECT_EQ(h->layer_id, 0);
  EXPECT_EQ(h->temporal_id, 0);
  // 0x26 0x01: Type=19 (IDR_W_RADL): an IRAP picture.
  h = parse_h265_nal_header(V{0x26, 0x01});
  ASSERT_TRUE(h);
  EXPECT_TRUE(h265_is_irap(h->type));
  // 0x01 0x0b: Type=0 (TRAIL_N), LayerId=1 (low bit of byte 0 = 0, top 5 bits of byte 1 =
  // 00001), TID=3 -> TemporalId 2; a sub-layer non-reference picture.
  h = parse_h265_nal_header(V{0x00, 0x0b});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->type, 0);
  EXPECT_EQ(h->layer_id, 1);
  EXPECT_EQ(h->temporal_id, 2);
  EXPECT_TRUE(h265_is_sub_layer_non_reference(h->type));
  EXPECT_FALSE(h265_is_sub_layer_non_reference(1));   // TRAIL_R
  EXPECT_TRUE(h265_is_sub_layer_non_reference(8));    // RASL_N
  EXPECT_FALSE(h265_is_sub_layer_non_reference(16));  // BLA_W_LP is IRAP, not "N"
  // nuh_temporal_id_plus1 = 0 is forbidden; one byte is too short.
  EXPECT_FALSE(parse_h265_nal_header(V{0x02, 0x00}));
  EXPECT_FALSE(parse_h265_nal_header(V{0x02}));
}

TEST(H265Packetizer, SmallUnitsShareOneAggregationPacket) {
  const std::vector<V> units = {
      {0x40, 0x01, 0x0c},  // VPS
      {0x42, 0x01, 0x01},  // SPS
      {0x44, 0x01, 0xc1},  // PPS
  };
  const auto out = packetize(units, 64);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], (V{
                        0x60, 0x01,                    // PayloadHdr: Type 48 (AP), LayerId 0, TID 1
                        0x00, 0x03, 0x40, 0x01, 0x0c,  // NALU size 3, VPS
                        0x00, 0x03, 0x42, 0x01, 0x01,  // NALU size 3, SPS
                        0x00, 0x03, 0x44, 0x01, 0xc1,  // NALU size 3, PPS
                    }));
}

TEST(H265Packetizer, AggregationHeaderTakesTheLowestTidAndOrsF) {
  const std::vector<V> units = {
      {0x02, 0x03, 0xaa},  // TRAIL_R, TID 3
      {0x80, 0x02, 0xbb},  // F=1, TRAIL_N, TID 2
  };
  const auto out = packetize(units, 64);
  ASSERT_EQ(out.size(), 1u);
  // F=1 | Type 48 -> 0xe0; LayerId 0, TID 2 -> 0x02.
  EXPECT_EQ(out[0], (V{0xe0, 0x02, 0x00, 0x03, 0x02, 0x03, 0xaa, 0x00, 0x03, 0x80, 0x02, 0xbb}));
}

TEST(H265Packetizer, LargeUnitIsFragmented) {
  V unit = {0x02, 0x01};  // TRAIL_R, TID 1
  for (int i = 0; i < 98; ++i) {
    unit.push_back(static_cast<std::uint8_t>(i));
  }
  const auto out = packetize({unit}, 64);
  ASSERT_EQ(out.size(), 2u);
  // PayloadHdr: Type 49 (FU) -> 0x62, 0x01 (the unit's LayerId and TID); FU header S=1, Type 1.
  EXPECT_EQ(V(out[0].begin(), out[0].begin() + 4), (V{0x62, 0x01, 0x81, 0x00}));
  EXPECT_EQ(out[0].size(), 64u);  // 3 header bytes + 61 of the 98 payload bytes
  // FU header E=1, Type 1; the remaining 37 bytes.
  EXPECT_EQ(V(out[1].begin(), out[1].begin() + 4), (V{0x62, 0x01, 0x41, 61}));
  EXPECT_EQ(out[1].size(), 3u + 37u);
}

TEST(H265Packetizer, UnitThatFitsAloneIsASingleNalUnitPacket) {
  const V big(60, 0x11);
  V unit = {0x02, 0x01};
  unit.insert(unit.end(), big.begin(), big.end());  // 62 bytes: fits, but not with a neighbour
  const auto out = packetize({unit, {0x02, 0x01, 0x22}}, 64);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], unit);
  EXPECT_EQ(out[1], (V{0x02, 0x01, 0x22}));
}

TEST(H265Packetizer, HvccRecord) {
  V hvcc(23, 0);
  hvcc[0] = 1;                                                       // configurationVersion
  hvcc[21] = 0x03;                                                   // lengthSizeMinusOne = 3
  hvcc[22] = 2;                                                      // numOfArrays
  for (V a : {V{0xa0, 0x00, 0x01, 0x00, 0x03, 0x40, 0x01, 0x0c},     // VPS array, one unit
              V{0x27, 0x00, 0x01, 0x00, 0x03, 0x4e, 0x01, 0x05}}) {  // SEI array (ignored)
    hvcc.insert(hvcc.end(), a.begin(), a.end());
  }
  const auto config = parse_hvcc(hvcc);
  ASSERT_TRUE(config);
  EXPECT_EQ(config->length_size, 4);
  ASSERT_EQ(config->vps.size(), 1u);
  EXPECT_EQ(config->vps[0], (V{0x40, 0x01, 0x0c}));
  EXPECT_TRUE(config->sps.empty());
  hvcc.pop_back();  // a unit running past the end
  EXPECT_FALSE(parse_hvcc(hvcc));
  EXPECT_FALSE(parse_hvcc(V{0, 0, 0, 1, 0x40, 0x01}));  // Annex B
}

struct Unit {
  std::uint32_t ts;
  V data;
  bool damaged;
};

TEST(H265Depacketizer, LostMiddleFragmentDropsTheUnitButKeepsTheRest) {
  std::vector<Unit> units;
  H265Depacketizer d([&](const AccessUnit& au) {
    units.push_back({au.rtp_timestamp, V(au.data.begin(), au.data.end()), au.damaged});
  });
  d.push(1, 90, false, V{0x40, 0x01, 0x0c});        // VPS, single NAL unit packet
  d.push(2, 90, false, V{0x62, 0x01, 0x81, 0xa1});  // FU start of a TRAIL_R
  // sequence 3 (the middle fragment) is lost
  d.push(4, 90, true, V{0x62, 0x01, 0x41, 0xa3});  // FU end
  ASSERT_EQ(units.size(), 1u);
  EXPECT_TRUE(units[0].damaged);
  EXPECT_EQ(units[0].data, (V{0, 0, 0, 1, 0x40, 0x01, 0x0c}));
  EXPECT_EQ(d.stats().lost, 1u);
  EXPECT_GE(d.stats().dropped_fragments, 1u);
  // PACI (type 50) is not handled: malformed, damaged.
  d.push(5, 180, true, V{0x64, 0x01, 0x00, 0x00});
  EXPECT_EQ(d.stats().malformed, 1u);
}

TEST(H265RoundTrip, RandomUnitsComeBackByteForByte) {
  std::mt19937 rng(24);
  for (std::size_t max_payload : {64u, 100u, 1200u, 1400u}) {
    for (int au = 0; au < 50; ++au) {
      std::vector<V> units(1 + rng() % 6);
      V expected;
      for (auto& u : units) {
        // Sizes from 2 bytes to several FUs; valid headers (types 0..40, TID 1..7).
        const std::size_t size = 2 + (rng() % 3 == 0 ? rng() % 5000 : rng() % 40);
        u.resize(size);
        for (auto& b : u) {
          b = static_cast<std::uint8_t>(rng());
        }
        u[0] = static_cast<std::uint8_t>((rng() % 41) << 1);
        u[1] = static_cast<std::uint8_t>(1 + rng() % 7);
        expected.insert(expected.end(), {0, 0, 0, 1});
        expected.insert(expected.end(), u.begin(), u.end());
      }
      const auto payloads = packetize(units, max_payload);
      std::vector<V> got;
      H265Depacketizer d([&](const AccessUnit& a) {
        EXPECT_FALSE(a.damaged);
        got.emplace_back(a.data.begin(), a.data.end());
      });
      for (std::size_t i = 0; i < payloads.size(); ++i) {
        ASSERT_LE(payloads[i].size(), max_payload);
        d.push(static_cast<std::uint16_t>(i), 0, i + 1 == payloads.size(), payloads[i]);
      }
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[0], expected) << "max_payload " << max_payload << " unit " << au;
    }
  }
}

}  // namespace
}  // namespace predrop::media::detail

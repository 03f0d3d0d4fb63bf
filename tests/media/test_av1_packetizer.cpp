// AOMedia "RTP Payload Format For AV1" v1.0: LEB128 (AV1 spec §4.10.5), the OBU splitter, the
// aggregation header and OBU elements against annotated hex fixtures, fragments across packets
// (Y then Z), a lost fragment dropping its OBU, and a round trip of random temporal units at
// several payload limits.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "av1_packetizer.hpp"
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

}  // namespace
}  // namespace predrop::media::detail

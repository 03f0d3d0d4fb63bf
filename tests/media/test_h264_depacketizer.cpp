// RFC 6184 receive side: single NAL unit packets, STAP-A, FU-A, loss handling.
#include "predrop/media/h264_depacketizer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace predrop::media {
namespace {

using V = std::vector<std::uint8_t>;

struct Unit {
  std::uint32_t ts;
  V data;
  bool damaged;
};

class DepacketizerTest : public ::testing::Test {
 protected:
  H264Depacketizer d{[this](const AccessUnit& au) {
    units.push_back({au.rtp_timestamp, V(au.data.begin(), au.data.end()), au.damaged});
  }};
  std::vector<Unit> units;
};

TEST_F(DepacketizerTest, SingleNalUnitsFormOneAccessUnitUntilTheMarker) {
  d.push(10, 3000, false, V{0x67, 0x64, 0x00});  // SPS
  d.push(11, 3000, false, V{0x68, 0xef});        // PPS
  EXPECT_TRUE(units.empty());
  d.push(12, 3000, true, V{0x65, 0x88, 0x84});  // IDR slice, marker
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].ts, 3000u);
  EXPECT_FALSE(units[0].damaged);
  EXPECT_EQ(units[0].data, (V{0, 0,    0,    1, 0x67, 0x64, 0x00, 0,    0,    0,
                              1, 0x68, 0xef, 0, 0,    0,    1,    0x65, 0x88, 0x84}));
}

TEST_F(DepacketizerTest, NewTimestampEndsAUnitWhoseMarkerWasLost) {
  d.push(1, 0, false, V{0x41, 0x9a});
  d.push(2, 3000, true, V{0x41, 0x9b});
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0].ts, 0u);
  EXPECT_EQ(units[1].ts, 3000u);
}

TEST_F(DepacketizerTest, StapA) {
  // STAP-A indicator (NRI 3, type 24), then size 3 + SPS, size 2 + PPS.
  d.push(1, 0, true, V{0x78, 0x00, 0x03, 0x67, 0x64, 0x00, 0x00, 0x02, 0x68, 0xef});
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].data, (V{0, 0, 0, 1, 0x67, 0x64, 0x00, 0, 0, 0, 1, 0x68, 0xef}));
  // A size running past the end keeps the complete units and marks the access unit damaged.
  d.push(2, 3000, true, V{0x78, 0x00, 0x02, 0x68, 0xef, 0x00, 0x09, 0x65});
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[1].data, (V{0, 0, 0, 1, 0x68, 0xef}));
  EXPECT_TRUE(units[1].damaged);
}

TEST_F(DepacketizerTest, FuAReassemblesTheNalUnit) {
  // Indicator 0x7c = NRI 3 | 28; headers 0x85 (S, IDR), 0x05, 0x45 (E, IDR).
  d.push(100, 9000, false, V{0x7c, 0x85, 0xaa, 0xbb});
  d.push(101, 9000, false, V{0x7c, 0x05, 0xcc});
  d.push(102, 9000, true, V{0x7c, 0x45, 0xdd});
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].data, (V{0, 0, 0, 1, 0x65, 0xaa, 0xbb, 0xcc, 0xdd}));
  EXPECT_FALSE(units[0].damaged);
  EXPECT_EQ(d.stats().dropped_fragments, 0u);
}

TEST_F(DepacketizerTest, FuAWithAMissingMiddleFragmentIsDroppedNotGlued) {
  d.push(1, 0, false, V{0x06, 0x05, 0x01});  // SEI survives
  d.push(2, 0, false, V{0x7c, 0x85, 0xaa});  // FU start
  /* seq 3 lost */                           // middle fragment
  d.push(4, 0, false, V{0x7c, 0x05, 0xcc});  // continuation after a gap: dropped
  d.push(5, 0, true, V{0x7c, 0x45, 0xdd});   // end: dropped
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].data, (V{0, 0, 0, 1, 0x06, 0x05, 0x01}));
  EXPECT_TRUE(units[0].damaged);
  EXPECT_EQ(d.stats().lost, 1u);
  EXPECT_GE(d.stats().dropped_fragments, 2u);
}

TEST_F(DepacketizerTest, FuAWithoutItsEndIsDroppedWhenTheNextUnitStarts) {
  d.push(1, 0, false, V{0x7c, 0x85, 0xaa});
  d.push(2, 0, false, V{0x7c, 0x05, 0xbb});
  d.push(3, 0, true, V{0x41, 0x9a});  // a new NAL unit before the FU ended
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].data, (V{0, 0, 0, 1, 0x41, 0x9a}));
  EXPECT_TRUE(units[0].damaged);
}

TEST_F(DepacketizerTest, LostStartFragmentDropsTheRest) {
  d.push(1, 0, true, V{0x41, 0x01});
  /* seq 2 (FU start of the next frame) lost */
  d.push(3, 3000, false, V{0x7c, 0x05, 0xbb});
  d.push(4, 3000, true, V{0x7c, 0x45, 0xcc});
  d.flush();
  ASSERT_EQ(units.size(), 1u);  // the second unit had nothing left to emit
  EXPECT_EQ(d.stats().lost, 1u);
  EXPECT_EQ(d.stats().dropped_fragments, 2u);
}

TEST_F(DepacketizerTest, LateAndDuplicatePacketsAreIgnored) {
  d.push(10, 0, true, V{0x41, 0x01});
  d.push(10, 0, true, V{0x41, 0x01});  // duplicate
  d.push(9, 0, true, V{0x41, 0x02});   // late
  EXPECT_EQ(units.size(), 1u);
  EXPECT_EQ(d.stats().malformed, 2u);
}

TEST_F(DepacketizerTest, SequenceNumbersWrap) {
  d.push(65535, 0, true, V{0x41, 0x01});
  d.push(0, 3000, true, V{0x41, 0x02});
  ASSERT_EQ(units.size(), 2u);
  EXPECT_FALSE(units[1].damaged);
  EXPECT_EQ(d.stats().lost, 0u);
}

TEST_F(DepacketizerTest, MalformedPayloadsNeverCrash) {
  d.push(1, 0, false, V{});
  d.push(2, 0, false, V{0x7c});        // FU-A without header
  d.push(3, 0, false, V{0x78, 0x00});  // STAP-A with a half size field
  d.push(4, 0, false, V{0x79, 0x00});  // STAP-B: unsupported
  d.push(5, 0, true, V{0x7c, 0x45});   // FU-A end without data or start
  d.flush();
  EXPECT_EQ(d.stats().packets, 5u);
  EXPECT_GE(d.stats().malformed, 3u);
}

}  // namespace
}  // namespace predrop::media

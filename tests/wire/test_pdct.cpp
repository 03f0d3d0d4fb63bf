// PDCT, the capture clock of a live stream (wire/include/predrop/wire/pdct.hpp): the annotated
// packet, its round trip through the RTCP compound walker after an SR, the version rules, and
// the capture time of a picture from the mapping.
#include "predrop/wire/pdct.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "predrop/wire/rtcp.hpp"

namespace predrop::wire {
namespace {

// RTP timestamp 0x00BC6140 (12 345 664) of SSRC 0x11223344 was captured at Unix time
// 1 800 000 000.5 s (NTP seconds 1 800 000 000 + 2 208 988 800 = 0xEEF45080, fraction 1/2).
constexpr std::array<std::uint8_t, 28> kClock = {
    0x80, 0xCC, 0x00, 0x06,  // V=2, subtype 0; PT 204 (APP); length 6 (28 bytes)
    0x11, 0x22, 0x33, 0x44,  // SSRC of the video track
    'P',  'D',  'C',  'T',   // name
    0x01, 0x00, 0x00, 0x00,  // version 1.0; reserved
    0x00, 0xBC, 0x61, 0x40,  // RTP timestamp
    0xEE, 0xF4, 0x50, 0x80,  // NTP seconds
    0x80, 0x00, 0x00, 0x00,  // NTP fraction: 0.5 s
};
constexpr PdctClock kMapping{0x00BC6140, 0xEEF4508080000000ULL};

TEST(Pdct, WritesTheAnnotatedPacketAndParsesItBack) {
  std::array<std::uint8_t, 64> out{};
  auto n = write_pdct(out, 0x11223344, kMapping);
  ASSERT_TRUE(n.ok()) << n.error().message;
  ASSERT_EQ(*n, kPdctPacketSize);
  EXPECT_TRUE(std::equal(kClock.begin(), kClock.end(), out.begin()));
  auto back = parse_pdct_payload(std::span<const std::uint8_t>(kClock).subspan(12));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, kMapping);
}

TEST(Pdct, TooSmallABufferIsAnError) {
  std::array<std::uint8_t, 27> out{};
  EXPECT_FALSE(write_pdct(out, 1, PdctClock{}).ok());
}

TEST(Pdct, VersionsAndTruncation) {
  std::vector<std::uint8_t> p(kClock.begin() + 12, kClock.end());
  auto other_major = p;
  other_major[0] = 0x02;
  EXPECT_FALSE(parse_pdct_payload(other_major).ok());
  EXPECT_FALSE(parse_pdct_payload(std::span(p).first(15)).ok());
  EXPECT_FALSE(parse_pdct_payload({}).ok());
  auto longer = p;
  longer.insert(longer.end(), {0, 0, 0, 0});
  EXPECT_FALSE(parse_pdct_payload(longer).ok()) << "v1.0 is exactly 16 bytes";
  longer[0] = 0x11;  // v1.1 may append
  ASSERT_TRUE(parse_pdct_payload(longer).ok());
  EXPECT_EQ(*parse_pdct_payload(longer), kMapping);
}

TEST(Pdct, DatesAPictureByItsTimestamp) {
  constexpr std::int64_t kAt = 1'800'000'000'500'000;  // µs
  EXPECT_EQ(pdct_capture_unix_us(kMapping, kMapping.rtp_timestamp, 90000), kAt);
  EXPECT_EQ(pdct_capture_unix_us(kMapping, kMapping.rtp_timestamp + 3600, 90000), kAt + 40'000);
  EXPECT_EQ(pdct_capture_unix_us(kMapping, kMapping.rtp_timestamp - 90000, 90000), kAt - 1'000'000)
      << "before the mapping";
  const PdctClock wrapped{0xFFFFF000, kMapping.ntp};
  EXPECT_EQ(pdct_capture_unix_us(wrapped, 0x00001000, 90000), kAt + 8192 * 1'000'000LL / 90000)
      << "across the 32-bit wrap";
}

// What the server sends: SR, SDES, PDCT in one compound; the walker hands PDCT to on_app.
TEST(Pdct, RidesInTheSrsCompound) {
  std::vector<std::uint8_t> c = {
      0x80, 0xC8, 0x00, 0x06, 0x11, 0x22, 0x33, 0x44,  // SR, no blocks, SSRC
      0xEE, 0xF4, 0x50, 0x80, 0x80, 0x00, 0x00, 0x00,  // NTP
      0x00, 0xBC, 0x61, 0x40, 0x00, 0x00, 0x00, 0x01,  // RTP timestamp; packets
      0x00, 0x00, 0x00, 0x10,                          // octets
  };
  c.insert(c.end(), kClock.begin(), kClock.end());
  struct Visitor : RtcpVisitor {
    std::optional<PdctClock> found;
    void on_app(std::uint8_t, std::uint32_t ssrc, std::string_view name,
                std::span<const std::uint8_t> data) override {
      if (name == kPdctName && ssrc == 0x11223344) {
        if (auto p = parse_pdct_payload(data); p.ok()) found = *p;
      }
    }
  } v;
  ASSERT_TRUE(parse_rtcp_compound(c, v).ok());
  ASSERT_TRUE(v.found);
  EXPECT_EQ(*v.found, kMapping);
}

}  // namespace
}  // namespace predrop::wire

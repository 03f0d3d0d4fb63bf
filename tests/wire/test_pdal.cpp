#include "predrop/wire/pdal.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace predrop::wire {
namespace {

// An alert on stage 7 of media SSRC 0x11223344: a 95 ms queue, the last packets arriving at
// 61 500 bytes/s (492 kbit/s) and the stage's pairs at 62 000 bytes/s.
constexpr std::array<std::uint8_t, 36> kAlert = {
    0x80, 0xCC, 0x00, 0x08,  // V=2, subtype 0; PT 204 (APP); length 8 (36 bytes)
    0xAA, 0xBB, 0xCC, 0xDD,  // reporter SSRC
    'P',  'D',  'A',  'L',   // name
    0x01, 0x00, 0x00, 0x00,  // version 1.0; reserved
    0x11, 0x22, 0x33, 0x44,  // media SSRC
    0x00, 0x00, 0x00, 0x07,  // stage 7
    0x00, 0x01, 0x73, 0x18,  // queue 95 000 µs
    0x00, 0x00, 0xF0, 0x3C,  // arrival rate 61 500 bytes/s
    0x00, 0x00, 0xF2, 0x30,  // pair rate 62 000 bytes/s
};

TEST(Pdal, WritesTheAnnotatedPacketAndParsesItBack) {
  const PdalAlert a{0x11223344, 7, 95'000, 61'500, 62'000};
  std::array<std::uint8_t, 64> out{};
  auto n = write_pdal(out, 0xAABBCCDD, a);
  ASSERT_TRUE(n.ok()) << n.error().message;
  ASSERT_EQ(*n, kPdalPacketSize);
  EXPECT_TRUE(std::equal(kAlert.begin(), kAlert.end(), out.begin()));
  auto back = parse_pdal_payload(std::span<const std::uint8_t>(kAlert).subspan(12));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, a);
}

TEST(Pdal, TooSmallABufferIsAnError) {
  std::array<std::uint8_t, 35> out{};
  EXPECT_FALSE(write_pdal(out, 1, PdalAlert{}).ok());
}

TEST(Pdal, VersionsAndTruncation) {
  std::vector<std::uint8_t> p(kAlert.begin() + 12, kAlert.end());
  // Another major: refused, naming it.
  p[0] = 0x02;
  auto major = parse_pdal_payload(p);
  ASSERT_FALSE(major.ok());
  EXPECT_NE(major.error().message.find("major version 2"), std::string::npos);
  p[0] = 0x01;
  // Every truncation fails.
  for (std::size_t len = 0; len < p.size(); ++len) {
    EXPECT_FALSE(parse_pdal_payload(std::span<const std::uint8_t>(p).first(len)).ok()) << len;
  }
  // v1.0 with trailing bytes: refused; v1.1 may append words, which are skipped.
  p.insert(p.end(), {0, 0, 0, 9});
  EXPECT_FALSE(parse_pdal_payload(p).ok());
  p[0] = 0x11;
  auto later = parse_pdal_payload(p);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->stage_id, 7u);
  EXPECT_EQ(later->pair_rate_bytes_per_s, 62'000u);
  // Reserved bytes are ignored.
  p[1] = 0xFF;
  EXPECT_TRUE(parse_pdal_payload(p).ok());
}

}  // namespace
}  // namespace predrop::wire

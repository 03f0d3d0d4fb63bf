// The OS random source (predrop/net/os_random.hpp): every helper draws fresh values of the right
// shape, and a generated SRTP key has its suite's size and survives the a=crypto codec.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <string>

#include "predrop/net/os_random.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::net {
namespace {

TEST(OsRandom, FillsTheWholeBuffer) {
  // 64 zero bytes after a fill would happen with probability 2^-512: the fill did not happen.
  std::array<std::uint8_t, 300> b{};
  fill_random(b);
  EXPECT_FALSE(std::all_of(b.begin(), b.end() - 236, [](std::uint8_t x) { return x == 0; }));
  EXPECT_FALSE(std::all_of(b.end() - 64, b.end(), [](std::uint8_t x) { return x == 0; }));
}

TEST(OsRandom, DrawsDiffer) {
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 16; ++i) {
    seen.insert(random_u64());
  }
  EXPECT_EQ(seen.size(), 16u) << "16 64-bit draws collided: the source is broken";
}

TEST(OsRandom, HexHasTwoUpperCaseDigitsPerByte) {
  for (const std::size_t bytes : {0u, 1u, 16u, 64u, 65u, 200u}) {
    const std::string h = random_hex(bytes);
    EXPECT_EQ(h.size(), 2 * bytes);
    EXPECT_EQ(h.find_first_not_of("0123456789ABCDEF"), std::string::npos) << h;
  }
  EXPECT_NE(random_hex(16), random_hex(16));
}

TEST(OsRandom, SrtpKeysHaveTheSuiteSizeAndRoundTrip) {
  using wire::SrtpSuite;
  for (SrtpSuite s :
       {SrtpSuite::AesCm128HmacSha1_80, SrtpSuite::AesCm128HmacSha1_32, SrtpSuite::AeadAes128Gcm}) {
    const wire::SrtpKeyMaterial k1 = random_srtp_key(s);
    const wire::SrtpKeyMaterial k2 = random_srtp_key(s);
    EXPECT_EQ(k1.size, wire::key_salt_size(s));
    EXPECT_NE(k1, k2) << "two 224+ bit random keys are equal: the generator is broken";
    const std::string line = wire::format_crypto_attribute(42, s, k1);
    auto a = wire::parse_crypto_attribute(line);
    ASSERT_TRUE(a) << line << ": " << a.error().message;
    EXPECT_EQ(*a, (wire::CryptoAttribute{42, s, k1}));
  }
}

}  // namespace
}  // namespace predrop::net

// MIKEY key transport (RFC 3830, as GStreamer's rtspsrc reads it): the message predrop builds
// has the layout the header promises, byte for byte where it matters to a player; it parses back
// to the same suite and key for every suite; the parser accepts the variants players send
// (separate salt, CS ID map entries, the RTSP KeyMgmt header form) and rejects every truncation
// and every unsupported choice with an error, never a crash.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "predrop/wire/mikey.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::wire {
namespace {

SrtpKeyMaterial key_for(SrtpSuite suite) {
  SrtpKeyMaterial k;
  k.size = key_salt_size(suite);
  for (std::size_t i = 0; i < k.size; ++i) {
    k.bytes[i] = static_cast<std::uint8_t>(0xA0 + i);
  }
  return k;
}

MikeyFields fields() {
  MikeyFields f;
  f.csb_id = 0x11223344;
  f.ntp_utc = 0xE1234567'89ABCDEFull;
  for (std::size_t i = 0; i < f.rand.size(); ++i) {
    f.rand[i] = static_cast<std::uint8_t>(i);
  }
  return f;
}

TEST(Mikey, LayoutIsThePskInitPlayersRead) {
  const auto key = key_for(SrtpSuite::AesCm128HmacSha1_80);
  const auto m = build_mikey(SrtpSuite::AesCm128HmacSha1_80, key, fields());
  // Common header: version 1, PSK_INIT, next = T, V=0 PRF=MIKEY-1, CSB ID, #CS 0, SRTP-ID.
  ASSERT_GE(m.size(), 10u);
  EXPECT_EQ(m[0], 1);
  EXPECT_EQ(m[1], 0);
  EXPECT_EQ(m[2], 5);
  EXPECT_EQ(m[3], 0);
  EXPECT_EQ(m[4], 0x11);
  EXPECT_EQ(m[7], 0x44);
  EXPECT_EQ(m[8], 0);
  EXPECT_EQ(m[9], 0);
  // T: next = RAND, NTP-UTC, 8 bytes.
  EXPECT_EQ(m[10], 11);
  EXPECT_EQ(m[11], 0);
  EXPECT_EQ(m[12], 0xE1);
  // RAND: next = SP, 16 bytes.
  EXPECT_EQ(m[20], 10);
  EXPECT_EQ(m[21], 16);
  // SP: next = KEMAC, policy 0, SRTP, 8 params of 3 bytes.
  const std::size_t sp = 22 + 16;
  EXPECT_EQ(m[sp], 1);
  EXPECT_EQ(m[sp + 1], 0);
  EXPECT_EQ(m[sp + 2], 0);
  EXPECT_EQ((m[sp + 3] << 8) | m[sp + 4], 24);
  const std::vector<std::uint8_t> params(m.begin() + sp + 5, m.begin() + sp + 5 + 24);
  const std::vector<std::uint8_t> expected = {0, 1, 1, 1, 1, 16, 2,  1, 1, 3,  1, 10,
                                              7, 1, 1, 8, 1, 1,  10, 1, 1, 11, 1, 10};
  EXPECT_EQ(params, expected);
  // KEMAC: last payload, NULL encryption, sub-payload length 4 + 30, KEY_DATA TEK, NULL MAC.
  const std::size_t kemac = sp + 5 + 24;
  EXPECT_EQ(m[kemac], 0);
  EXPECT_EQ(m[kemac + 1], 0);
  EXPECT_EQ((m[kemac + 2] << 8) | m[kemac + 3], 34);
  EXPECT_EQ(m[kemac + 4], 0);
  EXPECT_EQ(m[kemac + 5], 0x20);
  EXPECT_EQ((m[kemac + 6] << 8) | m[kemac + 7], 30);
  EXPECT_EQ(m[kemac + 8], 0xA0);
  EXPECT_EQ(m[kemac + 8 + 29], 0xA0 + 29);
  EXPECT_EQ(m.back(), 0);  // MAC alg NULL
  EXPECT_EQ(m.size(), kemac + 8 + 30 + 1);
}

TEST(Mikey, EverySuiteRoundTrips) {
  for (SrtpSuite suite :
       {SrtpSuite::AesCm128HmacSha1_80, SrtpSuite::AesCm128HmacSha1_32, SrtpSuite::AeadAes128Gcm}) {
    const auto key = key_for(suite);
    auto parsed = parse_mikey(build_mikey(suite, key, fields()));
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->suite, suite);
    EXPECT_EQ(parsed->key, key);
    EXPECT_EQ(parsed->csb_id, 0x11223344u);
  }
}

TEST(Mikey, SdpAttributeAndKeyMgmtHeaderForms) {
  const auto key = key_for(SrtpSuite::AesCm128HmacSha1_32);
  const std::string attr = format_key_mgmt_attribute(SrtpSuite::AesCm128HmacSha1_32, key, fields());
  ASSERT_EQ(attr.rfind("a=key-mgmt:mikey ", 0), 0u);
  const std::string b64 = attr.substr(17);
  auto from_sdp = parse_key_mgmt("mikey " + b64);
  ASSERT_TRUE(from_sdp.ok()) << from_sdp.error().message;
  EXPECT_EQ(from_sdp->suite, SrtpSuite::AesCm128HmacSha1_32);
  auto from_header =
      parse_key_mgmt("prot=mikey; uri=\"rtsp://127.0.0.1/x/trackID=0\"; data=\"" + b64 + "\"");
  ASSERT_TRUE(from_header.ok()) << from_header.error().message;
  EXPECT_EQ(from_header->key, key);
  EXPECT_FALSE(parse_key_mgmt("sdes " + b64).ok());
  EXPECT_FALSE(parse_key_mgmt("mikey !!!notbase64").ok());
  EXPECT_FALSE(parse_key_mgmt("prot=mikey; data=\"" + b64).ok());
}

// A player's message: a CS ID map entry, no T/RAND, a TEK with a separate salt, no SP.
TEST(Mikey, AcceptsSeparateSaltAndMapEntries) {
  std::vector<std::uint8_t> m = {1, 0,    1,    0,    0,    0, 0, 7, 1,
                                 0,  // header, #CS 1, next KEMAC
                                 0, 0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 0};  // policy, SSRC, ROC
  std::vector<std::uint8_t> sub = {0, 0x30, 0, 16};  // KEY_DATA TEK+SALT, key 16
  for (int i = 0; i < 16; ++i)
    sub.push_back(static_cast<std::uint8_t>(i));
  sub.push_back(0);
  sub.push_back(14);
  for (int i = 0; i < 14; ++i)
    sub.push_back(static_cast<std::uint8_t>(100 + i));
  m.push_back(0);  // KEMAC: next payload LAST
  m.push_back(0);  // NULL encryption
  m.push_back(0);
  m.push_back(static_cast<std::uint8_t>(sub.size()));
  m.insert(m.end(), sub.begin(), sub.end());
  m.push_back(0);  // NULL MAC
  auto parsed = parse_mikey(m);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->suite, SrtpSuite::AesCm128HmacSha1_80);  // RFC 3830 defaults without SP
  ASSERT_EQ(parsed->ssrcs.size(), 1u);
  EXPECT_EQ(parsed->ssrcs[0], 0xDEADBEEFu);
  EXPECT_EQ(parsed->key.key()[15], 15);
  EXPECT_EQ(parsed->key.salt()[0], 100);
}

TEST(Mikey, EveryTruncationIsAnError) {
  const auto m = build_mikey(SrtpSuite::AesCm128HmacSha1_80,
                             key_for(SrtpSuite::AesCm128HmacSha1_80), fields());
  for (std::size_t n = 0; n < m.size(); ++n) {
    EXPECT_FALSE(parse_mikey(std::span(m).first(n)).ok()) << "length " << n;
  }
}

TEST(Mikey, UnsupportedChoicesAreErrors) {
  const auto good = build_mikey(SrtpSuite::AesCm128HmacSha1_80,
                                key_for(SrtpSuite::AesCm128HmacSha1_80), fields());
  auto with = [&](std::size_t at, std::uint8_t v) {
    auto m = good;
    m[at] = v;
    return parse_mikey(m);
  };
  EXPECT_FALSE(with(0, 2).ok());   // version
  EXPECT_FALSE(with(1, 1).ok());   // data type PK_INIT
  EXPECT_FALSE(with(9, 1).ok());   // CS ID map type
  EXPECT_FALSE(with(11, 9).ok());  // timestamp type
  const std::size_t sp = 22 + 16;
  EXPECT_FALSE(with(sp + 2, 1).ok());   // security protocol other than SRTP
  EXPECT_FALSE(with(sp + 7, 16).ok());  // encryption algorithm: the key no longer fits
  const std::size_t kemac = sp + 5 + 24;
  EXPECT_FALSE(with(kemac + 1, 1).ok());   // encrypted KEMAC
  EXPECT_FALSE(with(kemac + 7, 29).ok());  // key length that does not add up
  EXPECT_FALSE(with(10, 99).ok());         // unknown payload type after T
}

}  // namespace
}  // namespace predrop::wire

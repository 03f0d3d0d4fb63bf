// SDES a=crypto (RFC 4568 §9) and base64 (RFC 4648).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "predrop/wire/sdes_key.hpp"

namespace predrop::wire {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes ascii(std::string_view s) {
  return Bytes(s.begin(), s.end());
}

std::string error_of(const core::Result<CryptoAttribute>& r) {
  return r ? std::string("(parsed)") : r.error().message;
}

SrtpKeyMaterial counting_key(std::size_t size) {
  SrtpKeyMaterial k;
  k.size = size;
  for (std::size_t i = 0; i < size; ++i)
    k.bytes[i] = static_cast<std::uint8_t>(i);
  return k;
}

TEST(Base64, Rfc4648Section10Vectors) {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(ascii(plain)), encoded);
    auto d = base64_decode(encoded);
    ASSERT_TRUE(d) << encoded << ": " << d.error().message;
    EXPECT_EQ(*d, ascii(plain)) << encoded;
  }
}

TEST(Base64, AllByteValuesRoundTrip) {
  Bytes all(256);
  for (int i = 0; i < 256; ++i)
    all[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i);
  auto d = base64_decode(base64_encode(all));
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, all);
}

TEST(Base64, StrictDecoding) {
  for (const char* bad : {
           "Zg=",       // length not a multiple of 4
           "Zg",        // unpadded
           "Zm9v\n",    // whitespace
           "Zm 9v",     // whitespace
           "Zm9v====",  // padding group without data
           "Z===",      // too much padding
           "Zg=a",      // '=' before the end
           "=Zg=",      // '=' at the start
           "Zh==",      // non-zero bits after the last byte (non-canonical "f")
           "Zm9=",      // non-canonical "fo"
           "Zm9-",      // URL-safe alphabet is not base64
           "Zm9_",
       }) {
    EXPECT_FALSE(base64_decode(bad)) << '"' << bad << '"';
  }
  auto msg = base64_decode("Zm!v");
  ASSERT_FALSE(msg);
  EXPECT_NE(msg.error().message.find("offset 2"), std::string::npos) << msg.error().message;

  std::array<std::uint8_t, 2> small{};
  EXPECT_FALSE(base64_decode("Zm9v", small)) << "3 bytes do not fit in 2";
  auto fits = base64_decode("Zm8=", small);
  ASSERT_TRUE(fits);
  EXPECT_EQ(*fits, 2u);
}

TEST(SrtpSuite, NamesAndSizes) {
  EXPECT_EQ(suite_name(SrtpSuite::AesCm128HmacSha1_80), "AES_CM_128_HMAC_SHA1_80");
  EXPECT_EQ(suite_name(SrtpSuite::AesCm128HmacSha1_32), "AES_CM_128_HMAC_SHA1_32");
  EXPECT_EQ(suite_name(SrtpSuite::AeadAes128Gcm), "AEAD_AES_128_GCM");
  for (SrtpSuite s :
       {SrtpSuite::AesCm128HmacSha1_80, SrtpSuite::AesCm128HmacSha1_32, SrtpSuite::AeadAes128Gcm}) {
    EXPECT_EQ(suite_from_name(suite_name(s)), s);
  }
  EXPECT_FALSE(suite_from_name("aes_cm_128_hmac_sha1_80"));
  EXPECT_EQ(key_salt_size(SrtpSuite::AesCm128HmacSha1_80), 30u);  // RFC 4568 §6.2.1
  EXPECT_EQ(key_salt_size(SrtpSuite::AesCm128HmacSha1_32), 30u);
  EXPECT_EQ(key_salt_size(SrtpSuite::AeadAes128Gcm), 28u);  // RFC 7714 §12: 16 + 12
  EXPECT_EQ(master_salt_size(SrtpSuite::AeadAes128Gcm), 12u);
}

TEST(CryptoAttribute, Formats) {
  EXPECT_EQ(format_crypto_attribute(1, SrtpSuite::AesCm128HmacSha1_80, counting_key(30)),
            "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd");
  EXPECT_EQ(format_crypto_attribute(2, SrtpSuite::AeadAes128Gcm, counting_key(28)),
            "a=crypto:2 AEAD_AES_128_GCM inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGw==");
}

TEST(CryptoAttribute, ParsesRfc4568ExampleWithoutMki) {
  // RFC 4568 §4's example key with its lifetime; the MKI part is covered below.
  auto a = parse_crypto_attribute(
      "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR|2^20");
  ASSERT_TRUE(a) << error_of(a);
  EXPECT_EQ(a->tag, 1u);
  EXPECT_EQ(a->suite, SrtpSuite::AesCm128HmacSha1_80);
  ASSERT_EQ(a->key.size, 30u);
  EXPECT_EQ(a->key.bytes[0], 0x3D);
  EXPECT_EQ(a->key.bytes[29], 0x51);
  EXPECT_EQ(a->key.key().size(), 16u);
  EXPECT_EQ(a->key.salt().size(), 14u);
}

TEST(CryptoAttribute, AcceptedVariants) {
  const std::string key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd";
  for (const std::string& line : {
           "a=crypto:7 AES_CM_128_HMAC_SHA1_32 inline:" + key,
           "crypto:7 AES_CM_128_HMAC_SHA1_32 inline:" + key,             // no "a="
           "a=crypto:7 AES_CM_128_HMAC_SHA1_32 inline:" + key + "\r\n",  // SDP line ending
           "a=crypto:7\tAES_CM_128_HMAC_SHA1_32  inline:" + key,         // 1*WSP
           "a=crypto:7 AES_CM_128_HMAC_SHA1_32 inline:" + key + "|1048576",
           "a=crypto:007 AES_CM_128_HMAC_SHA1_32 inline:" + key,
       }) {
    auto a = parse_crypto_attribute(line);
    ASSERT_TRUE(a) << line << ": " << error_of(a);
    EXPECT_EQ(a->tag, 7u);
    EXPECT_EQ(a->suite, SrtpSuite::AesCm128HmacSha1_32);
    EXPECT_EQ(a->key, counting_key(30));
  }
  auto big_tag = parse_crypto_attribute("a=crypto:999999999 AES_CM_128_HMAC_SHA1_80 inline:" + key);
  ASSERT_TRUE(big_tag);
  EXPECT_EQ(big_tag->tag, 999'999'999u);
}

TEST(CryptoAttribute, RejectsWithClearMessages) {
  const std::string key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd";
  const std::pair<std::string, const char*> cases[] = {
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + key + "|2^20|1:32", "MKI"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + key + "|1:4", "MKI"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + key + "|2^20|7", "unexpected"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + key + "|2^", "lifetime"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + key + "|", "lifetime"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + key + "|x", "lifetime"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + key + ";inline:" + key, "several"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + key + " UNENCRYPTED_SRTP", "session"},
      {"a=crypto:1 AES_256_CM_HMAC_SHA1_80 inline:" + key, "unsupported"},
      {"a=crypto:1 AEAD_AES_128_GCM inline:" + key, "28-byte"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGw==",
       "30-byte"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + key + key, "got 60 bytes"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + key + key + key, "too long"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:AAEC*wQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd",
       "base64"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 uri:http://example.com/key", "inline"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80", "key-params"},
      {"a=crypto:1 AES_CM_128_HMAC_SHA1_80 ", "key-params"},
      {"a=crypto:AES_CM_128_HMAC_SHA1_80 inline:" + key, "tag"},
      {"a=crypto:1234567890 AES_CM_128_HMAC_SHA1_80 inline:" + key, "tag"},
      {"a=crypto:1AES_CM_128_HMAC_SHA1_80 inline:" + key, "whitespace"},
      {"a=fingerprint:sha-256 AB:CD", "a=crypto"},
      {"", "a=crypto"},
  };
  for (const auto& [line, expected] : cases) {
    auto a = parse_crypto_attribute(line);
    ASSERT_FALSE(a) << line;
    EXPECT_NE(a.error().message.find(expected), std::string::npos)
        << line << " -> " << a.error().message;
  }
}

}  // namespace
}  // namespace predrop::wire

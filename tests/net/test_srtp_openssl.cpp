// libsrtp on OpenSSL's primitives (net/src/srtp_openssl.cpp) against libsrtp on the crypto it was
// built with (NSS on Debian): the same key and packets must give the same bytes, each side must
// read the other's packets and refuse tampered and replayed ones, the OpenSSL types must be in
// effect by default, and protect/unprotect must not call malloc per packet.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "predrop/net/srtp_session.hpp"
#include "predrop/wire/sdes_key.hpp"

// Counts every malloc/calloc/realloc of the process, C libraries included (operator new is not
// enough: libsrtp's backends allocate with malloc). Defining them in the executable interposes
// them for every shared library; the sanitizers interpose them themselves, so the counting test
// is skipped there.
#if defined(__SANITIZE_ADDRESS__)
#define PREDROP_COUNTS_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PREDROP_COUNTS_MALLOC 0
#endif
#endif
#ifndef PREDROP_COUNTS_MALLOC
#define PREDROP_COUNTS_MALLOC 1
#endif

#if PREDROP_COUNTS_MALLOC
#include <atomic>
extern "C" {
void* __libc_malloc(std::size_t size);                 // NOLINT(bugprone-reserved-identifier)
void* __libc_calloc(std::size_t n, std::size_t size);  // NOLINT(bugprone-reserved-identifier)
void* __libc_realloc(void* p, std::size_t size);       // NOLINT(bugprone-reserved-identifier)
}
namespace {
std::atomic<std::size_t> g_mallocs{0};
}
extern "C" {
void* malloc(std::size_t size) {
  g_mallocs.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(size);
}
void* calloc(std::size_t n, std::size_t size) {
  g_mallocs.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t size) {
  g_mallocs.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, size);
}
}
#endif

namespace predrop::net {
namespace {

using wire::SrtpSuite;

constexpr SrtpSuite kSuites[] = {SrtpSuite::AesCm128HmacSha1_80, SrtpSuite::AesCm128HmacSha1_32,
                                 SrtpSuite::AeadAes128Gcm};

std::vector<std::uint8_t> fixed_key(SrtpSuite suite) {
  std::vector<std::uint8_t> key(srtp_key_salt_size(suite));
  for (std::size_t i = 0; i < key.size(); ++i)
    key[i] = static_cast<std::uint8_t>(0x11 * i + 3);
  return key;
}

/// Writes an RTP packet into p[0, 12 + payload): seq, SSRC 0x01020304, a payload pattern.
void fill_rtp(std::vector<std::uint8_t>& p, std::uint16_t seq, std::size_t payload) {
  std::fill(p.begin(), p.begin() + 12, std::uint8_t{0});
  p[0] = 0x80;
  p[1] = 96;
  p[2] = static_cast<std::uint8_t>(seq >> 8);
  p[3] = static_cast<std::uint8_t>(seq);
  p[7] = static_cast<std::uint8_t>(seq * 3000);
  p[8] = 1;
  p[9] = 2;
  p[10] = 3;
  p[11] = 4;
  for (std::size_t i = 0; i < payload; ++i)
    p[12 + i] = static_cast<std::uint8_t>(i * 7 + seq);
}

/// An RTP packet (see fill_rtp) with room for the trailer.
std::vector<std::uint8_t> rtp_packet(std::uint16_t seq, std::size_t payload) {
  std::vector<std::uint8_t> p(12 + payload + kSrtpMaxTrailer, 0);
  fill_rtp(p, seq, payload);
  return p;
}

/// A sender report (RFC 3550 §6.4.1) with no report blocks, 28 bytes.
std::vector<std::uint8_t> rtcp_packet(std::uint8_t salt) {
  std::vector<std::uint8_t> p(28 + kSrtpMaxTrailer, 0);
  p[0] = 0x80;
  p[1] = 200;
  p[3] = 6;
  p[4] = 1;
  p[5] = 2;
  p[6] = 3;
  p[7] = 4;
  for (std::size_t i = 8; i < 28; ++i)
    p[i] = static_cast<std::uint8_t>(i + salt);
  return p;
}

struct Protected {
  std::vector<std::vector<std::uint8_t>> rtp;
  std::vector<std::vector<std::uint8_t>> rtcp;
};

/// Protects the same 40 RTP packets (sizes 1..1200 bytes of payload) and 5 RTCP packets with a
/// session made under `crypto`.
Protected protect_all(SrtpCrypto crypto, SrtpSuite suite) {
  set_srtp_crypto(crypto);
  EXPECT_EQ(srtp_crypto_in_use(), crypto);
  SrtpSession tx(SrtpDirection::Outbound, suite, fixed_key(suite));
  Protected out;
  for (std::uint16_t seq = 0; seq < 40; ++seq) {
    auto p = rtp_packet(static_cast<std::uint16_t>(65500 + seq), 1 + seq * 31u);
    const auto r = tx.protect_rtp(p, 12 + 1 + seq * 31u);
    EXPECT_TRUE(r.ok()) << to_string(r.error);
    p.resize(r.length);
    out.rtp.push_back(p);
  }
  for (std::uint8_t i = 0; i < 5; ++i) {
    auto p = rtcp_packet(i);
    const auto r = tx.protect_rtcp(p, 28);
    EXPECT_TRUE(r.ok()) << to_string(r.error);
    p.resize(r.length);
    out.rtcp.push_back(p);
  }
  return out;
}

class SrtpOpenSsl : public ::testing::TestWithParam<SrtpSuite> {
 protected:
  void TearDown() override { set_srtp_crypto(SrtpCrypto::OpenSsl); }
  SrtpLibraryGuard guard_;
};

TEST(SrtpOpenSslDefault, IsInEffectAfterTheFirstGuard) {
  const SrtpLibraryGuard guard;
  EXPECT_EQ(srtp_crypto_in_use(), SrtpCrypto::OpenSsl) << srtp_crypto_fallback_reason();
  EXPECT_EQ(srtp_crypto_fallback_reason(), "");
  EXPECT_EQ(parse_srtp_crypto("openssl"), SrtpCrypto::OpenSsl);
  EXPECT_EQ(parse_srtp_crypto("libsrtp"), SrtpCrypto::Libsrtp);
  EXPECT_EQ(parse_srtp_crypto("nss"), std::nullopt);
}

TEST_P(SrtpOpenSsl, GivesTheSameBytesAsLibsrtpsOwnCrypto) {
  const auto reference = protect_all(SrtpCrypto::Libsrtp, GetParam());
  const auto ours = protect_all(SrtpCrypto::OpenSsl, GetParam());
  ASSERT_EQ(reference.rtp.size(), ours.rtp.size());
  for (std::size_t i = 0; i < ours.rtp.size(); ++i)
    EXPECT_EQ(reference.rtp[i], ours.rtp[i]) << i;
  for (std::size_t i = 0; i < ours.rtcp.size(); ++i) {
    EXPECT_EQ(reference.rtcp[i], ours.rtcp[i]) << i;
  }
}

TEST_P(SrtpOpenSsl, EachSideReadsTheOthersPacketsAndRefusesTamperedAndReplayedOnes) {
  const SrtpSuite suite = GetParam();
  for (const SrtpCrypto sender : {SrtpCrypto::OpenSsl, SrtpCrypto::Libsrtp}) {
    const SrtpCrypto receiver =
        sender == SrtpCrypto::OpenSsl ? SrtpCrypto::Libsrtp : SrtpCrypto::OpenSsl;
    const auto sent = protect_all(sender, suite);
    set_srtp_crypto(receiver);
    SrtpSession rx(SrtpDirection::Inbound, suite, fixed_key(suite));
    for (std::size_t i = 0; i < sent.rtp.size(); ++i) {
      auto p = sent.rtp[i];
      auto tampered = p;
      tampered[12 + i % (p.size() - 12)] ^= 0x40;  // Payload or tag: either must fail.
      tampered.resize(tampered.size() + kSrtpMaxTrailer);
      EXPECT_EQ(rx.unprotect_rtp(tampered, sent.rtp[i].size()).error, SrtpError::AuthFailed) << i;
      const std::size_t len = p.size();
      p.resize(len + kSrtpMaxTrailer);
      const auto r = rx.unprotect_rtp(p, len);
      ASSERT_TRUE(r.ok()) << to_string(sender) << " -> " << to_string(receiver) << " #" << i;
      const auto plain = rtp_packet(static_cast<std::uint16_t>(65500 + i), 1 + i * 31u);
      EXPECT_EQ(0, std::memcmp(p.data(), plain.data(), r.length));
      auto again = sent.rtp[i];
      again.resize(len + kSrtpMaxTrailer);
      EXPECT_EQ(rx.unprotect_rtp(again, len).error, SrtpError::Replay) << i;
    }
    for (std::size_t i = 0; i < sent.rtcp.size(); ++i) {
      auto p = sent.rtcp[i];
      const std::size_t len = p.size();
      p.resize(len + kSrtpMaxTrailer);
      const auto r = rx.unprotect_rtcp(p, len);
      ASSERT_TRUE(r.ok()) << i;
      EXPECT_EQ(r.length, 28u);
    }
  }
}

#if PREDROP_COUNTS_MALLOC
TEST_P(SrtpOpenSsl, ProtectAndUnprotectCallNoMallocPerPacket) {
  const SrtpSuite suite = GetParam();
  const auto count = [&](SrtpCrypto crypto) {
    set_srtp_crypto(crypto);
    SrtpSession tx(SrtpDirection::Outbound, suite, fixed_key(suite));
    SrtpSession rx(SrtpDirection::Inbound, suite, fixed_key(suite));
    std::vector<std::uint8_t> p = rtp_packet(0, 1200);
    // The first packet of an SSRC makes libsrtp's per-SSRC stream (an allocation by design).
    auto first = tx.protect_rtp(p, 1212);
    EXPECT_TRUE(first.ok());
    EXPECT_TRUE(rx.unprotect_rtp(p, first.length).ok());
    const std::size_t before = g_mallocs.load();
    for (std::uint16_t seq = 1; seq <= 200; ++seq) {
      fill_rtp(p, seq, 1200);
      const auto r = tx.protect_rtp(p, 1212);
      EXPECT_TRUE(r.ok());
      EXPECT_TRUE(rx.unprotect_rtp(p, r.length).ok());
    }
    return g_mallocs.load() - before;
  };
  // The counter sees libsrtp's own backend allocate (NSS builds a PKCS#11 context per packet for
  // AES-ICM); on a libsrtp without per-packet allocations this half says nothing.
  const std::size_t stock = count(SrtpCrypto::Libsrtp);
  if (suite != SrtpSuite::AeadAes128Gcm) {
    EXPECT_GT(stock, 0u);
  }
  EXPECT_EQ(count(SrtpCrypto::OpenSsl), 0u);
}
#endif

std::string suite_label(const ::testing::TestParamInfo<SrtpSuite>& param) {
  switch (param.param) {
    case SrtpSuite::AesCm128HmacSha1_80:
      return "AesCm80";
    case SrtpSuite::AesCm128HmacSha1_32:
      return "AesCm32";
    case SrtpSuite::AeadAes128Gcm:
      return "Gcm";
  }
  return "unknown";
}

INSTANTIATE_TEST_SUITE_P(Suites, SrtpOpenSsl, ::testing::ValuesIn(kSuites), suite_label);

}  // namespace
}  // namespace predrop::net

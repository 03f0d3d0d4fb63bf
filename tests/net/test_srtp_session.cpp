// SrtpSession: known-answer vectors, round trips for every suite, and every rejection path
// (wrong key, replay, truncation, garbage, no trailer room) reported as a value with a reason.
#include "predrop/net/srtp_session.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace predrop::net {
namespace {

// srtp_init() runs libsrtp's self-tests; one guard for the whole binary keeps each test from
// paying for them again (and is what main() in the server does). The init/shutdown cycle test
// drops it for its duration.
std::optional<SrtpLibraryGuard> g_library;

class SrtpEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { g_library.emplace(); }
  void TearDown() override { g_library.reset(); }
};
const auto* const g_env = ::testing::AddGlobalTestEnvironment(new SrtpEnvironment);

using Bytes = std::vector<std::uint8_t>;

// libsrtp test/srtp_driver.c, srtp_validate(): AES_CM_128_HMAC_SHA1_80, SSRC 0xcafebabe.
const Bytes kKatKey = {0xe1, 0xf9, 0x7a, 0x0d, 0x3e, 0x01, 0x8b, 0xe0,
                       0xd6, 0x4f, 0xa3, 0x2c, 0x06, 0xde, 0x41, 0x39,  // master key
                       0x0e, 0xc6, 0x75, 0xad, 0x49, 0x8a, 0xfe, 0xeb,
                       0xb6, 0x96, 0x0b, 0x3a, 0xab, 0xe6};  // master salt
const Bytes kKatRtp = {0x80, 0x0f, 0x12, 0x34,               // V=2, PT=15, seq=0x1234
                       0xde, 0xca, 0xfb, 0xad,               // timestamp
                       0xca, 0xfe, 0xba, 0xbe,               // SSRC
                       0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab,
                       0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab};  // payload
const Bytes kKatSrtp = {
    0x80, 0x0f, 0x12, 0x34, 0xde, 0xca, 0xfb, 0xad, 0xca, 0xfe, 0xba, 0xbe,  // header in clear
    0x4e, 0x55, 0xdc, 0x4c, 0xe7, 0x99, 0x78, 0xd8, 0x8c, 0xa4, 0xd2, 0x15,
    0x94, 0x9d, 0x24, 0x02,                                       // encrypted payload
    0xb7, 0x8d, 0x6a, 0xcc, 0x99, 0xea, 0x17, 0x9b, 0x8d, 0xbb};  // 80-bit HMAC-SHA1 tag
const Bytes kKatRtcp = {0x81, 0xc8, 0x00, 0x0b,  // V=2, RC=1, PT=200 (SR), length field
                        0xca, 0xfe, 0xba, 0xbe,  // sender SSRC
                        0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab,
                        0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab};
const Bytes kKatSrtcp = {0x81, 0xc8, 0x00, 0x0b, 0xca, 0xfe, 0xba, 0xbe,  // first 8 bytes in clear
                         0x71, 0x28, 0x03, 0x5b, 0xe4, 0x87, 0xb9, 0xbd, 0xbe, 0xf8,
                         0x90, 0x41, 0xf9, 0x77, 0xa5, 0xa8,  // encrypted
                         0x80, 0x00, 0x00, 0x01,              // E=1, SRTCP index 1
                         0x99, 0x3e, 0x08, 0xcd, 0x54, 0xd6, 0xc1, 0x23, 0x07, 0x98};  // tag

Bytes make_key(wire::SrtpSuite suite, std::uint8_t seed) {
  Bytes key(srtp_key_salt_size(suite));
  for (std::size_t i = 0; i < key.size(); ++i)
    key[i] = static_cast<std::uint8_t>(seed + i * 7);
  return key;
}

// An RTP packet (RFC 3550 §5.1) with a 12-byte header, `payload_len` bytes of payload, and
// kSrtpMaxTrailer bytes of spare room; returns the buffer, the packet length is 12 + payload_len.
Bytes make_rtp(std::uint16_t seq, std::size_t payload_len, std::uint32_t ssrc = 0x11223344) {
  Bytes b(12 + payload_len + kSrtpMaxTrailer, 0);
  b[0] = 0x80;
  b[1] = 96;
  b[2] = static_cast<std::uint8_t>(seq >> 8);
  b[3] = static_cast<std::uint8_t>(seq);
  b[4] = 0x00, b[5] = 0x01, b[6] = 0x00, b[7] = 0x00;  // timestamp
  b[8] = static_cast<std::uint8_t>(ssrc >> 24), b[9] = static_cast<std::uint8_t>(ssrc >> 16);
  b[10] = static_cast<std::uint8_t>(ssrc >> 8), b[11] = static_cast<std::uint8_t>(ssrc);
  for (std::size_t i = 0; i < payload_len; ++i)
    b[12 + i] = static_cast<std::uint8_t>(seq + i);
  return b;
}
constexpr std::size_t kPayload = 160;
constexpr std::size_t kRtpLen = 12 + kPayload;

// An RR with one report block (RFC 3550 §6.4.2): 8 + 24 bytes, plus trailer room.
Bytes make_rtcp(std::uint8_t fill) {
  Bytes b(32 + kSrtpMaxTrailer, 0);
  b[0] = 0x81;
  b[1] = 201;
  b[2] = 0x00, b[3] = 0x07;                            // length in words minus one
  b[4] = 0x11, b[5] = 0x22, b[6] = 0x33, b[7] = 0x44;  // reporter SSRC
  for (std::size_t i = 8; i < 32; ++i)
    b[i] = static_cast<std::uint8_t>(fill + i);
  return b;
}
constexpr std::size_t kRtcpLen = 32;

TEST(SrtpSessionKat, MatchesLibsrtpReferenceVectorForRtp) {
  SrtpSession out(SrtpDirection::Outbound, wire::SrtpSuite::AesCm128HmacSha1_80, kKatKey);
  Bytes buf = kKatRtp;
  buf.resize(kKatRtp.size() + kSrtpMaxTrailer);
  auto r = out.protect_rtp(buf, kKatRtp.size());
  ASSERT_TRUE(r.ok()) << to_string(r.error);
  ASSERT_EQ(r.length, kKatSrtp.size());
  EXPECT_EQ(Bytes(buf.begin(), buf.begin() + static_cast<long>(r.length)), kKatSrtp);

  SrtpSession in(SrtpDirection::Inbound, wire::SrtpSuite::AesCm128HmacSha1_80, kKatKey);
  Bytes wire = kKatSrtp;
  auto u = in.unprotect_rtp(wire, wire.size());
  ASSERT_TRUE(u.ok()) << to_string(u.error);
  EXPECT_EQ(Bytes(wire.begin(), wire.begin() + static_cast<long>(u.length)), kKatRtp);
}

TEST(SrtpSessionKat, MatchesLibsrtpReferenceVectorForRtcp) {
  SrtpSession out(SrtpDirection::Outbound, wire::SrtpSuite::AesCm128HmacSha1_80, kKatKey);
  Bytes buf = kKatRtcp;
  buf.resize(kKatRtcp.size() + kSrtpMaxTrailer);
  auto r = out.protect_rtcp(buf, kKatRtcp.size());
  ASSERT_TRUE(r.ok()) << to_string(r.error);
  ASSERT_EQ(r.length, kKatSrtcp.size());
  EXPECT_EQ(Bytes(buf.begin(), buf.begin() + static_cast<long>(r.length)), kKatSrtcp);

  SrtpSession in(SrtpDirection::Inbound, wire::SrtpSuite::AesCm128HmacSha1_80, kKatKey);
  Bytes wire = kKatSrtcp;
  auto u = in.unprotect_rtcp(wire, wire.size());
  ASSERT_TRUE(u.ok()) << to_string(u.error);
  EXPECT_EQ(Bytes(wire.begin(), wire.begin() + static_cast<long>(u.length)), kKatRtcp);
}

class SrtpSuiteTest : public ::testing::TestWithParam<wire::SrtpSuite> {
 protected:
  wire::SrtpSuite suite() const { return GetParam(); }
  SrtpSession outbound(std::uint8_t seed = 1) {
    return SrtpSession(SrtpDirection::Outbound, suite(), make_key(suite(), seed));
  }
  SrtpSession inbound(std::uint8_t seed = 1) {
    return SrtpSession(SrtpDirection::Inbound, suite(), make_key(suite(), seed));
  }
};

TEST_P(SrtpSuiteTest, RtpRoundTrip) {
  SrtpSession out = outbound();
  SrtpSession in = inbound();
  for (std::uint16_t seq = 65500; seq != 40; ++seq) {  // crosses the 16-bit rollover
    Bytes buf = make_rtp(seq, kPayload);
    const Bytes plain(buf.begin(), buf.begin() + kRtpLen);
    auto p = out.protect_rtp(buf, kRtpLen);
    ASSERT_TRUE(p.ok()) << to_string(p.error);
    ASSERT_EQ(p.length, kRtpLen + srtp_rtp_tag_size(suite()));
    EXPECT_TRUE(std::equal(plain.begin(), plain.begin() + 12, buf.begin()));      // header clear
    EXPECT_FALSE(std::equal(plain.begin() + 12, plain.end(), buf.begin() + 12));  // payload not
    auto u = in.unprotect_rtp(buf, p.length);
    ASSERT_TRUE(u.ok()) << "seq " << seq << ": " << to_string(u.error);
    ASSERT_EQ(u.length, kRtpLen);
    EXPECT_TRUE(std::equal(plain.begin(), plain.end(), buf.begin()));
  }
}

TEST_P(SrtpSuiteTest, RtcpRoundTrip) {
  SrtpSession out = outbound();
  SrtpSession in = inbound();
  for (std::uint8_t i = 0; i < 50; ++i) {
    Bytes buf = make_rtcp(i);
    const Bytes plain(buf.begin(), buf.begin() + kRtcpLen);
    auto p = out.protect_rtcp(buf, kRtcpLen);
    ASSERT_TRUE(p.ok()) << to_string(p.error);
    ASSERT_EQ(p.length, kRtcpLen + srtcp_trailer_size(suite()));
    auto u = in.unprotect_rtcp(buf, p.length);
    ASSERT_TRUE(u.ok()) << to_string(u.error);
    ASSERT_EQ(u.length, kRtcpLen);
    EXPECT_TRUE(std::equal(plain.begin(), plain.end(), buf.begin()));
  }
}

TEST_P(SrtpSuiteTest, WrongKeyFailsAuthentication) {
  SrtpSession out = outbound(1);
  SrtpSession in = inbound(2);
  Bytes rtp = make_rtp(1, kPayload);
  auto p = out.protect_rtp(rtp, kRtpLen);
  ASSERT_TRUE(p.ok());
  auto u = in.unprotect_rtp(rtp, p.length);
  EXPECT_FALSE(u.ok());
  EXPECT_EQ(u.error, SrtpError::AuthFailed);
  EXPECT_EQ(to_string(u.error), "auth failed");
  EXPECT_NE(std::string(srtp_status_text(u.library_status)).find("auth"), std::string::npos);

  Bytes rtcp = make_rtcp(3);
  auto pc = out.protect_rtcp(rtcp, kRtcpLen);
  ASSERT_TRUE(pc.ok());
  auto uc = in.unprotect_rtcp(rtcp, pc.length);
  EXPECT_EQ(uc.error, SrtpError::AuthFailed);
}

TEST_P(SrtpSuiteTest, TamperedPacketFailsAuthentication) {
  SrtpSession out = outbound();
  SrtpSession in = inbound();
  Bytes rtp = make_rtp(7, kPayload);
  auto p = out.protect_rtp(rtp, kRtpLen);
  ASSERT_TRUE(p.ok());
  rtp[20] ^= 0x01;
  EXPECT_EQ(in.unprotect_rtp(rtp, p.length).error, SrtpError::AuthFailed);
}

TEST_P(SrtpSuiteTest, ReplayedPacketIsRejected) {
  SrtpSession out = outbound();
  SrtpSession in = inbound();
  Bytes first = make_rtp(100, kPayload);
  auto p = out.protect_rtp(first, kRtpLen);
  ASSERT_TRUE(p.ok());
  const Bytes wire(first.begin(), first.begin() + static_cast<long>(p.length));

  Bytes copy1 = wire;
  ASSERT_TRUE(in.unprotect_rtp(copy1, copy1.size()).ok());
  Bytes copy2 = wire;
  auto again = in.unprotect_rtp(copy2, copy2.size());
  EXPECT_EQ(again.error, SrtpError::Replay);
  EXPECT_EQ(to_string(again.error), "replay");

  // Same for SRTCP, whose index lives in the trailer.
  Bytes rtcp = make_rtcp(9);
  auto pc = out.protect_rtcp(rtcp, kRtcpLen);
  ASSERT_TRUE(pc.ok());
  const Bytes rtcp_wire(rtcp.begin(), rtcp.begin() + static_cast<long>(pc.length));
  Bytes c1 = rtcp_wire;
  ASSERT_TRUE(in.unprotect_rtcp(c1, c1.size()).ok());
  Bytes c2 = rtcp_wire;
  EXPECT_EQ(in.unprotect_rtcp(c2, c2.size()).error, SrtpError::Replay);
}

TEST_P(SrtpSuiteTest, PacketOlderThanReplayWindowIsRejected) {
  SrtpSession out = outbound();
  SrtpSession in = inbound();
  Bytes old_pkt = make_rtp(1, kPayload);
  auto p_old = out.protect_rtp(old_pkt, kRtpLen);
  ASSERT_TRUE(p_old.ok());
  // Move the window far past seq 1 without ever delivering it.
  Bytes newer = make_rtp(static_cast<std::uint16_t>(1 + SrtpSession::kReplayWindow + 10), kPayload);
  auto p_new = out.protect_rtp(newer, kRtpLen);
  ASSERT_TRUE(p_new.ok());
  ASSERT_TRUE(in.unprotect_rtp(newer, p_new.length).ok());
  EXPECT_EQ(in.unprotect_rtp(old_pkt, p_old.length).error, SrtpError::Replay);
}

TEST_P(SrtpSuiteTest, OutboundRefusesToProtectTheSameIndexTwice) {
  SrtpSession out = outbound();
  Bytes a = make_rtp(5, kPayload);
  ASSERT_TRUE(out.protect_rtp(a, kRtpLen).ok());
  Bytes b = make_rtp(5, kPayload);
  EXPECT_EQ(out.protect_rtp(b, kRtpLen).error, SrtpError::Replay);  // allow_repeat_tx is off
}

TEST_P(SrtpSuiteTest, TruncatedPacketsAreRejected) {
  SrtpSession out = outbound();
  SrtpSession in = inbound();
  Bytes rtp = make_rtp(9, kPayload);
  auto p = out.protect_rtp(rtp, kRtpLen);
  ASSERT_TRUE(p.ok());
  const Bytes wire(rtp.begin(), rtp.begin() + static_cast<long>(p.length));

  // Shorter than header + tag: rejected before libsrtp sees it.
  for (std::size_t len : {std::size_t{0}, std::size_t{1}, std::size_t{11}, std::size_t{12},
                          12 + srtp_rtp_tag_size(suite()) - 1}) {
    Bytes b = wire;
    auto u = in.unprotect_rtp(b, len);
    EXPECT_EQ(u.error, SrtpError::BadLength) << "len " << len;
    EXPECT_EQ(to_string(u.error), "bad length");
  }
  // Cut anywhere else: the tag no longer matches.
  for (std::size_t cut : {std::size_t{1}, std::size_t{5}, std::size_t{100}}) {
    Bytes b = wire;
    auto u = in.unprotect_rtp(b, wire.size() - cut);
    EXPECT_FALSE(u.ok()) << "cut " << cut;
  }
  // RTCP likewise.
  Bytes rtcp = make_rtcp(1);
  auto pc = out.protect_rtcp(rtcp, kRtcpLen);
  ASSERT_TRUE(pc.ok());
  Bytes b = rtcp;
  EXPECT_EQ(in.unprotect_rtcp(b, 8 + srtcp_trailer_size(suite()) - 1).error, SrtpError::BadLength);
  Bytes b2 = rtcp;
  EXPECT_FALSE(in.unprotect_rtcp(b2, pc.length - 1).ok());
  // A length beyond the buffer is caught too.
  Bytes b3 = wire;
  EXPECT_EQ(in.unprotect_rtp(b3, b3.size() + 1).error, SrtpError::BadLength);
}

TEST_P(SrtpSuiteTest, GarbageIsRejectedWithoutCrashing) {
  SrtpSession in = inbound();
  std::mt19937 rng(1234);
  for (int round = 0; round < 2000; ++round) {
    const std::size_t len = rng() % 300;
    Bytes b(len + kSrtpMaxTrailer);
    for (auto& x : b)
      x = static_cast<std::uint8_t>(rng());
    if (round % 2 == 0 && len > 0) {
      // Half the time make it look like RTP v2 with many CSRCs and an extension, so libsrtp's
      // header walk runs past short packets unless it checks.
      b[0] = static_cast<std::uint8_t>(0x90 | (rng() % 16));
    }
    Bytes c = b;
    EXPECT_FALSE(in.unprotect_rtp(b, len).ok());
    EXPECT_FALSE(in.unprotect_rtcp(c, len).ok());
  }
}

TEST_P(SrtpSuiteTest, ProtectNeedsTrailerRoom) {
  SrtpSession out = outbound();
  Bytes rtp = make_rtp(1, kPayload);
  auto r =
      out.protect_rtp(std::span<std::uint8_t>(rtp.data(), kRtpLen + kSrtpMaxTrailer - 1), kRtpLen);
  EXPECT_EQ(r.error, SrtpError::BadLength);
  Bytes rtcp = make_rtcp(1);
  EXPECT_EQ(out.protect_rtcp(std::span<std::uint8_t>(rtcp.data(), kRtcpLen), kRtcpLen).error,
            SrtpError::BadLength);
  // Shorter than an RTP header.
  EXPECT_EQ(out.protect_rtp(rtp, 11).error, SrtpError::BadLength);
}

TEST_P(SrtpSuiteTest, WrongDirectionIsAnError) {
  SrtpSession out = outbound();
  SrtpSession in = inbound();
  Bytes rtp = make_rtp(1, kPayload);
  EXPECT_EQ(in.protect_rtp(rtp, kRtpLen).error, SrtpError::WrongDirection);
  EXPECT_EQ(out.unprotect_rtp(rtp, kRtpLen).error, SrtpError::WrongDirection);
  EXPECT_EQ(in.protect_rtcp(rtp, kRtcpLen).error, SrtpError::WrongDirection);
  EXPECT_EQ(out.unprotect_rtcp(rtp, kRtcpLen).error, SrtpError::WrongDirection);
}

TEST_P(SrtpSuiteTest, SeveralSsrcsShareOneSession) {
  SrtpSession out = outbound();
  SrtpSession in = inbound();
  for (std::uint32_t ssrc : {0x1u, 0x2u, 0xdeadbeefu}) {
    Bytes b = make_rtp(10, kPayload, ssrc);
    auto p = out.protect_rtp(b, kRtpLen);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(in.unprotect_rtp(b, p.length).ok());
  }
}

TEST_P(SrtpSuiteTest, KeyMaterialConstructorMatchesSpanConstructor) {
  wire::SrtpKeyMaterial km;
  const Bytes key = make_key(suite(), 1);
  std::copy(key.begin(), key.end(), km.bytes.begin());
  km.size = key.size();
  SrtpSession out(SrtpDirection::Outbound, suite(), km);
  SrtpSession in = inbound(1);
  Bytes b = make_rtp(1, kPayload);
  auto p = out.protect_rtp(b, kRtpLen);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(in.unprotect_rtp(b, p.length).ok());
}

TEST_P(SrtpSuiteTest, WrongKeySizeThrowsAtSetup) {
  Bytes key = make_key(suite(), 1);
  key.pop_back();
  try {
    SrtpSession s(SrtpDirection::Outbound, suite(), key);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bytes of key||salt"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(AllSuites, SrtpSuiteTest,
                         ::testing::Values(wire::SrtpSuite::AesCm128HmacSha1_80,
                                           wire::SrtpSuite::AesCm128HmacSha1_32,
                                           wire::SrtpSuite::AeadAes128Gcm),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case wire::SrtpSuite::AesCm128HmacSha1_80:
                               return std::string("AesCm80");
                             case wire::SrtpSuite::AesCm128HmacSha1_32:
                               return std::string("AesCm32");
                             case wire::SrtpSuite::AeadAes128Gcm:
                               return std::string("Gcm");
                           }
                           return std::string("Unknown");
                         });

TEST(SrtpSession, MovedFromSessionFailsCleanly) {
  SrtpSession a(SrtpDirection::Outbound, wire::SrtpSuite::AesCm128HmacSha1_80,
                make_key(wire::SrtpSuite::AesCm128HmacSha1_80, 1));
  SrtpSession b(std::move(a));
  Bytes rtp = make_rtp(1, kPayload);
  EXPECT_EQ(a.protect_rtp(rtp, kRtpLen).error,
            SrtpError::Other);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(b.protect_rtp(rtp, kRtpLen).ok());
  SrtpSession c(SrtpDirection::Outbound, wire::SrtpSuite::AeadAes128Gcm,
                make_key(wire::SrtpSuite::AeadAes128Gcm, 2));
  c = std::move(b);
  EXPECT_EQ(c.suite(), wire::SrtpSuite::AesCm128HmacSha1_80);
}

TEST(SrtpSession, LibrarySurvivesRepeatedInitAndShutdown) {
  // Without the global guard each iteration takes the refcount 0 -> 1 -> 0, so
  // srtp_init/srtp_shutdown run every time.
  g_library.reset();
  for (int i = 0; i < 5; ++i) {
    SrtpSession out(SrtpDirection::Outbound, wire::SrtpSuite::AesCm128HmacSha1_80,
                    make_key(wire::SrtpSuite::AesCm128HmacSha1_80, static_cast<std::uint8_t>(i)));
    SrtpSession in(SrtpDirection::Inbound, wire::SrtpSuite::AesCm128HmacSha1_80,
                   make_key(wire::SrtpSuite::AesCm128HmacSha1_80, static_cast<std::uint8_t>(i)));
    Bytes rtp = make_rtp(1, kPayload);
    auto p = out.protect_rtp(rtp, kRtpLen);
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(in.unprotect_rtp(rtp, p.length).ok());
  }
  g_library.emplace();
}

TEST(SrtpSession, ErrorTextsAreDistinct) {
  EXPECT_EQ(to_string(SrtpError::None), "ok");
  EXPECT_EQ(to_string(SrtpError::Other), "srtp error");
  EXPECT_EQ(to_string(SrtpError::WrongDirection), "wrong direction");
  EXPECT_EQ(srtp_status_text(9999), "unknown libsrtp status");
  EXPECT_NE(std::string(srtp_status_text(9)).find("replay"), std::string::npos);
}

}  // namespace
}  // namespace predrop::net

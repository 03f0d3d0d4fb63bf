// DDL control messages (ddl/include/predrop/ddl/protocol.hpp): annotated fixtures, round trips,
// truncation, version and framing errors, SRTCP protection, and the job key formats.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "predrop/ddl/protocol.hpp"
#include "predrop/net/srtp_session.hpp"

namespace predrop {
namespace {

// RR (no blocks) + PDJN v2: rank 2, 101 770 parameters, seed 7, the job's nonce and its own.
const std::vector<std::uint8_t> kJoinFixture = {
    0x80, 0xc9, 0x00, 0x01,  // RR: V=2, RC=0, PT=201, length 1 word
    0x11, 0x22, 0x33, 0x44,  // sender SSRC
    0x80, 0xcc, 0x00, 0x0a,  // APP: V=2, subtype 0, PT=204, length 10 words (44 bytes)
    0x11, 0x22, 0x33, 0x44,  // SSRC
    0x50, 0x44, 0x4a, 0x4e,  // "PDJN"
    0x02, 0x00,              // version 2, flags 0
    0x00, 0x02,              // requested rank 2
    0x00, 0x01, 0x8d, 0x8a,  // tensor elements 101 770
    0x00, 0x00, 0x00, 0x00,  // model seed (high word)
    0x00, 0x00, 0x00, 0x07,  // model seed (low word) = 7
    0x01, 0x02, 0x03, 0x04,  // job nonce (high word)
    0x05, 0x06, 0x07, 0x08,  // job nonce (low word) = 0x0102030405060708
    0xa1, 0xa2, 0xa3, 0xa4,  // worker nonce (high word)
    0xa5, 0xa6, 0xa7, 0xa8,  // worker nonce (low word) = 0xa1a2a3a4a5a6a7a8
};

TEST(DdlProtocol, JoinMatchesAnnotatedFixture) {
  ddl::ControlMessage m;
  m.sender_ssrc = 0x11223344;
  m.join = ddl::JoinRequest{2, 101770, 7, 0x0102030405060708, 0xa1a2a3a4a5a6a7a8};
  std::vector<std::uint8_t> out(256);
  auto n = ddl::write_control(out, m);
  ASSERT_TRUE(n.ok()) << n.error().message;
  out.resize(*n);
  EXPECT_EQ(out, kJoinFixture);
  auto back = ddl::parse_control(kJoinFixture);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->sender_ssrc, 0x11223344u);
  ASSERT_TRUE(back->join);
  EXPECT_EQ(*back->join, *m.join);
  EXPECT_FALSE(back->answer || back->stage_closed || back->feedback || back->bye);
}

TEST(DdlProtocol, AnswerStageClosedFeedbackAndByeRoundTrip) {
  ddl::ControlMessage m;
  m.sender_ssrc = 0xdeadbeef;
  ddl::JoinAnswer a;
  a.status = ddl::JoinStatus::kRefused;
  a.rank = ddl::kAnyRank;
  a.workers = 4;
  a.joined = 3;
  a.start_stage = 17;
  a.downlink_ssrc = 0x01020304;
  a.chunk_elements = 256;
  a.missing_fill = 1;
  a.egress_discard = true;
  a.paced = true;
  a.stage_deadline_ms = 500;
  a.job_nonce = 0x1122334455667788;
  a.worker_nonce = 0x99aabbccddeeff00;
  a.set_reason("the job is already running (stage 17)");
  m.answer = a;
  m.stage_closed = ddl::StageClosed{17, 1, 380, 3};
  wire::PdfbFeedback fb;
  fb.metric = wire::PdfbMetric::kLossDelta;
  fb.stage_id = 17;
  fb.reception_period_us = 1234;
  fb.packets_received = 396;
  fb.packets_announced = 398;
  m.feedback = fb;
  m.bye = true;
  std::vector<std::uint8_t> out(ddl::kMaxControlDatagram);
  auto n = ddl::write_control(out, m);
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(*n % 4, 0u);
  auto back = ddl::parse_control(std::span(out).first(*n));
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_TRUE(back->answer && back->stage_closed && back->feedback);
  EXPECT_EQ(*back->answer, a);
  EXPECT_EQ(back->answer->reason(), "the job is already running (stage 17)");
  EXPECT_EQ(*back->stage_closed, *m.stage_closed);
  EXPECT_EQ(*back->feedback, fb);
  EXPECT_TRUE(back->bye);

  // A truncated compound is an error, or (cut at a packet boundary) a shorter compound whose
  // messages are all whole: never a partially read message.
  for (std::size_t len = 0; len < *n; ++len) {
    auto t = ddl::parse_control(std::span(out).first(len));
    if (!t.ok()) continue;
    EXPECT_EQ(len % 4, 0u);
    if (t->answer) {
      EXPECT_EQ(*t->answer, a) << len;
    }
    if (t->stage_closed) {
      EXPECT_EQ(*t->stage_closed, *m.stage_closed) << len;
    }
    if (t->feedback) {
      EXPECT_EQ(*t->feedback, fb) << len;
    }
    EXPECT_FALSE(t->bye) << len;
  }
}

TEST(DdlProtocol, ChallengeRoundTripsAndUnknownStatusIsRejected) {
  ddl::ControlMessage m;
  m.sender_ssrc = 7;
  ddl::JoinAnswer a;
  a.status = ddl::JoinStatus::kChallenge;
  a.job_nonce = 0xfedcba9876543210;
  a.worker_nonce = 0x0123456789abcdef;
  m.answer = a;
  std::vector<std::uint8_t> out(ddl::kMaxControlDatagram);
  auto n = ddl::write_control(out, m);
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(*n, 8u + 12u + ddl::kAnswerFixedSize);
  auto back = ddl::parse_control(std::span(out).first(*n));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back->answer, a);
  EXPECT_EQ(ddl::to_string(back->answer->status), "challenge");
  out[8 + 12 + 1] = 5;  // status
  auto bad = ddl::parse_control(std::span(out).first(*n));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown status 5"), std::string::npos);
}

TEST(DdlProtocol, NoncesAreFreshAndNonZero) {
  const std::uint64_t a = ddl::generate_nonce(), b = ddl::generate_nonce();
  EXPECT_NE(a, 0u);
  EXPECT_NE(b, 0u);
  EXPECT_NE(a, b);
}

TEST(DdlProtocol, EveryReasonLengthRoundTrips) {
  for (std::size_t len : {0u, 1u, 2u, 3u, 4u, 5u, 254u, 255u, 300u}) {
    ddl::ControlMessage m;
    ddl::JoinAnswer a;
    a.status = ddl::JoinStatus::kRemoved;
    a.set_reason(std::string(len, 'x'));
    m.answer = a;
    std::vector<std::uint8_t> out(ddl::kMaxControlDatagram);
    auto n = ddl::write_control(out, m);
    ASSERT_TRUE(n.ok()) << len;
    auto back = ddl::parse_control(std::span(out).first(*n));
    ASSERT_TRUE(back.ok()) << len << ": " << back.error().message;
    EXPECT_EQ(back->answer->reason().size(), std::min<std::size_t>(len, 255));
  }
}

TEST(DdlProtocol, RejectsOtherVersionsSizesAndDuplicates) {
  auto bad = kJoinFixture;
  bad[20] = 3;  // version
  auto r = ddl::parse_control(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("version 3 (this reader knows version 2)"), std::string::npos)
      << r.error().message;

  // A version 1 PDJN (16 data bytes, no nonces) is named as such, not as a size error.
  std::vector<std::uint8_t> v1(kJoinFixture.begin(), kJoinFixture.begin() + 36);
  v1[11] = 0x06;
  v1[20] = 1;
  auto old = ddl::parse_control(v1);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().message.find("PDJN: version 1 (this reader knows version 2)"),
            std::string::npos)
      << old.error().message;

  // A PDJN with 4 bytes more data (length field adjusted) is the wrong size.
  auto longer = kJoinFixture;
  longer[11] = 0x0b;
  longer.insert(longer.end(), {0, 0, 0, 0});
  EXPECT_FALSE(ddl::parse_control(longer).ok());

  // Two PDJN in one compound.
  auto twice = kJoinFixture;
  twice.insert(twice.end(), kJoinFixture.begin() + 8, kJoinFixture.end());
  EXPECT_FALSE(ddl::parse_control(twice).ok());

  // Without the leading RR it is not a valid compound.
  EXPECT_FALSE(ddl::parse_control(std::span(kJoinFixture).subspan(8)).ok());

  // Unknown APP names are counted and ignored.
  auto other = kJoinFixture;
  other[19] = 'X';
  auto o = ddl::parse_control(other);
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_FALSE(o->join);
  EXPECT_EQ(o->unknown_app, 1u);
}

TEST(DdlProtocol, SrtcpProtectsAndAuthenticates) {
  net::SrtpLibraryGuard guard;
  const ddl::JobKey key = ddl::generate_job_key(wire::SrtpSuite::AeadAes128Gcm);
  const ddl::JobKey other = ddl::generate_job_key(wire::SrtpSuite::AeadAes128Gcm);
  net::SrtpSession out(net::SrtpDirection::Outbound, *key.suite, key.key);
  net::SrtpSession in(net::SrtpDirection::Inbound, *key.suite, key.key);
  net::SrtpSession wrong(net::SrtpDirection::Inbound, *other.suite, other.key);
  ddl::ControlMessage m;
  m.sender_ssrc = 42;
  m.stage_closed = ddl::StageClosed{3, 0, 10, 2};
  std::vector<std::uint8_t> buf(ddl::kMaxControlDatagram);
  auto n = ddl::encode_control(buf, m, &out);
  ASSERT_TRUE(n.ok()) << n.error().message;
  std::vector<std::uint8_t> copy(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
  copy.resize(ddl::kMaxControlDatagram);
  EXPECT_FALSE(ddl::decode_control(copy, *n, &wrong).ok());
  auto back = ddl::decode_control(buf, *n, &in);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back->stage_closed, *m.stage_closed);
}

TEST(DdlProtocol, JobKeyFormats) {
  const ddl::JobKey k = ddl::generate_job_key(wire::SrtpSuite::AesCm128HmacSha1_80);
  const std::string line = ddl::format_job_key(k);
  EXPECT_EQ(line.rfind("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:", 0), 0u) << line;
  auto parsed = ddl::parse_job_key(line + "\n", std::nullopt);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->suite, k.suite);
  EXPECT_EQ(parsed->key, k.key);

  // A bare base64 key takes the default suite and must have its size.
  const std::string b64 = line.substr(line.find("inline:") + 7);
  auto bare = ddl::parse_job_key(b64, wire::SrtpSuite::AesCm128HmacSha1_80);
  ASSERT_TRUE(bare.ok()) << bare.error().message;
  EXPECT_EQ(bare->key, k.key);
  auto wrong_size = ddl::parse_job_key(b64, wire::SrtpSuite::AeadAes128Gcm);
  ASSERT_FALSE(wrong_size.ok());
  EXPECT_NE(wrong_size.error().message.find("needs 28"), std::string::npos)
      << wrong_size.error().message;
  EXPECT_FALSE(ddl::parse_job_key(b64, std::nullopt).ok());
  EXPECT_FALSE(ddl::parse_job_key("not base64!", wire::SrtpSuite::AesCm128HmacSha1_80).ok());

  auto none = ddl::parse_job_key("none", std::nullopt);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->suite);
  EXPECT_EQ(ddl::format_job_key(*none), "none");
}

}  // namespace
}  // namespace predrop

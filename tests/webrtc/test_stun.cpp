// STUN parser and writer against RFC 5769's vectors, and hostile variants of them.
#include "predrop/webrtc/stun.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "rfc5769.hpp"

namespace predrop::webrtc {
namespace {

using test::kRfc5769Password;
using test::kRfc5769Request;
using test::kRfc5769Response;

TEST(Stun, ParsesTheRfc5769SampleRequest) {
  StunError why = StunError::TooShort;
  const auto m = parse_stun(kRfc5769Request, &why);
  ASSERT_TRUE(m.has_value()) << to_string(why);
  EXPECT_EQ(why, StunError::None);
  EXPECT_EQ(m->message_class, StunClass::Request);
  EXPECT_EQ(m->method, kStunBinding);
  EXPECT_EQ(m->username, "evtj:h6vY");
  EXPECT_EQ(m->priority, 0x6e0001ffU);
  EXPECT_EQ(m->ice_controlled, 0x932ff9b151263b36ULL);
  EXPECT_FALSE(m->ice_controlling.has_value());
  EXPECT_FALSE(m->use_candidate);
  EXPECT_EQ(m->integrity_offset, 76U);
  EXPECT_TRUE(m->has_fingerprint);
  EXPECT_TRUE(verify_stun_integrity(kRfc5769Request, *m, kRfc5769Password));
  EXPECT_FALSE(verify_stun_integrity(kRfc5769Request, *m, "VOkJxbRl1RmTxUk/WvJxBT"));
}

TEST(Stun, ParsesTheRfc5769SampleIpv4Response) {
  const auto m = parse_stun(kRfc5769Response);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->message_class, StunClass::SuccessResponse);
  ASSERT_TRUE(m->xor_mapped.has_value());
  EXPECT_EQ(*m->xor_mapped, net::SocketAddress::v4({192, 0, 2, 1}, 32853));
  EXPECT_TRUE(verify_stun_integrity(kRfc5769Response, *m, kRfc5769Password));
}

TEST(Stun, WritesTheRfc5769SampleIpv4ResponseByteForByte) {
  std::array<std::uint8_t, 128> out{};
  const auto parsed = parse_stun(kRfc5769Response);
  ASSERT_TRUE(parsed.has_value());
  StunWriter w(out, StunClass::SuccessResponse, kStunBinding, parsed->transaction_id);
  w.add_text(StunAttr::Software, "test vector");
  out[20 + 4 + 11] = 0x20;  // The RFC pads SOFTWARE with a space where the writer puts a zero.
  w.add_xor_mapped_address(net::SocketAddress::v4({192, 0, 2, 1}, 32853));
  w.add_message_integrity(kRfc5769Password);
  w.add_fingerprint();
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w.size(), kRfc5769Response.size());
  EXPECT_TRUE(std::equal(kRfc5769Response.begin(), kRfc5769Response.end(), out.begin()));
}

TEST(Stun, Crc32IsZlibs) {
  const std::string text = "123456789";
  const std::vector<std::uint8_t> bytes(text.begin(), text.end());
  EXPECT_EQ(crc32(bytes), 0xCBF43926U);  // The CRC-32/ISO-HDLC check value.
}

TEST(Stun, RefusesAFlippedBitUnderTheFingerprint) {
  auto bad = kRfc5769Request;
  bad[30] ^= 0x01;  // Inside SOFTWARE.
  StunError why = StunError::None;
  EXPECT_FALSE(parse_stun(bad, &why).has_value());
  EXPECT_EQ(why, StunError::BadFingerprint);
}

TEST(Stun, IntegrityFailsWhenACoveredByteChanges) {
  // Without FINGERPRINT (cut off, length fixed) the parser accepts it; integrity must not.
  std::vector<std::uint8_t> cut(kRfc5769Request.begin(), kRfc5769Request.end() - 8);
  cut[3] = 0x50;
  cut[45] ^= 0x01;  // PRIORITY.
  const auto m = parse_stun(cut);
  ASSERT_TRUE(m.has_value());
  EXPECT_FALSE(m->has_fingerprint);
  EXPECT_FALSE(verify_stun_integrity(cut, *m, kRfc5769Password));
}

TEST(Stun, RefusesTruncatedAndMisframedMessages) {
  StunError why = StunError::None;
  EXPECT_FALSE(parse_stun(std::span(kRfc5769Request).first(19), &why));
  EXPECT_EQ(why, StunError::TooShort);
  EXPECT_FALSE(parse_stun(std::span(kRfc5769Request).first(100), &why));
  EXPECT_EQ(why, StunError::BadLength);
  auto no_cookie = kRfc5769Request;
  no_cookie[4] = 0;
  EXPECT_FALSE(parse_stun(no_cookie, &why));
  EXPECT_EQ(why, StunError::NotStun);
  auto long_attr = kRfc5769Request;
  long_attr[23] = 0xF0;  // SOFTWARE claims 240 bytes.
  EXPECT_FALSE(parse_stun(long_attr, &why));
  EXPECT_EQ(why, StunError::BadAttribute);
}

TEST(Stun, RoundTripsAnIceCheckWithIpv6Address) {
  const StunTransactionId id{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::array<std::uint8_t, 256> out{};
  StunWriter w(out, StunClass::Request, kStunBinding, id);
  w.add_text(StunAttr::Username, "abcd:efgh");
  w.add_u32(StunAttr::Priority, 1853824767);
  w.add_u64(StunAttr::IceControlling, 0x1122334455667788ULL);
  w.add_flag(StunAttr::UseCandidate);
  std::array<std::uint8_t, 16> v6{0x20, 0x01, 0x0d, 0xb8};
  v6[15] = 1;
  w.add_xor_mapped_address(net::SocketAddress::v6(v6, 5000));
  w.add_message_integrity("password-password-pass");
  w.add_fingerprint();
  ASSERT_TRUE(w.ok());
  const auto m = parse_stun(std::span(out).first(w.size()));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->transaction_id, id);
  EXPECT_EQ(m->username, "abcd:efgh");
  EXPECT_EQ(m->priority, 1853824767U);
  EXPECT_EQ(m->ice_controlling, 0x1122334455667788ULL);
  EXPECT_TRUE(m->use_candidate);
  EXPECT_EQ(m->xor_mapped, net::SocketAddress::v6(v6, 5000));
  EXPECT_TRUE(verify_stun_integrity(std::span(out).first(w.size()), *m, "password-password-pass"));
}

TEST(Stun, WriterFailsCleanlyWhenOutOfRoom) {
  std::array<std::uint8_t, 30> out{};
  StunWriter w(out, StunClass::Request, kStunBinding, StunTransactionId{});
  w.add_text(StunAttr::Username, "a-username-longer-than-the-room");
  w.add_fingerprint();
  EXPECT_FALSE(w.ok());
  EXPECT_EQ(w.size(), 0U);
}

}  // namespace
}  // namespace predrop::webrtc

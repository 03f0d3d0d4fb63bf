// The ICE-lite responder with a fake clock: valid checks answered and nominated, forged ones
// dropped and counted, consent kept by checks and lost without them.
#include "predrop/webrtc/ice_lite.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "predrop/webrtc/stun.hpp"

namespace predrop::webrtc {
namespace {

const IceCredentials kServer{"srvufrag", "server-password-0123456789"};
const net::SocketAddress kBrowser = net::SocketAddress::v4({10, 0, 0, 7}, 50123);

// A browser's check: USERNAME "<server ufrag>:<browser ufrag>", keyed with `pwd`.
std::vector<std::uint8_t> check(std::string_view pwd, bool use_candidate,
                                std::string_view username = "srvufrag:brw1") {
  std::array<std::uint8_t, 256> out{};
  StunWriter w(out, StunClass::Request, kStunBinding,
               StunTransactionId{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2});
  w.add_text(StunAttr::Username, username);
  w.add_u32(StunAttr::Priority, 0x6e0001ff);
  w.add_u64(StunAttr::IceControlling, 42);
  if (use_candidate) w.add_flag(StunAttr::UseCandidate);
  w.add_message_integrity(pwd);
  w.add_fingerprint();
  return {out.begin(), out.begin() + static_cast<std::ptrdiff_t>(w.size())};
}

TEST(IceLite, AnswersAValidCheckWithItsMappedAddressSignedWithOurPassword) {
  IceLiteAgent agent(kServer, "brw1");
  std::array<std::uint8_t, 256> resp{};
  std::size_t n = 0;
  EXPECT_EQ(agent.on_stun(1000, kBrowser, check(kServer.pwd, false), resp, n), IceVerdict::Respond);
  const auto m = parse_stun(std::span(resp).first(n));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->message_class, StunClass::SuccessResponse);
  EXPECT_EQ(m->transaction_id, (StunTransactionId{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2}));
  EXPECT_EQ(m->xor_mapped, kBrowser);
  EXPECT_TRUE(m->has_fingerprint);
  EXPECT_TRUE(verify_stun_integrity(std::span(resp).first(n), *m, kServer.pwd));
  EXPECT_FALSE(agent.selected().has_value());  // Not nominated yet.
  EXPECT_TRUE(agent.is_verified(kBrowser));
}

TEST(IceLite, UseCandidateSelectsTheAddressAndStartsConsent) {
  IceLiteAgent agent(kServer, "brw1");
  std::array<std::uint8_t, 256> resp{};
  std::size_t n = 0;
  ASSERT_EQ(agent.on_stun(1'000'000, kBrowser, check(kServer.pwd, true), resp, n),
            IceVerdict::Respond);
  EXPECT_EQ(agent.selected(), kBrowser);
  EXPECT_EQ(agent.stats().nominations, 1U);
  EXPECT_TRUE(agent.consent_fresh(31'000'000));
  EXPECT_FALSE(agent.consent_fresh(31'000'001));
  EXPECT_TRUE(agent.consent_expired(31'000'001));
  // A consent check (no USE-CANDIDATE) refreshes it.
  ASSERT_EQ(agent.on_stun(20'000'000, kBrowser, check(kServer.pwd, false), resp, n),
            IceVerdict::Respond);
  EXPECT_TRUE(agent.consent_fresh(45'000'000));
}

TEST(IceLite, ForgedIntegrityIsDroppedUnansweredAndCounted) {
  IceLiteAgent agent(kServer, "brw1");
  std::array<std::uint8_t, 256> resp{};
  std::size_t n = 7;
  EXPECT_EQ(agent.on_stun(1, kBrowser, check("guessed-password-xxxxxxx", true), resp, n),
            IceVerdict::BadIntegrity);
  EXPECT_EQ(n, 0U);
  EXPECT_EQ(agent.stats().bad_integrity, 1U);
  EXPECT_FALSE(agent.selected().has_value());
  EXPECT_FALSE(agent.is_verified(kBrowser));
}

TEST(IceLite, AnotherSessionsUfragIsDropped) {
  IceLiteAgent agent(kServer, "brw1");
  std::array<std::uint8_t, 256> resp{};
  std::size_t n = 0;
  EXPECT_EQ(agent.on_stun(1, kBrowser, check(kServer.pwd, true, "otherufr:brw1"), resp, n),
            IceVerdict::BadUsername);
  EXPECT_EQ(agent.on_stun(1, kBrowser, check(kServer.pwd, true, "srvufrag:brw2"), resp, n),
            IceVerdict::BadUsername);
  EXPECT_EQ(agent.on_stun(1, kBrowser, check(kServer.pwd, true, "srvufrag"), resp, n),
            IceVerdict::BadUsername);
  EXPECT_EQ(agent.stats().bad_username, 3U);
}

TEST(IceLite, GarbageIsMalformedAndResponsesAreIgnored) {
  IceLiteAgent agent(kServer, "");
  std::array<std::uint8_t, 256> resp{};
  std::size_t n = 0;
  const std::array<std::uint8_t, 4> junk{0, 1, 0, 0};
  EXPECT_EQ(agent.on_stun(1, kBrowser, junk, resp, n), IceVerdict::Malformed);
  std::array<std::uint8_t, 64> out{};
  StunWriter w(out, StunClass::SuccessResponse, kStunBinding, StunTransactionId{});
  w.add_fingerprint();
  EXPECT_EQ(agent.on_stun(1, kBrowser, std::span(out).first(w.size()), resp, n),
            IceVerdict::NotRequest);
}

TEST(IceLite, NominationMovesWithANewUseCandidate) {
  IceLiteAgent agent(kServer, "");
  std::array<std::uint8_t, 256> resp{};
  std::size_t n = 0;
  const auto other = kBrowser.with_port(50124);
  ASSERT_EQ(agent.on_stun(1, kBrowser, check(kServer.pwd, true), resp, n), IceVerdict::Respond);
  ASSERT_EQ(agent.on_stun(2, other, check(kServer.pwd, true), resp, n), IceVerdict::Respond);
  EXPECT_EQ(agent.selected(), other);
  EXPECT_EQ(agent.stats().nominations, 2U);
}

TEST(IceLite, RandomCredentialsAreLongEnoughAndDiffer) {
  const auto a = random_ice_credentials();
  const auto b = random_ice_credentials();
  EXPECT_GE(a.ufrag.size(), 4U);
  EXPECT_GE(a.pwd.size(), 22U);
  EXPECT_NE(a.pwd, b.pwd);
}

}  // namespace
}  // namespace predrop::webrtc

// libsrtp's crypto backend is initialised for speed (issue 14 item 1): Debian's libsrtp uses NSS
// and initialises it with NSS_INIT_OPTIMIZESPACE, whose small hash tables made protect() slow
// down as sessions were added. The first SrtpLibraryGuard of the process initialises NSS first,
// without that flag. Its own process: nothing else may have touched NSS before.
#include <gtest/gtest.h>

#include <vector>

#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::net {
namespace {

TEST(SrtpCryptoTables, FirstGuardInitialisesTheBackendForSpeed) {
  const SrtpLibraryGuard guard;
  EXPECT_TRUE(srtp_crypto_tables_for_speed());
  // Sessions made afterwards (libsrtp initialises NSS again per cipher) still work and the
  // setting holds.
  const auto key = net::random_srtp_key(wire::SrtpSuite::AesCm128HmacSha1_80);
  SrtpSession tx(SrtpDirection::Outbound, wire::SrtpSuite::AesCm128HmacSha1_80, key.span());
  SrtpSession rx(SrtpDirection::Inbound, wire::SrtpSuite::AesCm128HmacSha1_80, key.span());
  std::vector<std::uint8_t> packet(12 + 100 + kSrtpMaxTrailer, 0);
  packet[0] = 0x80;
  packet[1] = 96;
  packet[11] = 7;  // SSRC
  auto p = tx.protect_rtp(packet, 112);
  ASSERT_EQ(p.error, SrtpError::None);
  auto u = rx.unprotect_rtp(packet, p.length);
  EXPECT_EQ(u.error, SrtpError::None);
  EXPECT_EQ(u.length, 112u);
  EXPECT_TRUE(srtp_crypto_tables_for_speed());
}

}  // namespace
}  // namespace predrop::net

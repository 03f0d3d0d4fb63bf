// Which sessions the server couples (server/coupling_groups.hpp): by the clients' address
// prefix, one group object per prefix while it has sessions, none for a family left off.
#include <gtest/gtest.h>

#include <memory>

#include "predrop/server/coupling_groups.hpp"

namespace predrop::server {
namespace {

net::SocketAddress ip(const char* text) {
  auto a = net::SocketAddress::from_ip(text, 5000);
  EXPECT_TRUE(a.ok());
  return a.ok() ? *a : net::SocketAddress{};
}

TEST(CouplingGroups, ThePrefixIsTheAddressWithTheHostBitsCleared) {
  const CouplingGroups g(24, 56);
  EXPECT_EQ(g.prefix_of(ip("198.18.1.77")), "198.18.1.0/24");
  EXPECT_EQ(g.prefix_of(ip("2001:db8:aa:bbcc::1")), "2001:db8:aa:bb00::/56");
  const CouplingGroups odd(21, 0);
  EXPECT_EQ(odd.prefix_of(ip("10.1.15.3")), "10.1.8.0/21");
  EXPECT_EQ(odd.prefix_of(ip("::1")), "");  // IPv6 not coupled
  const CouplingGroups whole(32, 128);
  EXPECT_EQ(whole.prefix_of(ip("127.0.0.1")), "127.0.0.1/32");
}

TEST(CouplingGroups, OneGroupPerPrefixWhileItHasSessions) {
  CouplingGroups g(24, 0);
  auto a = g.group_for(ip("198.18.1.2"));
  auto b = g.group_for(ip("198.18.1.3"));
  auto c = g.group_for(ip("198.18.2.2"));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(g.group_for(ip("::1")), nullptr);
  // Once every session of a prefix has ended, the registry holds the group no longer (the old
  // object is gone) and the next session starts a fresh group, without the old one's member.
  // Comparing addresses would not tell: the fresh group may be allocated where the old one was.
  const std::weak_ptr<core::SharedBottleneck> old = a;
  const auto member = a->join();
  (void)a->update(member, 1.0);
  ASSERT_EQ(a->limited(), 1U);
  a.reset();
  b.reset();
  EXPECT_TRUE(old.expired());
  auto fresh = g.group_for(ip("198.18.1.9"));
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(fresh->limited(), 0U);
}

}  // namespace
}  // namespace predrop::server

// detail::SessionTable (server/src/session_table.hpp): numbers unique across workers, ids
// random and unused, RTCP sources found by address once indexed, expiry verdicts (push sessions
// never expire), and detail::fresh_ssrc distinct within a session.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "session_table.hpp"

namespace predrop {
namespace {

using server::detail::SessionEntry;
using server::detail::SessionTable;

constexpr std::uint64_t kS = 1'000'000;

std::unique_ptr<SessionEntry> entry(const SessionTable& t, std::uint64_t last_request_us) {
  auto e = std::make_unique<SessionEntry>();
  e->id = t.fresh_id();
  e->last_request_us = last_request_us;
  return e;
}

TEST(SessionTable, NumbersAreUniqueAcrossWorkers) {
  SessionTable w1(1, 3);
  EXPECT_EQ(w1.add(entry(w1, 1)).number, 2u);
  EXPECT_EQ(w1.add(entry(w1, 1)).number, 5u);
  EXPECT_EQ(w1.add(entry(w1, 1)).number, 8u);
}

TEST(SessionTable, IdsAre128RandomBits) {
  SessionTable t(0, 1);
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i)
    ids.insert(t.add(entry(t, 1)).id);
  EXPECT_EQ(ids.size(), 100u);
  EXPECT_EQ(ids.begin()->size(), 32u);
}

TEST(SessionTable, RtcpSourcesAreFoundOnceIndexed) {
  SessionTable t(0, 1);
  SessionEntry& e = t.add(entry(t, 1));
  server::SessionTrack udp;
  udp.rtp_destination = net::SocketAddress::from_ip("127.0.0.1", 5000).value();
  udp.rtcp_destination = net::SocketAddress::from_ip("127.0.0.1", 5001).value();
  server::SessionTrack tcp;
  tcp.rtp_destination = net::SocketAddress::from_ip("127.0.0.1", 6000).value();
  tcp.interleaved = server::InterleavedChannels{0, 1};
  e.tracks = {udp, tcp};
  EXPECT_EQ(t.by_address(*udp.rtcp_destination), nullptr);
  t.index_addresses(e);
  EXPECT_EQ(t.by_address(*udp.rtcp_destination), &e);
  EXPECT_EQ(t.by_address(udp.rtp_destination), &e);
  EXPECT_EQ(t.by_address(tcp.rtp_destination), nullptr) << "interleaved RTCP comes on its channel";
  const std::string id = e.id;
  EXPECT_NE(t.remove(id), nullptr);
  EXPECT_EQ(t.by_address(*udp.rtcp_destination), nullptr);
  EXPECT_EQ(t.remove(id), nullptr);
}

TEST(SessionTable, SessionsExpireAfterTheirLastRequest) {
  SessionTable t(0, 1);
  const std::string quiet = t.add(entry(t, 10 * kS)).id;
  (void)t.add(entry(t, 50 * kS));
  // A push session: never asked for (no request), started, no client to hear from.
  (void)t.add(entry(t, 0));
  EXPECT_TRUE(t.expired(70 * kS, 60 * kS).empty());
  EXPECT_EQ(t.expired(70 * kS + 1, 60 * kS), std::vector<std::string>{quiet});
  EXPECT_EQ(t.expired(1000 * kS, 60 * kS).size(), 2u);
}

TEST(SessionTable, SsrcsAreDistinctWithinASession) {
  SessionEntry e;
  for (int i = 0; i < 50; ++i) {
    server::SessionTrack t;
    t.ssrc = server::detail::fresh_ssrc(e);
    for (const auto& other : e.tracks)
      ASSERT_NE(other.ssrc, t.ssrc);
    e.tracks.push_back(t);
  }
}

}  // namespace
}  // namespace predrop

// detail::open_port_pair (server/src/port_pair.hpp): an even RTP port and the next one for
// RTCP, free ones by default, the configured pair when given, an error when that is taken.
#include <gtest/gtest.h>

#include <stdexcept>

#include "port_pair.hpp"

namespace predrop {
namespace {

void ignore(std::span<const std::uint8_t>, const net::SocketAddress&, std::uint64_t) {}

TEST(PortPair, AFreeEvenPair) {
  net::EventLoop loop;
  auto pair = server::detail::open_port_pair(loop, "127.0.0.1", 0, ignore, ignore);
  ASSERT_TRUE(pair.rtp && pair.rtcp);
  const auto rtp = pair.rtp->local_address().port();
  EXPECT_EQ(rtp % 2, 0);
  EXPECT_EQ(pair.rtcp->local_address().port(), rtp + 1);
}

TEST(PortPair, TheConfiguredPairOrAnError) {
  net::EventLoop loop;
  auto first = server::detail::open_port_pair(loop, "127.0.0.1", 0, ignore, ignore);
  const auto port = first.rtp->local_address().port();
  first.rtp.reset();
  first.rtcp.reset();
  loop.run_nowait();
  auto again = server::detail::open_port_pair(loop, "127.0.0.1", port, ignore, ignore);
  EXPECT_EQ(again.rtp->local_address().port(), port);
  EXPECT_THROW(server::detail::open_port_pair(loop, "127.0.0.1", port, ignore, ignore),
               std::runtime_error);
  EXPECT_THROW(server::detail::open_port_pair(loop, "not an address", 0, ignore, ignore),
               std::runtime_error);
}

}  // namespace
}  // namespace predrop

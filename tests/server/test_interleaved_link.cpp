// detail::InterleavedLink (server/src/interleaved_link.hpp): channel choice on one RTSP
// connection (the client's pair when free, else the lowest free even pair, none when all are
// taken), the RTCP channel -> session map, and channels freed with their session.
#include <gtest/gtest.h>

#include <string>

#include "interleaved_link.hpp"

namespace predrop {
namespace {

using server::InterleavedChannels;
using server::detail::InterleavedLink;

rtsp::TransportSpec offer(std::uint8_t rtp, std::uint8_t rtcp) {
  rtsp::TransportSpec s;
  s.lower = rtsp::LowerTransport::kTcp;
  s.interleaved = rtsp::ChannelPair{rtp, rtcp};
  return s;
}

struct Link {
  std::string output;
  std::uint64_t frames = 0, dropped = 0;
  InterleavedLink link{nullptr, &output, 4096, frames, dropped};
};

TEST(InterleavedLink, TheClientsChannelsWhenFree) {
  auto c = InterleavedLink::choose(nullptr, offer(4, 5));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->rtp, 4);
  EXPECT_EQ(c->rtcp, 5);
  rtsp::TransportSpec none;
  none.lower = rtsp::LowerTransport::kTcp;
  c = InterleavedLink::choose(nullptr, none);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->rtp, 0);
}

TEST(InterleavedLink, ElseTheLowestFreeEvenPair) {
  Link l;
  l.link.reserve(InterleavedChannels{0, 1}, "a");
  l.link.reserve(InterleavedChannels{3, 4}, "b");
  auto c = InterleavedLink::choose(&l.link, offer(0, 1));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->rtp, 6) << "2-3 is half taken";
  EXPECT_EQ(c->rtcp, 7);
}

TEST(InterleavedLink, NoneWhenAllAreTaken) {
  Link l;
  for (unsigned ch = 0; ch < 254; ch += 2) {
    l.link.reserve(
        InterleavedChannels{static_cast<std::uint8_t>(ch), static_cast<std::uint8_t>(ch + 1)}, "s");
  }
  EXPECT_FALSE(InterleavedLink::choose(&l.link, offer(0, 1)));
}

TEST(InterleavedLink, RtcpChannelsFindTheirSessionUntilReleased) {
  Link l;
  l.link.reserve(InterleavedChannels{2, 3}, "s1");
  ASSERT_NE(l.link.session_for(3), nullptr);
  EXPECT_EQ(*l.link.session_for(3), "s1");
  EXPECT_EQ(l.link.session_for(2), nullptr) << "RTP is not read back";
  server::SessionTrack t;
  t.interleaved = InterleavedChannels{2, 3};
  l.link.release({t});
  EXPECT_EQ(l.link.session_for(3), nullptr);
  auto c = InterleavedLink::choose(&l.link, offer(2, 3));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->rtp, 2);
}

}  // namespace
}  // namespace predrop

// The egress seam (predrop/server/session_transport.hpp): a UDP transport sends RTCP from the
// server's RTCP socket to each track's client port and leaves RTP to the transmitter's socket; an
// interleaved transport writes RTP and RTCP as frames on each track's channels, and counts what
// its connection's full queue refused. Real loopback sockets for UDP; a queue of the test's own
// for interleaved.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "predrop/net/event_loop.hpp"
#include "predrop/server/session_transport.hpp"

namespace predrop {
namespace {

struct Sockets {
  net::EventLoop loop;
  std::vector<std::string> received;
  std::unique_ptr<net::UdpEndpoint> rtp, rtcp, client;
  Sockets() {
    auto open = [&](bool keep) {
      return std::move(
          net::UdpEndpoint::open(loop, net::SocketAddress::loopback_v4(0), {},
                                 [this, keep](std::span<const std::uint8_t> d, const auto&, auto) {
                                   if (keep) received.emplace_back(d.begin(), d.end());
                                 })
              .value());
    };
    rtp = open(false);
    rtcp = open(false);
    client = open(true);
  }
};

// Frames as an RTSP connection's queue would take them, up to `room` frames.
struct Queue final : server::InterleavedOutput {
  std::size_t room = 100;
  std::vector<std::pair<std::uint8_t, std::string>> frames;
  bool write_frame(std::uint8_t channel, std::span<const std::uint8_t> data) override {
    if (frames.size() >= room) return false;
    frames.emplace_back(channel, std::string(data.begin(), data.end()));
    return true;
  }
  std::size_t queued_bytes() const override { return 0; }
};

std::span<const std::uint8_t> bytes(const char* text) {
  return {reinterpret_cast<const std::uint8_t*>(text), std::char_traits<char>::length(text)};
}

TEST(SessionTransport, UdpSendsRtcpToEachTracksClientPort) {
  Sockets s;
  server::UdpTransport t(*s.rtp, *s.rtcp, {s.client->local_address(), std::nullopt});
  EXPECT_EQ(&t.rtp_socket(), s.rtp.get());
  EXPECT_EQ(t.media_sink(), nullptr) << "RTP goes on the socket, in the shared batch";
  EXPECT_TRUE(t.has_rtcp(0));
  EXPECT_FALSE(t.has_rtcp(1)) << "a track without an RTCP port gets no SR";
  EXPECT_FALSE(t.has_rtcp(2));
  EXPECT_TRUE(t.send_rtcp(0, bytes("sr")));
  EXPECT_FALSE(t.send_rtcp(1, bytes("sr")));
  for (int i = 0; i < 100 && s.received.empty(); ++i)
    s.loop.run_once();
  ASSERT_EQ(s.received.size(), 1u);
  EXPECT_EQ(s.received[0], "sr");
  EXPECT_EQ(t.drops(), 0u);
}

TEST(SessionTransport, InterleavedWritesFramesOnEachTracksChannels) {
  Sockets s;
  Queue q;
  server::InterleavedTransport t(*s.rtp, q, {{0, 1}, {2, 3}});
  ASSERT_NE(t.media_sink(), nullptr);
  EXPECT_TRUE(t.has_rtcp(1));
  EXPECT_TRUE(t.send_rtcp(1, bytes("sr")));
  std::array<std::uint8_t, 4> a{1, 2, 3, 4}, b{5, 6};
  const std::array<net::OutDatagram, 2> batch{net::OutDatagram{a.data(), a.size(), nullptr},
                                              net::OutDatagram{b.data(), b.size(), nullptr}};
  const std::array<std::uint8_t, 2> tracks{0, 1};
  EXPECT_EQ(t.media_sink()->send_batch(batch, tracks), 2u);
  ASSERT_EQ(q.frames.size(), 3u);
  EXPECT_EQ(q.frames[0].first, 3) << "track 1's RTCP channel";
  EXPECT_EQ(q.frames[1].first, 0);
  EXPECT_EQ(q.frames[1].second, std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(q.frames[2].first, 2);
}

TEST(SessionTransport, AFullQueueDropsAndCounts) {
  Sockets s;
  Queue q;
  q.room = 1;
  server::InterleavedTransport t(*s.rtp, q, {{0, 1}});
  std::array<std::uint8_t, 4> a{1, 2, 3, 4};
  const std::array<net::OutDatagram, 2> batch{net::OutDatagram{a.data(), a.size(), nullptr},
                                              net::OutDatagram{a.data(), a.size(), nullptr}};
  const std::array<std::uint8_t, 2> tracks{0, 0};
  EXPECT_EQ(t.media_sink()->send_batch(batch, tracks), 1u);
  EXPECT_FALSE(t.send_rtcp(0, bytes("sr")));
  EXPECT_EQ(t.drops(), 2u);
}

}  // namespace
}  // namespace predrop

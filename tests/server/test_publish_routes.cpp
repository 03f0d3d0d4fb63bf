// The publishers' routes (server/src/publish_routes.hpp): a publisher's SETUP over UDP routes its
// source address to its connection, RECORD lets its RTP in, a datagram from anyone else is a
// stray, TEARDOWN or the connection's end drops the routes and ends the stream, and a publisher
// replaced by another is told to go. Attached connections, no sockets.
#include <gtest/gtest.h>

#include <array>
#include <memory>

#include "publish_routes.hpp"

namespace predrop {
namespace {

using server::detail::MethodOutcome;
using server::detail::PublishRoutes;
using server::detail::PublishVerdict;
using server::detail::RtspConnection;

net::SocketAddress address(std::uint16_t port) {
  return net::SocketAddress::from_ip("127.0.0.1", port).value();
}

// An RTP packet of payload type 96 (the track's), sequence 1, one byte of payload.
constexpr std::array<std::uint8_t, 13> kRtp = {0x80, 0x60, 0x00, 0x01, 0, 0,   0,
                                               0,    0,    0,    0,    1, 0x65};

struct Publishing : ::testing::Test {
  server::ServerStats stats;
  PublishRoutes routes{stats};
  std::shared_ptr<server::LivePoint> point =
      std::make_shared<server::LivePoint>(server::LivePointSettings{"secret", true, {}});
  RtspConnection c;

  // ANNOUNCE: a publisher with one H.264 track that holds the point.
  std::unique_ptr<server::detail::Publisher> publisher() {
    auto p = std::make_unique<server::detail::Publisher>();
    p->point = point;
    p->token = server::LivePoint::next_token();
    p->tracks.push_back({"streamid=0", true, 96, false, std::nullopt, std::nullopt});
    p->source =
        std::make_shared<media::LiveSource>(media::LiveVideoSpec{}, point->settings().source);
    point->claim(p->token, p->source, 0);
    return p;
  }

  // ANNOUNCE, SETUP over UDP from port 5000, RECORD.
  void publish_over_udp() {
    c.id = 7;
    MethodOutcome announce;
    announce.publisher = publisher();
    routes.apply(announce, c, 0);
    MethodOutcome setup;
    setup.publish_track = MethodOutcome::PublishTrack{0, std::nullopt, address(5000)};
    routes.apply(setup, c, 0);
    MethodOutcome record;
    record.publish = MethodOutcome::Publish::kRecord;
    routes.apply(record, c, 0);
  }
};

TEST_F(Publishing, RoutesAUdpPublishersAddressToItsConnection) {
  publish_over_udp();
  ASSERT_TRUE(c.publisher);
  EXPECT_TRUE(c.publisher->recording);
  EXPECT_TRUE(c.publisher->tracks[0].set_up);
  EXPECT_EQ(routes.connection_for(address(5000)), std::optional<std::uint64_t>(7));
  EXPECT_EQ(routes.connection_for(address(5002)), std::nullopt);
}

TEST_F(Publishing, TakesThePublishersRtpAsItsSignOfLife) {
  publish_over_udp();
  EXPECT_EQ(routes.on_datagram(&c, address(5000), kRtp, 1234), PublishVerdict::kKeep);
  EXPECT_EQ(stats.publish_packets, 1u);
  EXPECT_EQ(c.last_activity_us, 1234u);
  EXPECT_EQ(routes.on_datagram(&c, address(5000), std::span(kRtp).first(4), 1300),
            PublishVerdict::kKeep);
  EXPECT_EQ(stats.publish_dropped, 1u);
  EXPECT_EQ(c.last_activity_us, 1234u);
}

// An RTCP receiver report (RFC 3550 §6.4.2) with no report blocks, as GStreamer's rtpbin goes on
// sending after its end of stream.
constexpr std::array<std::uint8_t, 8> kReceiverReport = {0x80, 0xc9, 0x00, 0x01, 1, 2, 3, 4};

TEST_F(Publishing, TakesThePublishersRtcpAsItsSignOfLife) {
  // The connection in a table with the default limits (30 s idle); the clock is the test's.
  constexpr std::uint64_t kS = 1'000'000;
  server::detail::RtspConnections table({}, stats);
  RtspConnection* p = table.admit(std::make_unique<RtspConnection>(), 0);
  ASSERT_NE(p, nullptr);
  MethodOutcome announce;
  announce.publisher = publisher();
  routes.apply(announce, *p, 0);
  MethodOutcome setup;
  setup.publish_track = MethodOutcome::PublishTrack{0, std::nullopt, address(5000)};
  routes.apply(setup, *p, 0);
  // Its media stops at 1 s (its end of stream, or a PAUSE); its RTCP (from client_port + 1)
  // goes on every 5 s until 56 s.
  EXPECT_EQ(routes.on_datagram(p, address(5000), kRtp, kS), PublishVerdict::kKeep);
  for (std::uint64_t t = 6; t <= 56; t += 5) {
    EXPECT_TRUE(routes.on_rtcp_datagram(table, address(5001), kReceiverReport, t * kS));
    table.close_overdue(t * kS);
  }
  EXPECT_EQ(p->last_activity_us, 56 * kS);
  table.close_overdue(31 * kS + 1);  // 30 s after its last RTP: alive, it reports
  EXPECT_TRUE(p->is_open());
  // A datagram from there that is no RTCP is not a sign of life; nor is RTCP from elsewhere.
  EXPECT_TRUE(routes.on_rtcp_datagram(table, address(5001), kRtp, 80 * kS));
  EXPECT_FALSE(routes.on_rtcp_datagram(table, address(6001), kReceiverReport, 80 * kS));
  EXPECT_EQ(p->last_activity_us, 56 * kS);
  table.close_overdue(86 * kS);
  EXPECT_TRUE(p->is_open());
  table.close_overdue(86 * kS + 1);  // 30 s after its last RTCP
  EXPECT_FALSE(p->is_open());
  EXPECT_EQ(stats.connections_timed_out, 1u);
  routes.forget(*p, 86 * kS + 1);
}

TEST_F(Publishing, CountsADatagramOfNoPublisherAsAStray) {
  EXPECT_EQ(routes.on_datagram(nullptr, address(9), kRtp, 0), PublishVerdict::kKeep);
  EXPECT_EQ(stats.rtp_port_datagrams, 1u);
  EXPECT_EQ(stats.publish_packets, 0u);
}

TEST_F(Publishing, TeardownDropsTheRoutesAndEndsTheStream) {
  publish_over_udp();
  MethodOutcome teardown;
  teardown.publish = MethodOutcome::Publish::kStop;
  routes.apply(teardown, c, 10);
  EXPECT_FALSE(c.publisher);
  EXPECT_EQ(routes.routes(), 0u);
  EXPECT_EQ(point->current(), nullptr);
}

TEST_F(Publishing, AConnectionThatGoesTakesItsRoutesAndStreamWithIt) {
  publish_over_udp();
  routes.forget(c, 10);
  EXPECT_EQ(routes.routes(), 0u);
  EXPECT_EQ(point->current(), nullptr);
}

TEST_F(Publishing, APublisherReplacedByAnotherIsToldToGo) {
  publish_over_udp();
  RtspConnection other;
  other.id = 8;
  MethodOutcome announce;
  announce.publisher = publisher();  // replace = true: it takes the point
  routes.apply(announce, other, 5);
  EXPECT_EQ(routes.on_datagram(&c, address(5000), kRtp, 6), PublishVerdict::kClose);
  EXPECT_EQ(stats.publishers_replaced, 1u);
  EXPECT_FALSE(c.publisher);
  ASSERT_TRUE(other.publisher);
  EXPECT_EQ(routes.on_frame(other, 0, kRtp, 7), PublishVerdict::kKeep);  // no channel: dropped
  EXPECT_EQ(stats.publish_dropped, 1u);
}

}  // namespace
}  // namespace predrop

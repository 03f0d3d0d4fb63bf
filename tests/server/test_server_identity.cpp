// Who a session belongs to (issue 10 item 4), over real loopback sockets: session ids carry 128
// random bits and SSRCs differ, only the client IP that set a session up controls it (others
// get 454, as for an unknown id), a Transport destination= never redirects media (it goes to
// the RTSP peer's address), and /metrics never shows a session id.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "predrop/net/udp_endpoint.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/server/server_setup.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

using test::request_text;
using test::session_of;

class ServerIdentity : public ::testing::Test {
 protected:
  void SetUp() override {
    srv_ = std::make_unique<server::StreamServer>(loop_, test::loopback_options());
    srv_->start();
    url_ = "rtsp://127.0.0.1:" + std::to_string(srv_->rtsp_address().port()) + "/sample";
  }
  void TearDown() override {
    srv_->stop();
    srv_.reset();
    loop_.run_nowait();
  }
  int status(const std::optional<rtsp::RtspResponse>& r) { return r ? r->status : -1; }

  // DESCRIBE and SETUP of `track` on `p`; returns the SETUP response.
  std::optional<rtsp::RtspResponse> setup(test::PosixRtspPeer& p, std::uint16_t port,
                                          std::string transport_extra = {}, int track = 0) {
    EXPECT_EQ(status(p.request(request_text("DESCRIBE", url_, cseq_++))), 200);
    return p.request(request_text("SETUP", url_ + "/trackID=" + std::to_string(track), cseq_++,
                                  "Transport: RTP/SAVP;unicast;" + transport_extra +
                                      "client_port=" + std::to_string(port) + "-" +
                                      std::to_string(port + 1) + "\r\n"));
  }

  net::EventLoop loop_;
  std::unique_ptr<server::StreamServer> srv_;
  std::string url_;
  std::uint32_t cseq_ = 1;
};

bool is_hex(const std::string& s) {
  return s.find_first_not_of("0123456789ABCDEFabcdef") == std::string::npos;
}

TEST_F(ServerIdentity, SessionIdsCarry128RandomBitsAndSsrcsDiffer) {
  std::set<std::string> ids;
  std::set<std::uint32_t> ssrcs;
  for (int i = 0; i < 8; ++i) {
    test::PosixRtspPeer p(loop_, srv_->rtsp_address());
    auto r = setup(p, static_cast<std::uint16_t>(47100 + 2 * i));
    ASSERT_EQ(status(r), 200);
    const std::string id = session_of(*r);
    EXPECT_GE(id.size(), 32u) << id << ": fewer than 128 bits";
    EXPECT_TRUE(is_hex(id)) << id;
    ids.insert(id);
    auto spec = rtsp::parse_transport(*r->headers.get("Transport"));
    ASSERT_TRUE(spec.ok());
    ssrcs.insert(*(*spec)[0].ssrc);
  }
  EXPECT_EQ(ids.size(), 8u);
  EXPECT_EQ(ssrcs.size(), 8u);
  // Ids do not share a counting prefix or suffix: consecutive sessions differ in more than a
  // few hex digits at each end (an id of a counter plus one random word would not).
  const std::string& a = *ids.begin();
  const std::string& b = *std::next(ids.begin());
  EXPECT_NE(a.substr(0, 8), b.substr(0, 8));
  EXPECT_NE(a.substr(a.size() - 8), b.substr(b.size() - 8));
}

TEST_F(ServerIdentity, OnlyTheClientIpThatSetASessionUpControlsIt) {
  test::PosixRtspPeer owner(loop_, srv_->rtsp_address(), "127.0.0.1");
  auto r = setup(owner, 47200);
  ASSERT_EQ(status(r), 200);
  const std::string session = "Session: " + session_of(*r) + "\r\n";

  // Another client on another address that learnt the id.
  test::PosixRtspPeer other(loop_, srv_->rtsp_address(), "127.0.0.2");
  ASSERT_EQ(status(other.request(request_text("DESCRIBE", url_, 1))), 200);
  EXPECT_EQ(status(other.request(request_text("PLAY", url_, 2, session))), 454);
  EXPECT_EQ(status(other.request(request_text("GET_PARAMETER", url_, 3, session))), 454);
  EXPECT_EQ(status(other.request(request_text("PAUSE", url_, 4, session))), 454);
  EXPECT_EQ(status(other.request(
                request_text("SETUP", url_ + "/trackID=1", 5,
                             session + "Transport: RTP/SAVP;unicast;client_port=47300-47301\r\n"))),
            454);
  EXPECT_EQ(status(other.request(request_text("TEARDOWN", url_, 6, session))), 454);
  EXPECT_EQ(srv_->session_count(), 1u) << "a foreign TEARDOWN ended the session";
  EXPECT_TRUE(srv_->sessions().empty()) << "a foreign PLAY started the session";
  EXPECT_EQ(srv_->stats().session_requests_foreign, 5u);

  // The owner may come back on a new connection from the same address (players reconnect).
  owner.close();
  test::PosixRtspPeer again(loop_, srv_->rtsp_address(), "127.0.0.1");
  EXPECT_EQ(status(again.request(request_text("PLAY", url_, 7, session))), 200);
  EXPECT_EQ(status(again.request(request_text("TEARDOWN", url_, 8, session))), 200);
  EXPECT_EQ(srv_->session_count(), 0u);
}

TEST_F(ServerIdentity, TransportDestinationNeverRedirectsMedia) {
  // The client's own port, and a socket on another address with the same port, where a server
  // that honoured destination= would send.
  std::size_t to_peer = 0, to_destination = 0;
  auto mine = net::UdpEndpoint::open(loop_, net::SocketAddress::loopback_v4(0), {},
                                     [&](auto, const auto&, auto) { ++to_peer; });
  ASSERT_TRUE(mine.ok());
  const std::uint16_t port = (*mine)->local_address().port();
  auto elsewhere = net::UdpEndpoint::open(loop_, net::SocketAddress::v4({127, 0, 0, 3}, port), {},
                                          [&](auto, const auto&, auto) { ++to_destination; });
  ASSERT_TRUE(elsewhere.ok());

  test::PosixRtspPeer p(loop_, srv_->rtsp_address());
  auto r = setup(p, port, "destination=127.0.0.3;");
  ASSERT_EQ(status(r), 200);
  EXPECT_EQ(r->headers.get("Transport")->find("destination"), std::string_view::npos);
  ASSERT_EQ(
      status(p.request(request_text("PLAY", url_, cseq_++, "Session: " + session_of(*r) + "\r\n"))),
      200);
  ASSERT_EQ(srv_->sessions().size(), 1u);
  const auto& track = srv_->sessions()[0]->config().tracks.at(0);
  EXPECT_EQ(track.rtp_destination, net::SocketAddress::loopback_v4(port));
  EXPECT_EQ(track.rtcp_destination, net::SocketAddress::loopback_v4(port + 1));
  // Media flows to the peer's address; once 20 packets are in, none went to the destination.
  EXPECT_TRUE(test::pump_until(loop_, [&] { return to_peer >= 20 || to_destination > 0; }));
  EXPECT_GE(to_peer, 20u);
  EXPECT_EQ(to_destination, 0u);
}

TEST_F(ServerIdentity, MetricsNeverShowSessionIds) {
  test::PosixRtspPeer p(loop_, srv_->rtsp_address());
  auto r = setup(p, 47400);
  ASSERT_EQ(status(r), 200);
  const std::string id = session_of(*r);
  ASSERT_EQ(status(p.request(request_text("PLAY", url_, cseq_++, "Session: " + id + "\r\n"))), 200);
  const std::string metrics = server::render_metrics(*srv_);
  EXPECT_NE(metrics.find("predrop_session_rate{session=\"1\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("predrop_session_rmax{session=\"1\""), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find(id), std::string::npos) << "the id is in /metrics:\n" << metrics;
}

}  // namespace
}  // namespace predrop

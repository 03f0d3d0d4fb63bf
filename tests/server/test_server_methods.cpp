// Every RTSP method the stream server answers, on one real loopback connection, with the status
// and headers a player relies on: the contract StreamServer::handle() and its per-method
// handlers (handle_options .. handle_get_parameter) keep. Also the error answers of each method
// (400, 404, 405, 454, 455, 459, 461, 501).
#include <gtest/gtest.h>

#include <string>

#include "predrop/rtsp/rtsp_headers.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

using test::request_text;
using test::session_of;

class ServerMethods : public ::testing::Test {
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

  net::EventLoop loop_;
  std::unique_ptr<server::StreamServer> srv_;
  std::string url_;
};

TEST_F(ServerMethods, EveryMethodOfAPlayerSession) {
  test::PosixRtspPeer p(loop_, srv_->rtsp_address());
  auto options = p.request(request_text("OPTIONS", url_, 1));
  ASSERT_EQ(status(options), 200);
  EXPECT_EQ(options->headers.get("Public"),
            "OPTIONS, DESCRIBE, SETUP, PLAY, PAUSE, TEARDOWN, GET_PARAMETER, ANNOUNCE, RECORD");
  EXPECT_EQ(options->headers.get("Server"), "predrop");
  EXPECT_EQ(options->cseq(), 1u);

  auto describe = p.request(request_text("DESCRIBE", url_, 2));
  ASSERT_EQ(status(describe), 200);
  EXPECT_EQ(describe->headers.get("Content-Base"), url_ + "/");
  EXPECT_EQ(describe->headers.get("Content-Type"), "application/sdp");
  auto sdp = rtsp::parse_sdp(describe->body);
  ASSERT_TRUE(sdp.ok());
  ASSERT_EQ(sdp->media.size(), 2u);
  EXPECT_EQ(sdp->media[0].crypto.size(), 1u);

  auto setup = p.request(request_text("SETUP", url_ + "/trackID=0", 3,
                                      "Transport: RTP/SAVP;unicast;client_port=47010-47011\r\n"
                                      "X-Predrop-Feedback: 1\r\n"));
  ASSERT_EQ(status(setup), 200);
  const std::string id = session_of(*setup);
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(setup->headers.get("Session"), id + ";timeout=60");
  auto spec = rtsp::parse_transport(*setup->headers.get("Transport"));
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ((*spec)[0].client_port->rtp, 47010);
  EXPECT_EQ((*spec)[0].server_port->rtp, srv_->rtp_port());
  EXPECT_EQ((*spec)[0].server_port->rtcp, srv_->rtp_port() + 1);
  EXPECT_TRUE((*spec)[0].ssrc.has_value());

  const std::string session = "Session: " + id + "\r\n";
  auto setup_audio =
      p.request(request_text("SETUP", url_ + "/trackID=1", 4,
                             session + "Transport: RTP/SAVP;unicast;client_port=47012-47013\r\n"));
  ASSERT_EQ(status(setup_audio), 200);
  EXPECT_EQ(session_of(*setup_audio), id);
  EXPECT_EQ(status(p.request(
                request_text("SETUP", url_ + "/trackID=1", 5,
                             session + "Transport: RTP/SAVP;unicast;client_port=47014-47015\r\n"))),
            459)
      << "a track set up twice";

  auto play = p.request(request_text("PLAY", url_, 6, session));
  ASSERT_EQ(status(play), 200);
  EXPECT_EQ(play->headers.get("Range"), "npt=0.000-");
  auto info = rtsp::parse_rtp_info(*play->headers.get("RTP-Info"));
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->size(), 2u);
  EXPECT_EQ((*info)[0].url, url_ + "/trackID=0");
  EXPECT_EQ((*info)[1].url, url_ + "/trackID=1");
  EXPECT_EQ(srv_->sessions().size(), 1u);
  EXPECT_TRUE(srv_->sessions()[0]->playing());

  EXPECT_EQ(status(p.request(
                request_text("SETUP", url_ + "/trackID=0", 7,
                             session + "Transport: RTP/SAVP;unicast;client_port=47016-47017\r\n"))),
            455)
      << "SETUP after PLAY";

  auto ping = p.request(request_text("GET_PARAMETER", url_, 8, session));
  ASSERT_EQ(status(ping), 200);
  EXPECT_EQ(session_of(*ping), id);

  auto pause = p.request(request_text("PAUSE", url_, 9, session));
  ASSERT_EQ(status(pause), 200);
  EXPECT_FALSE(srv_->sessions()[0]->playing());
  ASSERT_EQ(status(p.request(request_text("PLAY", url_, 10, session))), 200);
  EXPECT_TRUE(srv_->sessions()[0]->playing());

  auto teardown = p.request(request_text("TEARDOWN", url_, 11, session));
  ASSERT_EQ(status(teardown), 200);
  EXPECT_FALSE(teardown->headers.get("Session").has_value());
  EXPECT_EQ(srv_->session_count(), 0u);
  EXPECT_EQ(status(p.request(request_text("PLAY", url_, 12, session))), 454) << "gone";
}

TEST_F(ServerMethods, ErrorAnswersOfEachMethod) {
  test::PosixRtspPeer p(loop_, srv_->rtsp_address());
  const std::string root = "rtsp://127.0.0.1:" + std::to_string(srv_->rtsp_address().port());
  EXPECT_EQ(status(p.request(request_text("DESCRIBE", root + "/nothing", 1))), 404);
  EXPECT_EQ(status(p.request(request_text("DESCRIBE", "rtsp://", 2))), 400);
  // SETUP before DESCRIBE: the client cannot know the key.
  EXPECT_EQ(
      status(p.request(request_text("SETUP", url_ + "/trackID=0", 3,
                                    "Transport: RTP/AVP;unicast;client_port=47020-47021\r\n"))),
      455);
  ASSERT_EQ(status(p.request(request_text("DESCRIBE", url_, 4))), 200);
  EXPECT_EQ(status(p.request(request_text("SETUP", url_ + "/trackID=0", 5))), 400)
      << "no Transport";
  EXPECT_EQ(status(p.request(request_text("SETUP", url_ + "/trackID=0", 6,
                                          "Transport: RTP/AVP/TCP;unicast;interleaved=0-1;"
                                          "mode=RECORD\r\n"))),
            461);
  EXPECT_EQ(
      status(p.request(request_text("SETUP", url_ + "/trackID=9", 7,
                                    "Transport: RTP/AVP;unicast;client_port=47022-47023\r\n"))),
      404);
  EXPECT_EQ(status(p.request(request_text("PLAY", url_, 8))), 454) << "no Session";
  EXPECT_EQ(status(p.request(request_text("PAUSE", url_, 9))), 454);
  EXPECT_EQ(status(p.request(request_text("TEARDOWN", url_, 10))), 454);
  EXPECT_EQ(status(p.request(request_text("OPTIONS", url_, 11, "Session: 12345678\r\n"))), 454);
  EXPECT_EQ(status(p.request(request_text("OPTIONS", url_, 12, "Session: ;;\r\n"))), 454);
  auto announce = p.request(request_text("ANNOUNCE", url_, 13));
  ASSERT_EQ(status(announce), 405);
  EXPECT_TRUE(announce->headers.get("Allow").has_value());
  EXPECT_EQ(status(p.request(request_text("FROBNICATE", url_, 14))), 501);
  EXPECT_EQ(status(p.request(request_text("OPTIONS", url_, 15))), 200) << "the connection lives";
  EXPECT_EQ(srv_->session_count(), 0u) << "no refused SETUP left a session behind";
}

TEST_F(ServerMethods, AttachedConnectionTakesTheSamePath) {
  // The socketless entry point the fuzz target drives: same parser, handlers and limits.
  const std::uint64_t id = srv_->attach_connection(net::SocketAddress::loopback_v4(40000));
  ASSERT_NE(id, 0u);
  const std::string req = request_text("OPTIONS", url_, 1) + "GARBAGE\r\n\r\n";
  srv_->receive(id, std::span(reinterpret_cast<const std::uint8_t*>(req.data()), req.size()));
  const std::string out = srv_->take_output(id);
  EXPECT_EQ(out.rfind("RTSP/1.0 200 OK", 0), 0u) << out;
  EXPECT_NE(out.find("RTSP/1.0 400"), std::string::npos) << out;
  EXPECT_EQ(srv_->take_output(id), "") << "taken";
  EXPECT_TRUE(srv_->connection_open(id));
  srv_->detach_connection(id);
  EXPECT_FALSE(srv_->connection_open(id));
  EXPECT_EQ(srv_->connection_count(), 0u);
}

}  // namespace
}  // namespace predrop

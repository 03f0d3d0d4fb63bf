// detail::make_push_sessions (server/src/push_sessions.hpp): one session per push target, its
// tracks at the destination's ports (video at the port, audio 2 higher, RTCP at +1), nobody's
// to control, its SDP file written; an unknown stream or an unwritable file is an error.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "push_sessions.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

TEST(PushSessions, OneSessionPerTargetAndItsSdpFile) {
  auto options = test::loopback_options();
  const std::string file = std::string(PREDROP_TEST_TMP) + "/push.sdp";
  options.pushes.push_back(
      server::PushTarget{"sample", net::SocketAddress::from_ip("127.0.0.1", 7000).value(), file});
  server::detail::SessionTable table(0, 1);
  auto entries = server::detail::make_push_sessions(options, table);
  ASSERT_EQ(entries.size(), 1u);
  const auto& e = *entries[0];
  EXPECT_FALSE(e.owner);
  EXPECT_EQ(e.last_request_us, 0u);
  ASSERT_EQ(e.tracks.size(), test::sample_media()->streams().size());
  for (std::size_t i = 0; i < e.tracks.size(); ++i) {
    EXPECT_EQ(e.tracks[i].rtp_destination.port(), 7000 + 2 * i);
    EXPECT_EQ(e.tracks[i].rtcp_destination->port(), 7001 + 2 * i);
    EXPECT_EQ(e.track_ids[i], i);
  }
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("m=video 7000 RTP/SAVP"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" +
                            wire::base64_encode(e.key.span())),
            std::string::npos);
}

TEST(PushSessions, AnUnknownStreamOrFileIsAnError) {
  auto options = test::loopback_options();
  server::detail::SessionTable table(0, 1);
  options.pushes.push_back(server::PushTarget{
      "nope", net::SocketAddress::from_ip("127.0.0.1", 7000).value(), "/tmp/x.sdp"});
  EXPECT_THROW(server::detail::make_push_sessions(options, table), std::runtime_error);
  options.pushes[0].stream = "sample";
  options.pushes[0].sdp_file = "/nonexistent-dir/x.sdp";
  EXPECT_THROW(server::detail::make_push_sessions(options, table), std::runtime_error);
}

}  // namespace
}  // namespace predrop

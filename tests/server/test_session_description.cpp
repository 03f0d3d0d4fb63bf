// detail::describe_stream and detail::push_sdp (server/src/session_description.hpp): the SDP of
// the sample clip with the key as a=crypto and as MIKEY a=key-mgmt, predrop's two extensions,
// the block attribute, the npt range only when not looping; plain RTP/AVP without keys; a push
// file naming the destination's address and ports.
#include <gtest/gtest.h>

#include <string>

#include "predrop/net/os_random.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "server_test_util.hpp"
#include "session_description.hpp"

namespace predrop {
namespace {

using server::detail::SdpSettings;

const server::StreamDefinition& sample() {
  static const server::StreamDefinition s{"sample", test::sample_media()};
  return s;
}

TEST(SessionDescription, CarriesTheKeyTwiceAndTheExtensions) {
  const auto key = net::random_srtp_key(wire::SrtpSuite::AesCm128HmacSha1_80);
  const SdpSettings settings{wire::SrtpSuite::AesCm128HmacSha1_80, "duration_us=1000000"};
  const std::string sdp = server::detail::describe_stream(sample(), &key, "10.0.0.1", settings);
  auto parsed = rtsp::parse_sdp(sdp);
  ASSERT_TRUE(parsed.ok()) << sdp;
  ASSERT_EQ(parsed->media.size(), sample().media->streams().size());
  for (std::size_t i = 0; i < parsed->media.size(); ++i) {
    const auto& m = parsed->media[i];
    EXPECT_EQ(m.proto, "RTP/SAVP");
    EXPECT_EQ(m.control, "trackID=" + std::to_string(i));
    ASSERT_EQ(m.crypto.size(), 1u);
    EXPECT_EQ(m.crypto[0].key_params, "inline:" + wire::base64_encode(key.span()));
    ASSERT_EQ(m.extmaps.size(), 2u);
    EXPECT_EQ(m.extmaps[0].uri, wire::kStageExtensionUri);
  }
  EXPECT_NE(sdp.find("a=key-mgmt:mikey "), std::string::npos);
  EXPECT_NE(sdp.find("a=x-predrop-block:duration_us=1000000"), std::string::npos);
  EXPECT_NE(sdp.find("a=range:npt=0-"), std::string::npos);
  EXPECT_NE(sdp.find("o=- "), std::string::npos);
}

TEST(SessionDescription, PlainAndLoopingHasNoKeysAndNoRange) {
  const SdpSettings settings{std::nullopt, ""};
  const server::StreamDefinition looping{
      "sample", std::make_shared<media::FileSource>(test::sample_media(), true)};
  const std::string sdp = server::detail::describe_stream(looping, nullptr, "h", settings);
  EXPECT_EQ(sdp.find("a=crypto"), std::string::npos);
  EXPECT_EQ(sdp.find("a=key-mgmt"), std::string::npos);
  EXPECT_EQ(sdp.find("a=range"), std::string::npos);
  EXPECT_NE(sdp.find("RTP/AVP "), std::string::npos);
}

TEST(SessionDescription, APushFileNamesTheDestination) {
  const SdpSettings settings{std::nullopt, ""};
  const std::string sdp = server::detail::push_sdp(
      server::detail::describe_stream(sample(), nullptr, "127.0.0.1", settings),
      net::SocketAddress::from_ip("10.1.2.3", 5004).value());
  EXPECT_NE(sdp.find("c=IN IP4 10.1.2.3\r\n"), std::string::npos) << sdp;
  EXPECT_NE(sdp.find("m=video 5004 "), std::string::npos);
  if (sample().media->audio_stream()) {
    EXPECT_NE(sdp.find("m=audio 5006 "), std::string::npos);
  }
}

}  // namespace
}  // namespace predrop

// SDP builder and parser (rtsp/include/predrop/rtsp/sdp.hpp).
#include "predrop/rtsp/sdp.hpp"

#include <gtest/gtest.h>

namespace predrop::rtsp {
namespace {

// What a predrop server announces for an H.264 + Opus file with SRTP.
SdpSession sample_session() {
  SdpSession s;
  s.session_id = "3913041234";
  s.session_version = "1";
  s.origin_address = "127.0.0.1";
  s.name = "bbb";
  s.tool = "predrop";
  s.control = "*";
  s.range = "npt=0-12.000";
  s.attributes = {"x-predrop-version:1"};
  SdpMedia v;
  v.kind = "video";
  v.proto = "RTP/SAVP";
  v.payload_type = 96;
  v.rtpmap = "H264/90000";
  v.fmtp =
      "packetization-mode=1;profile-level-id=64001f;sprop-parameter-sets="
      "Z2QAH6zZQFAFuhAAAAMAEAAAAwPA8YMZYA==,aOvjyyLA";
  v.control = "trackID=0";
  v.bandwidth_kbps = 3000;
  v.crypto = {
      {1, "AES_CM_128_HMAC_SHA1_80", "inline:WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz", ""}};
  v.extmaps = {{1, "", std::string(kStageExtensionUri), ""},
               {2, "", std::string(kAbsSendTimeUri), ""}};
  v.attributes = {"x-predrop-block:duration_us=1000000"};
  SdpMedia a;
  a.kind = "audio";
  a.proto = "RTP/SAVP";
  a.payload_type = 97;
  a.rtpmap = "opus/48000/2";
  a.fmtp = "useinbandfec=1";
  a.control = "trackID=1";
  a.crypto = {{1, "AES_CM_128_HMAC_SHA1_32",
               "inline:MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkw|2^20|1:4", "UNENCRYPTED_SRTCP"}};
  a.extmaps = {{1, "sendonly", std::string(kStageExtensionUri), ""}};
  s.media = {v, a};
  return s;
}

TEST(Sdp, BuildsTheExpectedText) {
  const auto text = build_sdp(sample_session());
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text,
            "v=0\r\n"
            "o=- 3913041234 1 IN IP4 127.0.0.1\r\n"
            "s=bbb\r\n"
            "c=IN IP4 0.0.0.0\r\n"
            "t=0 0\r\n"
            "a=tool:predrop\r\n"
            "a=control:*\r\n"
            "a=range:npt=0-12.000\r\n"
            "a=x-predrop-version:1\r\n"
            "m=video 0 RTP/SAVP 96\r\n"
            "b=AS:3000\r\n"
            "a=rtpmap:96 H264/90000\r\n"
            "a=fmtp:96 packetization-mode=1;profile-level-id=64001f;sprop-parameter-sets="
            "Z2QAH6zZQFAFuhAAAAMAEAAAAwPA8YMZYA==,aOvjyyLA\r\n"
            "a=control:trackID=0\r\n"
            "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz\r\n"
            "a=extmap:1 urn:predrop:stage\r\n"
            "a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r\n"
            "a=x-predrop-block:duration_us=1000000\r\n"
            "m=audio 0 RTP/SAVP 97\r\n"
            "a=rtpmap:97 opus/48000/2\r\n"
            "a=fmtp:97 useinbandfec=1\r\n"
            "a=control:trackID=1\r\n"
            "a=crypto:1 AES_CM_128_HMAC_SHA1_32 "
            "inline:MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkw|2^20|1:4 UNENCRYPTED_SRTCP\r\n"
            "a=extmap:1/sendonly urn:predrop:stage\r\n");
}

TEST(Sdp, BuildThenParseRoundTrips) {
  const auto s = sample_session();
  const auto text = build_sdp(s);
  ASSERT_TRUE(text.ok());
  const auto back = parse_sdp(*text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, s);
  EXPECT_EQ(back->media[0].crypto[0].inline_key(), "WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz");
  EXPECT_EQ(back->media[1].crypto[0].inline_key(), "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkw");
  ASSERT_NE(back->media[0].find_extmap(kAbsSendTimeUri), nullptr);
  EXPECT_EQ(back->media[0].find_extmap(kAbsSendTimeUri)->id, 2);
  EXPECT_EQ(back->media[1].find_extmap(kAbsSendTimeUri), nullptr);
  EXPECT_EQ(back->media[0].attribute("x-predrop-block"), "duration_us=1000000");
  EXPECT_FALSE(back->media[0].attribute("x-predrop"));
}

TEST(Sdp, ParsesAnFfmpegStyleDescription) {
  // As `ffmpeg -f rtp ... -sdp_file` writes it: LF line ends, tool line, no control.
  const auto s = parse_sdp(
      "v=0\n"
      "o=- 0 0 IN IP4 127.0.0.1\n"
      "s=No Name\n"
      "c=IN IP4 127.0.0.1\n"
      "t=0 0\n"
      "a=tool:libavformat 59.27.100\n"
      "m=video 5004 RTP/AVP 96\n"
      "b=AS:200\n"
      "a=rtpmap:96 H264/90000\n"
      "a=fmtp:96 packetization-mode=1\n"
      "m=audio 5006 RTP/AVP 0 8 101\n"
      "a=rtpmap:0 PCMU/8000\n"
      "a=rtpmap:8 PCMA/8000\n"
      "a=recvonly\n");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->name, "No Name");
  EXPECT_EQ(s->tool, "libavformat 59.27.100");
  EXPECT_EQ(s->connection_address, "127.0.0.1");
  ASSERT_EQ(s->media.size(), 2u);
  EXPECT_EQ(s->media[0].port, 5004);
  EXPECT_EQ(s->media[0].bandwidth_kbps, 200u);
  EXPECT_EQ(s->media[0].control, "");
  EXPECT_EQ(s->media[1].payload_type, 0);
  EXPECT_EQ(s->media[1].extra_formats, (std::vector<std::string>{"8", "101"}));
  EXPECT_EQ(s->media[1].rtpmap, "PCMU/8000");
  EXPECT_EQ(s->media[1].attributes, (std::vector<std::string>{"rtpmap:8 PCMA/8000", "recvonly"}));
  EXPECT_EQ(s->media[1].attribute("recvonly"), "");
}

TEST(Sdp, IgnoresUnknownLinesAndKeepsRepeats) {
  const auto s = parse_sdp(
      "v=0\r\no=u 1 2 IN IP6 ::1\r\ns=\r\ni=info\r\nu=http://x\r\ne=a@b\r\nt=0 0\r\n"
      "a=control:*\r\na=control:again\r\nx=unknown\r\n"
      "m=application 0 RTP/AVP 98\r\na=rtpmap:98 x/1000\r\na=rtpmap:98 y/1000\r\n"
      "a=control:\r\na=control:trackID=5\r\n\r\n");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->name, "-");
  EXPECT_EQ(s->origin_address, "::1");
  EXPECT_EQ(s->control, "*");
  EXPECT_EQ(s->attributes, (std::vector<std::string>{"control:again"}));
  EXPECT_EQ(s->media[0].rtpmap, "x/1000");
  EXPECT_EQ(s->media[0].control, "trackID=5");
  EXPECT_EQ(s->media[0].attributes, (std::vector<std::string>{"rtpmap:98 y/1000", "control:"}));
  // Round trip of what was parsed.
  const auto text = build_sdp(*s);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_NE(text->find("o=u 1 2 IN IP6 ::1\r\n"), std::string::npos);
  const auto again = parse_sdp(*text);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *s);
}

TEST(Sdp, ParserRefusesMalformedInput) {
  const std::string head = "v=0\r\no=- 1 1 IN IP4 h\r\ns=x\r\n";
  for (const std::string& bad : {
           std::string(""),
           std::string("o=- 1 1 IN IP4 h\r\n"),
           std::string("v=1\r\n"),
           std::string("v=0\r\ns=x\r\n"),  // no o=
           std::string("v=0\r\no=- 1 IN IP4 h\r\n"),
           std::string("v=0\r\no=- x 1 IN IP4 h\r\n"),
           head + "m=video 0 RTP/AVP\r\n",
           head + "m=video x RTP/AVP 96\r\n",
           head + "m=video 0 RTP/AVP 128\r\n",
           head + "m=video 70000 RTP/AVP 96\r\n",
           head + "c=IN IP4\r\n",
           head + "garbage\r\n",
           head + "m=video 0 RTP/AVP 96\r\na=crypto:1 AES_CM_128_HMAC_SHA1_80\r\n",
           head + "m=video 0 RTP/AVP 96\r\na=crypto:x AES inline:k\r\n",
           head + "m=video 0 RTP/AVP 96\r\na=extmap:0 urn:x\r\n",
           head + "m=video 0 RTP/AVP 96\r\na=extmap:256 urn:x\r\n",
           head + "m=video 0 RTP/AVP 96\r\na=extmap:1/sideways urn:x\r\n",
           head + "m=video 0 RTP/AVP 96\r\na=extmap:1\r\n",
           head + "a=x\x01y\r\n",
       }) {
    EXPECT_FALSE(parse_sdp(bad).ok()) << bad;
  }
  SdpLimits limits;
  limits.max_media = 2;
  EXPECT_FALSE(parse_sdp(head + "m=a 0 P 0\r\nm=a 0 P 0\r\nm=a 0 P 0\r\n", limits).ok());
  limits = {};
  limits.max_attributes = 2;
  EXPECT_FALSE(parse_sdp(head + "a=1\r\na=2\r\na=3\r\n", limits).ok());
  EXPECT_FALSE(parse_sdp(head + std::string(70000, 'x')).ok());
}

TEST(Sdp, BuilderRefusesFieldsThatWouldBreakTheFormat) {
  const auto refused = [](auto mutate, std::string_view field) {
    auto s = sample_session();
    mutate(s);
    const auto r = build_sdp(s);
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_NE(r.error().message.find(field), std::string::npos) << r.error().message;
  };
  refused([](SdpSession& s) { s.name = "a\r\nm=evil"; }, "name");
  refused([](SdpSession& s) { s.session_id = "12a"; }, "session_id");
  refused([](SdpSession& s) { s.media[0].payload_type = 128; }, "media[0].payload_type");
  refused([](SdpSession& s) { s.media[1].kind = "vid eo"; }, "media[1].kind");
  refused([](SdpSession& s) { s.media[0].extmaps[0].id = 0; }, "extmap.id");
  refused([](SdpSession& s) { s.media[0].crypto[0].key_params = "inline:a b"; }, "key_params");
  refused([](SdpSession& s) { s.media[0].attributes.push_back("x\ny"); }, "attributes");
  refused([](SdpSession& s) { s.media[0].fmtp = std::string("a\0b", 3); }, "fmtp");
}

}  // namespace
}  // namespace predrop::rtsp

// The WHEP answer to a Chromium-shaped offer: the stream's codec under the browser's payload
// type, ICE-lite, passive DTLS, BUNDLE and rtcp-mux; audio rejected; unusable offers refused.
#include "predrop/webrtc/whep_sdp.hpp"

#include <gtest/gtest.h>

namespace predrop::webrtc {
namespace {

// Trimmed from what Chromium's RTCPeerConnection.createOffer() gives for a recvonly video and a
// recvonly audio transceiver.
constexpr std::string_view kOffer =
    "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
    "a=group:BUNDLE 0 1\r\na=msid-semantic: WMS\r\n"
    "m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 98\r\nc=IN IP4 0.0.0.0\r\n"
    "a=ice-ufrag:Brw1\r\na=ice-pwd:browserpassword0123456789\r\na=ice-options:trickle\r\n"
    "a=fingerprint:sha-256 AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:"
    "11:22:33:44:55:66:77:88:99\r\n"
    "a=setup:actpass\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\n"
    "a=rtpmap:96 VP8/90000\r\na=rtcp-fb:96 transport-cc\r\n"
    "a=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\n"
    "a=rtpmap:102 H264/90000\r\n"
    "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f\r\n"
    "a=rtpmap:103 H264/90000\r\n"
    "a=fmtp:103 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n"
    "a=rtpmap:98 VP9/90000\r\na=fmtp:98 profile-id=0\r\n"
    "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=recvonly\r\n"
    "a=rtpmap:111 opus/48000/2\r\n";

AnswerParams params() {
  return AnswerParams{
      {"srvu", "serverpassword0123456789"}, "11:22", "127.0.0.1", 40000, 0x1234, "predrop-1"};
}

media::StreamInfo video(media::Codec codec, std::string fmtp = {}) {
  media::StreamInfo v;
  v.codec = codec;
  v.fmtp = std::move(fmtp);
  return v;
}

TEST(WhepSdp, ReadsTheIceCredentialsFingerprintAndSections) {
  const auto o = parse_whep_offer(kOffer);
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->ice_ufrag, "Brw1");
  EXPECT_EQ(o->ice_pwd, "browserpassword0123456789");
  EXPECT_EQ(o->setup, "actpass");
  EXPECT_TRUE(o->fingerprint_sha256.starts_with("AA:BB"));
  ASSERT_EQ(o->media.size(), 2U);
  EXPECT_EQ(o->media[0].codecs.size(), 5U);
  EXPECT_EQ(o->media[1].kind, "audio");
}

TEST(WhepSdp, AnswersVp8UnderTheBrowsersPayloadTypeAndRejectsAudio) {
  const auto a =
      answer_whep_offer(parse_whep_offer(kOffer).value(), video(media::Codec::kVp8), params());
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->payload_type, 96);
  const std::string& s = a->sdp;
  EXPECT_NE(s.find("a=group:BUNDLE 0\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=ice-lite\r\n"), std::string::npos);
  EXPECT_NE(s.find("m=video 40000 UDP/TLS/RTP/SAVPF 96\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=setup:passive\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=rtcp-mux\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=sendonly\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=ice-ufrag:srvu\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=fingerprint:sha-256 11:22\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=rtpmap:96 VP8/90000\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\n"),
            std::string::npos);
  EXPECT_NE(s.find("m=audio 0 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\n"),
            std::string::npos);
}

TEST(WhepSdp, H264TakesTheSameProfileElseConstrainedBaseline) {
  const auto o = parse_whep_offer(kOffer).value();
  const auto baseline = answer_whep_offer(
      o, video(media::Codec::kH264, "packetization-mode=1; profile-level-id=42C01E"), params());
  ASSERT_TRUE(baseline.ok());
  EXPECT_EQ(baseline->payload_type, 102);  // profile_idc 0x42 = the first 42xxxx offered
  const auto high = answer_whep_offer(
      o, video(media::Codec::kH264, "packetization-mode=1; profile-level-id=640028"), params());
  ASSERT_TRUE(high.ok());
  EXPECT_EQ(high->payload_type, 103);  // no High offered: constrained baseline 42e01f
  EXPECT_NE(high->sdp.find("a=fmtp:103 level-asymmetry-allowed=1;packetization-mode=1;"
                           "profile-level-id=42e01f\r\n"),
            std::string::npos);
  const auto vp9 = answer_whep_offer(o, video(media::Codec::kVp9), params());
  EXPECT_EQ(vp9->payload_type, 98);
  // AV1 when offered (Chromium offers "AV1/90000"); this offer has none.
  EXPECT_FALSE(answer_whep_offer(o, video(media::Codec::kAv1), params()).ok());
  std::string with_av1(kOffer);
  with_av1.replace(with_av1.find(" 98\r\n"), 5, " 98 45\r\n");
  with_av1.insert(with_av1.find("m=audio"), "a=rtpmap:45 AV1/90000\r\n");
  const auto av1 =
      answer_whep_offer(parse_whep_offer(with_av1).value(), video(media::Codec::kAv1), params());
  ASSERT_TRUE(av1.ok());
  EXPECT_EQ(av1->payload_type, 45);
}

TEST(WhepSdp, TakesTransportCcWhenTheOfferHasTheExtensionAndFeedbackForTheCodec) {
  std::string offer(kOffer);
  offer.insert(offer.find("a=rtpmap:96"),
               "a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r\n"
               "a=extmap:3 http://www.ietf.org/id/"
               "draft-holmer-rmcat-transport-wide-cc-extensions-01\r\n");
  const auto o = parse_whep_offer(offer).value();
  EXPECT_EQ(o.media[0].transport_cc_id, 3);
  const auto vp8 = answer_whep_offer(o, video(media::Codec::kVp8), params());
  ASSERT_TRUE(vp8.ok());
  EXPECT_EQ(vp8->transport_cc_id, 3);
  EXPECT_NE(vp8->sdp.find("a=extmap:3 http://www.ietf.org/id/"
                          "draft-holmer-rmcat-transport-wide-cc-extensions-01\r\n"),
            std::string::npos);
  EXPECT_NE(vp8->sdp.find("a=rtcp-fb:96 transport-cc\r\n"), std::string::npos);
  EXPECT_EQ(vp8->sdp.find("abs-send-time"), std::string::npos) << "only what is sent";
  // H.264 102 has no transport-cc feedback in this offer: neither is answered.
  const auto h264 = answer_whep_offer(
      o, video(media::Codec::kH264, "packetization-mode=1; profile-level-id=42C01E"), params());
  ASSERT_TRUE(h264.ok());
  EXPECT_EQ(h264->transport_cc_id, 0);
  EXPECT_EQ(h264->sdp.find("transport-cc"), std::string::npos);
  EXPECT_EQ(h264->sdp.find("a=extmap"), std::string::npos);
  // Without the extension nothing is negotiated.
  const auto none =
      answer_whep_offer(parse_whep_offer(kOffer).value(), video(media::Codec::kVp8), params());
  EXPECT_EQ(none->transport_cc_id, 0);
}

TEST(WhepSdp, TakesNackWithRtxPliAndFirOnlyWhenOffered) {
  std::string offer(kOffer);
  offer.insert(offer.find("a=rtpmap:97"),
               "a=rtcp-fb:96 nack\r\na=rtcp-fb:96 nack pli\r\na=rtcp-fb:96 ccm fir\r\n");
  const auto o = parse_whep_offer(offer).value();
  EXPECT_TRUE(o.media[0].codecs[0].nack);
  EXPECT_TRUE(o.media[0].codecs[0].nack_pli);
  EXPECT_TRUE(o.media[0].codecs[0].ccm_fir);
  AnswerParams p = params();
  p.rtx_ssrc = 0x5678;
  const auto vp8 = answer_whep_offer(o, video(media::Codec::kVp8), p);
  ASSERT_TRUE(vp8.ok());
  EXPECT_EQ(vp8->rtx_payload_type, 97);
  EXPECT_TRUE(vp8->pli);
  EXPECT_TRUE(vp8->fir);
  const std::string& s = vp8->sdp;
  EXPECT_NE(s.find("m=video 40000 UDP/TLS/RTP/SAVPF 96 97\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=rtcp-fb:96 nack\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=rtcp-fb:96 nack pli\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=rtcp-fb:96 ccm fir\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=ssrc-group:FID 4660 22136\r\n"), std::string::npos);
  EXPECT_NE(s.find("a=ssrc:22136 cname:predrop-1\r\n"), std::string::npos);
  // The media SSRC's lines first: Chromium takes the first a=ssrc as the primary one (with the
  // RTX SSRC first it decoded nothing).
  EXPECT_LT(s.find("a=ssrc:4660 cname:"), s.find("a=ssrc:22136 cname:"));
  // No RTX for the chosen codec (VP9 98 has none here): no NACK either; PLI is not offered for
  // 98, so none.
  const auto vp9 = answer_whep_offer(o, video(media::Codec::kVp9), p);
  ASSERT_TRUE(vp9.ok());
  EXPECT_EQ(vp9->rtx_payload_type, 0);
  EXPECT_FALSE(vp9->pli);
  EXPECT_EQ(vp9->sdp.find("nack"), std::string::npos);
  EXPECT_EQ(vp9->sdp.find("rtx"), std::string::npos);
  EXPECT_NE(vp9->sdp.find("m=video 40000 UDP/TLS/RTP/SAVPF 98\r\n"), std::string::npos);
  // No RTX SSRC from the caller: no NACK, PLI still.
  const auto no_rtx = answer_whep_offer(o, video(media::Codec::kVp8), params());
  EXPECT_EQ(no_rtx->rtx_payload_type, 0);
  EXPECT_TRUE(no_rtx->pli);
  EXPECT_EQ(no_rtx->sdp.find("a=rtcp-fb:96 nack\r\n"), std::string::npos);
  // The plain offer (no a=rtcp-fb nack): nothing of it answered.
  const auto plain =
      answer_whep_offer(parse_whep_offer(kOffer).value(), video(media::Codec::kVp8), p);
  EXPECT_EQ(plain->rtx_payload_type, 0);
  EXPECT_FALSE(plain->pli);
  EXPECT_EQ(plain->sdp.find("nack"), std::string::npos);
  EXPECT_EQ(plain->sdp.find("ssrc-group"), std::string::npos);
}

TEST(WhepSdp, RefusesOffersItCannotAnswer) {
  EXPECT_FALSE(parse_whep_offer("v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n").ok());
  std::string passive(kOffer);
  passive.replace(passive.find("actpass"), 7, "passive");
  EXPECT_FALSE(parse_whep_offer(passive).ok());
  const auto o = parse_whep_offer(kOffer).value();
  EXPECT_FALSE(answer_whep_offer(o, video(media::Codec::kH265), params()).ok());
}

}  // namespace
}  // namespace predrop::webrtc

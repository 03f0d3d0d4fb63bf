// The WHEP answer to a Chromium-shaped offer: the stream's codec under the browser's payload
// type, ICE-lite, passive DTLS, BUNDLE and rtcp-mux; Opus audio accepted beside it for an Opus
// track, rejected otherwise; unusable offers refused.
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

// Chromium's offer for a recvonly video and a recvonly audio transceiver, as the player page
// makes it (trimmed): transport-cc under id 3 in both sections, Opus 111 with its fmtp, and
// audio codecs the stream cannot give.
constexpr std::string_view kAudioVideoOffer =
    "v=0\r\no=- 4611731400430051337 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
    "a=group:BUNDLE 0 1\r\na=extmap-allow-mixed\r\na=msid-semantic: WMS\r\n"
    "m=video 9 UDP/TLS/RTP/SAVPF 96 97\r\nc=IN IP4 0.0.0.0\r\na=rtcp:9 IN IP4 0.0.0.0\r\n"
    "a=ice-ufrag:Brw1\r\na=ice-pwd:browserpassword0123456789\r\na=ice-options:trickle\r\n"
    "a=fingerprint:sha-256 AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:"
    "11:22:33:44:55:66:77:88:99\r\n"
    "a=setup:actpass\r\na=mid:0\r\n"
    "a=extmap:1 urn:ietf:params:rtp-hdrext:toffset\r\n"
    "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01\r\n"
    "a=recvonly\r\na=rtcp-mux\r\na=rtcp-rsize\r\n"
    "a=rtpmap:96 VP8/90000\r\na=rtcp-fb:96 goog-remb\r\na=rtcp-fb:96 transport-cc\r\n"
    "a=rtcp-fb:96 ccm fir\r\na=rtcp-fb:96 nack\r\na=rtcp-fb:96 nack pli\r\n"
    "a=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\n"
    "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126\r\nc=IN IP4 0.0.0.0\r\n"
    "a=rtcp:9 IN IP4 0.0.0.0\r\n"
    "a=ice-ufrag:Brw1\r\na=ice-pwd:browserpassword0123456789\r\na=ice-options:trickle\r\n"
    "a=fingerprint:sha-256 AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:"
    "11:22:33:44:55:66:77:88:99\r\n"
    "a=setup:actpass\r\na=mid:1\r\n"
    "a=extmap:14 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\n"
    "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01\r\n"
    "a=recvonly\r\na=rtcp-mux\r\na=rtcp-rsize\r\n"
    "a=rtpmap:111 opus/48000/2\r\na=rtcp-fb:111 transport-cc\r\n"
    "a=fmtp:111 minptime=10;useinbandfec=1\r\n"
    "a=rtpmap:63 red/48000/2\r\na=fmtp:63 111/111\r\n"
    "a=rtpmap:9 G722/8000\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:8 PCMA/8000\r\n"
    "a=rtpmap:13 CN/8000\r\na=rtpmap:110 telephone-event/48000\r\n"
    "a=rtpmap:126 telephone-event/8000\r\n";

media::StreamInfo sound(media::Codec codec) {
  media::StreamInfo a;
  a.kind = media::MediaKind::kAudio;
  a.codec = codec;
  a.clock_rate = 48000;
  a.channels = 2;
  return a;
}

AnswerParams audio_params() {
  AnswerParams p = params();
  p.rtx_ssrc = 0x5678;
  p.audio_ssrc = 0x9abc;
  return p;
}

TEST(WhepSdp, AcceptsOpusAudioBesideTheVideoOnTheSameTransport) {
  const auto o = parse_whep_offer(kAudioVideoOffer).value();
  ASSERT_EQ(o.media.size(), 2U);
  EXPECT_EQ(o.media[1].transport_cc_id, 3);
  const media::StreamInfo opus = sound(media::Codec::kOpus);
  media::StreamInfo vp8 = video(media::Codec::kVp8);
  vp8.frame_rate = 30;
  const auto a = answer_whep_offer(o, vp8, audio_params(), &opus);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->payload_type, 96);
  EXPECT_EQ(a->rtx_payload_type, 97);
  EXPECT_EQ(a->transport_cc_id, 3);
  EXPECT_EQ(a->audio_payload_type, 111);
  EXPECT_EQ(a->audio_rejected, "");
  const std::string& s = a->sdp;
  EXPECT_NE(s.find("a=group:BUNDLE 0 1\r\n"), std::string::npos);
  const std::size_t audio = s.find(
      "m=audio 40000 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 127.0.0.1\r\n"
      "a=mid:1\r\na=sendonly\r\n");
  ASSERT_NE(audio, std::string::npos) << s;
  EXPECT_LT(s.find("m=video 40000 UDP/TLS/RTP/SAVPF 96 97\r\n"), audio);
  // The nominal frame rate, in the video section (the player page's quality measure).
  EXPECT_LT(s.find("a=framerate:30\r\n"), audio);
  const std::string section = s.substr(audio);
  for (const char* want : {"a=ice-ufrag:srvu\r\n", "a=fingerprint:sha-256 11:22\r\n",
                           "a=setup:passive\r\n", "a=rtcp-mux\r\n", "a=rtpmap:111 opus/48000/2\r\n",
                           "a=fmtp:111 minptime=10;useinbandfec=1\r\n",
                           "a=extmap:3 http://www.ietf.org/id/"
                           "draft-holmer-rmcat-transport-wide-cc-extensions-01\r\n",
                           "a=rtcp-fb:111 transport-cc\r\n",
                           // Its own SSRC (0x9abc), in the video's media stream.
                           "a=ssrc:39612 cname:predrop-1\r\na=ssrc:39612 msid:predrop audio0\r\n",
                           "a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\n"}) {
    EXPECT_NE(section.find(want), std::string::npos) << want;
  }
  EXPECT_NE(s.find("a=ssrc:4660 msid:predrop video0\r\n"), std::string::npos);
  // Only Opus is answered, no NACK for it, nothing of the video's in the audio section.
  EXPECT_EQ(section.find("red/48000"), std::string::npos);
  EXPECT_EQ(section.find("nack"), std::string::npos);
  EXPECT_EQ(section.find("VP8"), std::string::npos);
  EXPECT_EQ(section.find("ssrc-audio-level"), std::string::npos);
  EXPECT_EQ(s.find("inactive"), std::string::npos);
}

TEST(WhepSdp, RejectsAudioWithoutOpusForAnAacTrackOrWithAnotherExtensionId) {
  const media::StreamInfo opus = sound(media::Codec::kOpus);
  const std::string rejected = "m=audio 0 UDP/TLS/RTP/SAVPF ";
  // Audio offered without Opus.
  std::string no_opus(kAudioVideoOffer);
  no_opus.replace(no_opus.find("a=rtpmap:111 opus/48000/2"), 25, "a=rtpmap:111 ISAC/16000");
  auto a = answer_whep_offer(parse_whep_offer(no_opus).value(), video(media::Codec::kVp8),
                             audio_params(), &opus);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->audio_payload_type, 0);
  EXPECT_NE(a->audio_rejected.find("opus"), std::string::npos);
  EXPECT_NE(a->sdp.find(rejected + "111\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=inactive\r\n"),
            std::string::npos);
  EXPECT_NE(a->sdp.find("a=group:BUNDLE 0\r\n"), std::string::npos);
  // The stream's audio is AAC: rejected, the video still answered.
  const auto o = parse_whep_offer(kAudioVideoOffer).value();
  const media::StreamInfo aac = sound(media::Codec::kAac);
  a = answer_whep_offer(o, video(media::Codec::kVp8), audio_params(), &aac);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->audio_payload_type, 0);
  EXPECT_NE(a->audio_rejected.find("AAC"), std::string::npos) << a->audio_rejected;
  EXPECT_NE(a->sdp.find(rejected), std::string::npos);
  EXPECT_EQ(a->sdp.find("opus"), std::string::npos);
  // No audio track, or no audio SSRC given: rejected.
  a = answer_whep_offer(o, video(media::Codec::kVp8), audio_params());
  EXPECT_EQ(a->audio_payload_type, 0);
  EXPECT_NE(a->sdp.find(rejected), std::string::npos);
  a = answer_whep_offer(o, video(media::Codec::kVp8), params(), &opus);
  EXPECT_EQ(a->audio_payload_type, 0);
  // The video took transport-cc under 3; audio offering it under 4 cannot share the BUNDLE's
  // extension map: rejected. Without transport-cc for the video, the same audio is taken, and
  // no extension is answered for it.
  std::string other_id(kAudioVideoOffer);
  other_id.replace(other_id.rfind("a=extmap:3 "), 11, "a=extmap:4 ");
  const auto o4 = parse_whep_offer(other_id).value();
  a = answer_whep_offer(o4, video(media::Codec::kVp8), audio_params(), &opus);
  EXPECT_EQ(a->audio_payload_type, 0);
  EXPECT_NE(a->sdp.find(rejected), std::string::npos);
  std::string no_video_cc(other_id);
  no_video_cc.replace(no_video_cc.find("a=rtcp-fb:96 transport-cc"), 25, "a=rtcp-fb:96 goog-remb");
  a = answer_whep_offer(parse_whep_offer(no_video_cc).value(), video(media::Codec::kVp8),
                        audio_params(), &opus);
  EXPECT_EQ(a->transport_cc_id, 0);
  EXPECT_EQ(a->audio_payload_type, 111);
  EXPECT_EQ(a->sdp.find("a=extmap"), std::string::npos);
  EXPECT_EQ(a->sdp.find("transport-cc"), std::string::npos);
}

}  // namespace
}  // namespace predrop::webrtc

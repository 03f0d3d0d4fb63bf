// Publishing (server/src/live_publish.hpp, the ANNOUNCE/SETUP/RECORD handlers of
// rtsp_methods.cpp, docs/live.md): what FFmpeg's ANNOUNCE says, the secret in its URLs (also in
// the SETUP form "…?secret=s/streamid=0"), the RTP header read without allocating; then through
// the StreamServer on attached connections: a wrong secret 403, a file stream 405, a publisher
// that records the sample's video over interleaved RTP, a second publisher 455, a viewer that
// describes the published stream and, once the publisher hangs up, 404. With `replace`, a second
// publisher takes over and the first one's connection is closed at its next packet.
#include <gtest/gtest.h>

#include <string>

#include "live_publish.hpp"
#include "predrop/rtsp/rtsp_message.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

using server::detail::read_announce;
using server::detail::read_rtp;
using server::detail::secret_matches;
using server::detail::url_secret;

// What ffmpeg 5.1 sends (-c copy of an x264 MP4 to -f rtsp).
constexpr std::string_view kFfmpegSdp =
    "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=No Name\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
    "a=tool:libavformat LIBAVFORMAT_VERSION\r\nm=video 0 RTP/AVP 96\r\nb=AS:58\r\n"
    "a=rtpmap:96 H264/90000\r\n"
    "a=fmtp:96 packetization-mode=1; "
    "sprop-parameter-sets=Z2QADazZQUH7ARAAAAMAEAAAAwMg8UKZYA==,aOvjyyLA; "
    "profile-level-id=64000D\r\na=control:streamid=0\r\n";

TEST(LivePublish, ReadsFfmpegsAnnounce) {
  auto a = read_announce(kFfmpegSdp);
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_EQ(a->tracks.size(), 1u);
  EXPECT_TRUE(a->tracks[0].video);
  EXPECT_EQ(a->tracks[0].control, "streamid=0");
  EXPECT_EQ(a->tracks[0].payload_type, 96);
  EXPECT_EQ(a->video.clock_rate, 90000u);
  EXPECT_EQ(a->video.profile_level_id, "64000D");
  ASSERT_GT(a->video.parameter_sets.size(), 8u);
  EXPECT_EQ(a->video.parameter_sets[4], 0x67) << "the SPS first, Annex B";
}

// The audio sections ffmpeg 5.1 adds for -c:a aac and -c:a libopus.
constexpr std::string_view kAacSection =
    "m=audio 0 RTP/AVP 97\r\nb=AS:96\r\na=rtpmap:97 MPEG4-GENERIC/48000/1\r\n"
    "a=fmtp:97 profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;"
    "indexdeltalength=3; config=1188\r\na=control:streamid=1\r\n";
constexpr std::string_view kOpusSection =
    "m=audio 0 RTP/AVP 97\r\nb=AS:64\r\na=rtpmap:97 opus/48000/2\r\n"
    "a=fmtp:97 sprop-stereo=1\r\na=control:streamid=1\r\n";

TEST(LivePublish, ReadsAnAacOrOpusTrackAndPassesItsSdpOn) {
  auto a = read_announce(std::string(kFfmpegSdp) + std::string(kAacSection));
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_EQ(a->tracks.size(), 2u);
  EXPECT_TRUE(a->tracks[1].audio);
  EXPECT_EQ(a->tracks[1].payload_type, 97);
  ASSERT_TRUE(a->audio);
  EXPECT_EQ(a->audio->codec, media::Codec::kAac);
  EXPECT_EQ(a->audio->clock_rate, 48000u);
  EXPECT_EQ(a->audio->channels, 1u);
  EXPECT_EQ(a->audio->encoding, "MPEG4-GENERIC/48000/1");
  EXPECT_NE(a->audio->fmtp.find("config=1188"), std::string::npos);
  EXPECT_EQ(a->audio->size_length, 13);
  EXPECT_EQ(a->audio->index_delta_length, 3);
  auto o = read_announce(std::string(kFfmpegSdp) + std::string(kOpusSection));
  ASSERT_TRUE(o.ok()) << o.error().message;
  ASSERT_TRUE(o->audio);
  EXPECT_EQ(o->audio->codec, media::Codec::kOpus);
  EXPECT_EQ(o->audio->channels, 2u);
  // What cannot be passed through stays a track that is not served (its packets dropped).
  for (const std::string_view other :
       {"m=audio 0 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\na=control:streamid=1\r\n",
        "m=audio 0 RTP/AVP 97\r\na=rtpmap:97 MPEG4-GENERIC/48000/1\r\n"
        "a=fmtp:97 mode=AAC-hbr;config=1188\r\na=control:streamid=1\r\n",
        "m=audio 0 RTP/AVP 97\r\na=rtpmap:97 opus/44100/2\r\na=control:streamid=1\r\n"}) {
    auto x = read_announce(std::string(kFfmpegSdp) + std::string(other));
    ASSERT_TRUE(x.ok()) << x.error().message;
    EXPECT_FALSE(x->audio) << other;
    EXPECT_FALSE(x->tracks[1].audio);
  }
}

// GStreamer's rtspclientsink with aacparse or an AAC encoder: rtpmp4apay's MP4A-LATM.
TEST(LivePublish, ReadsMp4aLatmAsAacHbrForItsViewers) {
  auto a = read_announce(std::string(kFfmpegSdp) +
                         "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 MP4A-LATM/48000/2\r\n"
                         "a=fmtp:96 cpresent=0;config=40002320adca00\r\n"
                         "a=control:stream=1\r\n");
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(a->audio);
  EXPECT_TRUE(a->tracks[1].audio);
  EXPECT_EQ(a->audio->codec, media::Codec::kAac);
  EXPECT_EQ(a->audio->encoding, "MPEG4-GENERIC/48000/2");
  EXPECT_EQ(a->audio->channels, 2u);
  EXPECT_NE(a->audio->fmtp.find("mode=AAC-hbr"), std::string::npos);
  EXPECT_NE(a->audio->fmtp.find("config=119056E500"), std::string::npos) << a->audio->fmtp;
  ASSERT_TRUE(a->audio->latm);
  EXPECT_EQ(a->audio->latm->subframes, 1);
  EXPECT_TRUE(a->audio_unserved.empty());
  // cpresent=1 (RFC 6416's default) and an unreadable config: video only, and why, naming it.
  for (const auto& [fmtp, why] :
       {std::pair<std::string, std::string>{"config=40002320", "cpresent=1"},
        {"cpresent=1;config=40002320", "cpresent=1"},
        {"cpresent=0", "StreamMuxConfig"},
        {"cpresent=0;config=40102320", "more than one program"}}) {
    auto x = read_announce(std::string(kFfmpegSdp) +
                           "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 MP4A-LATM/48000/2\r\n"
                           "a=fmtp:96 " +
                           fmtp + "\r\na=control:stream=1\r\n");
    ASSERT_TRUE(x.ok()) << x.error().message;
    EXPECT_FALSE(x->audio) << fmtp;
    EXPECT_NE(x->audio_unserved.find("MP4A-LATM/48000/2"), std::string::npos) << x->audio_unserved;
    EXPECT_NE(x->audio_unserved.find(why), std::string::npos) << x->audio_unserved;
  }
  auto pcmu =
      read_announce(std::string(kFfmpegSdp) + "m=audio 0 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n");
  ASSERT_TRUE(pcmu.ok());
  EXPECT_NE(pcmu->audio_unserved.find("'PCMU/8000': not AAC"), std::string::npos)
      << pcmu->audio_unserved;
}

TEST(LivePublish, RefusesAnnouncesItCannotServe) {
  std::string audio_only(kFfmpegSdp);
  audio_only.replace(audio_only.find("m=video"), 7, "m=audio");
  EXPECT_FALSE(read_announce(audio_only).ok());
  std::string interleaved_mode(kFfmpegSdp);
  interleaved_mode.replace(interleaved_mode.find("packetization-mode=1"), 20,
                           "packetization-mode=2");
  EXPECT_FALSE(read_announce(interleaved_mode).ok());
  std::string bad_sets(kFfmpegSdp);
  bad_sets.replace(bad_sets.find("aOvjyyLA"), 8, "!!!!");
  EXPECT_FALSE(read_announce(bad_sets).ok());
  EXPECT_FALSE(read_announce("garbage").ok());
}

TEST(LivePublish, TheSecretIsInTheQuery) {
  EXPECT_EQ(url_secret("rtsp://h/live?secret=abc"), "abc");
  EXPECT_EQ(url_secret("rtsp://h/live?secret=abc/streamid=0"), "abc") << "FFmpeg's SETUP URL";
  EXPECT_EQ(url_secret("rtsp://h/live?x=1&secret=abc#f"), "abc");
  EXPECT_EQ(url_secret("rtsp://h/live"), std::nullopt);
  EXPECT_EQ(url_secret("rtsp://h/live?secrets=abc"), std::nullopt);
  EXPECT_TRUE(secret_matches("0123456789abcdef", "0123456789abcdef"));
  EXPECT_FALSE(secret_matches("0123456789abcdeF", "0123456789abcdef"));
  EXPECT_FALSE(secret_matches("0123456789abcde", "0123456789abcdef"));
  EXPECT_FALSE(secret_matches("0123456789abcdef0", "0123456789abcdef"));
  EXPECT_FALSE(secret_matches("", "")) << "an empty secret never matches";
}

TEST(LivePublish, ReadsRtpHeadersAndRefusesWhatIsNot) {
  std::vector<std::uint8_t> p = {0x80, 0xe0, 0x12, 0x34, 0, 0, 0x10, 0, 1, 2, 3, 4, 0x65, 0xaa};
  auto f = read_rtp(p);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->marker);
  EXPECT_EQ(f->payload_type, 96);
  EXPECT_EQ(f->sequence, 0x1234);
  EXPECT_EQ(f->timestamp, 0x1000u);
  EXPECT_EQ(f->payload.size(), 2u);
  auto ext = p;
  ext[0] |= 0x10;  // an extension block of one word
  ext.insert(ext.begin() + 12, {0xbe, 0xde, 0, 1, 0x10, 0xff, 0, 0});
  ASSERT_TRUE(read_rtp(ext));
  EXPECT_EQ(read_rtp(ext)->payload.size(), 2u);
  auto padded = p;
  padded[0] |= 0x20;
  padded.back() = 5;  // more padding than payload
  EXPECT_FALSE(read_rtp(padded));
  EXPECT_FALSE(read_rtp(std::span(p).first(11)));
  auto v1 = p;
  v1[0] = 0x40;
  EXPECT_FALSE(read_rtp(v1));
}

// The server with the sample as a file stream and "live" as a published one.
struct Bed {
  net::EventLoop loop;
  std::unique_ptr<server::StreamServer> srv;
  static constexpr std::string_view kSecret = "0123456789abcdef";

  explicit Bed(bool replace = false, std::vector<std::string> edges = {}) {
    auto o = test::loopback_options();
    server::LivePointSettings live;
    live.secret = std::string(kSecret);
    live.replace = replace;
    live.edges = std::move(edges);
    o.streams.push_back(
        server::StreamDefinition{"live", std::make_shared<server::LivePoint>(live)});
    srv = std::make_unique<server::StreamServer>(loop, o);
    srv->start();
  }
  ~Bed() {
    srv->stop();
    loop.run_nowait();
  }
  std::uint64_t connect(std::uint16_t port) {
    return srv->attach_connection(net::SocketAddress::from_ip("127.0.0.1", port).value());
  }
  // Sends a request on connection `id`; returns the one response it wrote.
  rtsp::RtspResponse ask(std::uint64_t id, const std::string& text) {
    srv->receive(id, std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
    rtsp::RtspResponseParser parser;
    const std::string out = srv->take_output(id);
    EXPECT_EQ(parser.feed(out), rtsp::RtspParseEvent::kMessage) << out;
    return parser.take_response();
  }
  static std::string url(std::string_view query = {}) {
    return "rtsp://127.0.0.1:8554/live" + std::string(query);
  }
  rtsp::RtspResponse announce(std::uint64_t id, std::string_view secret) {
    const std::string body(kFfmpegSdp);
    return ask(id, test::request_text("ANNOUNCE", url("?secret=" + std::string(secret)), 2,
                                      "Content-Type: application/sdp\r\nContent-Length: " +
                                          std::to_string(body.size()) + "\r\n") +
                       body);
  }
  // ANNOUNCE, SETUP (interleaved 0-1, mode=record) and RECORD, as FFmpeg sends them.
  void publish(std::uint64_t id) {
    ASSERT_EQ(announce(id, kSecret).status, 200);
    auto setup = ask(
        id, test::request_text("SETUP", url("?secret=" + std::string(kSecret) + "/streamid=0"), 3,
                               "Transport: RTP/AVP/TCP;unicast;interleaved=0-1;mode=record\r\n"));
    ASSERT_EQ(setup.status, 200);
    EXPECT_NE(setup.headers.get("Transport")->find("interleaved=0-1"), std::string::npos);
    const std::string session = test::session_of(setup);
    ASSERT_FALSE(session.empty());
    // The timeout its connection is held to (server.rtsp_idle_timeout_s, 30 s by default), not
    // a player's session timeout (60 s): a publisher keeping alive by it is never closed first.
    EXPECT_NE(setup.headers.get("Session")->find(";timeout=30"), std::string::npos);
    ASSERT_EQ(ask(id, test::request_text("RECORD", url("?secret=" + std::string(kSecret)), 4,
                                         "Session: " + session + "\r\n"))
                  .status,
              200);
  }
  // The sample's video packets [from, to) as interleaved RTP on channel 0.
  void send_video(std::uint64_t id, std::size_t from, std::size_t to, char channel = 0,
                  int payload_type = 96) {
    const auto& file = *test::sample_media();
    std::string frames;
    for (std::size_t i = from; i < to && i < file.packets().size(); ++i) {
      const auto& p = file.packets()[i];
      if (p.stream != *file.video_stream()) continue;
      const auto payload = file.payload(p);
      const std::size_t n = 12 + payload.size();
      const std::uint32_t ts = p.rtp_timestamp;
      const char rtp[12] = {'\x80',
                            static_cast<char>((p.marker ? 0x80 : 0) | payload_type),
                            static_cast<char>(i >> 8),
                            static_cast<char>(i),
                            static_cast<char>(ts >> 24),
                            static_cast<char>(ts >> 16),
                            static_cast<char>(ts >> 8),
                            static_cast<char>(ts),
                            0,
                            0,
                            0,
                            1};
      frames += '$';
      frames += channel;
      frames += static_cast<char>(n >> 8);
      frames += static_cast<char>(n);
      frames.append(rtp, 12);
      frames.append(reinterpret_cast<const char*>(payload.data()), payload.size());
    }
    srv->receive(id,
                 std::span(reinterpret_cast<const std::uint8_t*>(frames.data()), frames.size()));
  }
};

TEST(LivePublish, APublisherRecordsAndViewersSeeTheStreamUntilItLeaves) {
  Bed b;
  const auto viewer = b.connect(41000);
  EXPECT_EQ(b.ask(viewer, test::request_text("DESCRIBE", Bed::url(), 1)).status, 404)
      << "nobody publishes yet";
  const auto wrong = b.connect(41001);
  EXPECT_EQ(b.announce(wrong, "0123456789abcdeX").status, 403);
  EXPECT_EQ(b.announce(wrong, "").status, 403);
  auto on_file = b.ask(wrong, test::request_text("ANNOUNCE",
                                                 "rtsp://127.0.0.1:8554/sample"
                                                 "?secret=0123456789abcdef",
                                                 5));
  EXPECT_EQ(on_file.status, 405);

  const auto pub = b.connect(41002);
  b.publish(pub);
  const auto second = b.connect(41003);
  EXPECT_EQ(b.announce(second, Bed::kSecret).status, 455);

  const auto& file = *test::sample_media();
  b.send_video(pub, 0, file.blocks()[2].first_packet + 5);
  auto describe = b.ask(viewer, test::request_text("DESCRIBE", Bed::url(), 2));
  ASSERT_EQ(describe.status, 200);
  auto sdp = rtsp::parse_sdp(describe.body);
  ASSERT_TRUE(sdp.ok());
  ASSERT_EQ(sdp->media.size(), 1u);
  EXPECT_EQ(sdp->media[0].rtpmap, "H264/90000");
  EXPECT_NE(sdp->media[0].fmtp.find("sprop-parameter-sets=Z2QADazZQUH7"), std::string::npos);
  auto setup =
      b.ask(viewer, test::request_text("SETUP", Bed::url() + "/trackID=0", 3,
                                       "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n"));
  EXPECT_EQ(setup.status, 200);
  const auto& stats = b.srv->stats();
  EXPECT_EQ(stats.publishes, 1u);
  EXPECT_EQ(stats.publishes_refused, 4u);  // two wrong secrets, a file stream, a second publisher
  EXPECT_GT(stats.publish_packets, 100u);

  b.srv->detach_connection(pub);  // the publisher hangs up
  const auto late = b.connect(41004);
  EXPECT_EQ(b.ask(late, test::request_text("DESCRIBE", Bed::url(), 1)).status, 404);
  EXPECT_EQ(b.announce(second, Bed::kSecret).status, 200) << "the stream is free again";
}

TEST(LivePublish, APublisherOverUdpIsToldTheServerPort) {
  Bed b;
  const auto pub = b.connect(43000);
  ASSERT_EQ(b.announce(pub, Bed::kSecret).status, 200);
  auto setup = b.ask(
      pub,
      test::request_text("SETUP", Bed::url("?secret=0123456789abcdef/streamid=0"), 3,
                         "Transport: RTP/AVP/UDP;unicast;client_port=5000-5001;mode=record\r\n"));
  ASSERT_EQ(setup.status, 200);
  auto spec = rtsp::parse_transport(*setup.headers.get("Transport"));
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE((*spec)[0].server_port);
  EXPECT_EQ((*spec)[0].server_port->rtp, b.srv->rtp_port());
  EXPECT_EQ((*spec)[0].client_port->rtp, 5000);
  EXPECT_EQ(b.ask(pub, test::request_text("RECORD", Bed::url(), 4,
                                          "Session: " + test::session_of(setup) + "\r\n"))
                .status,
            200);
  auto multicast =
      b.ask(b.connect(43001), test::request_text("SETUP", Bed::url() + "/streamid=0", 5,
                                                 "Transport: RTP/AVP;multicast\r\n"));
  EXPECT_NE(multicast.status, 200);
}

// What GStreamer 1.22's rtspclientsink sends (filesrc ! qtdemux, h264parse and opusparse into
// it): the audio first, controls "stream=N", the query kept at the end of its SETUP URLs, the
// transport's mode in capitals, and a PAUSE at its end of stream before the TEARDOWN.
constexpr std::string_view kGstreamerSdp =
    "v=0\r\no=- 1795320320 1 IN IP4 127.0.0.1\r\ns=Session streamed with GStreamer\r\n"
    "i=rtspclientsink\r\nt=0 0\r\na=tool:GStreamer\r\n"
    "m=audio 0 RTP/AVP 96\r\nc=IN IP4 0.0.0.0\r\nb=AS:79\r\na=rtpmap:96 OPUS/48000/2\r\n"
    "a=fmtp:96 sprop-stereo=0;sprop-maxcapturerate=48000\r\na=control:stream=1\r\n"
    "a=ts-refclk:local\r\na=mediaclk:sender\r\na=ssrc:3589087863 cname:user@host-220820b8\r\n"
    "m=video 0 RTP/AVP 99\r\nc=IN IP4 0.0.0.0\r\nb=AS:58\r\na=rtpmap:99 H264/90000\r\n"
    "a=framerate:25\r\na=fmtp:99 packetization-mode=1;"
    "sprop-parameter-sets=Z2QADazZQUH7ARAAAAMAEAAAAwMg8UKZYA==,aOvjyyLA\r\n"
    "a=control:stream=0\r\na=ts-refclk:local\r\na=mediaclk:sender\r\n"
    "a=ssrc:47710781 cname:user@host-220820b8\r\n";

TEST(LivePublish, GStreamersSetupUrlsNameTheTrackBeforeTheQuery) {
  using server::detail::names_published_stream;
  using server::detail::url_control;
  EXPECT_EQ(url_control("rtsp://h/live/stream=0?secret=s"), "stream=0") << "GStreamer";
  EXPECT_EQ(url_control("rtsp://h/live?secret=s/streamid=0"), "streamid=0") << "FFmpeg";
  EXPECT_EQ(url_control("stream=1"), "stream=1");
  auto a = read_announce(kGstreamerSdp);
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_EQ(a->tracks.size(), 2u);
  EXPECT_TRUE(a->tracks[1].video);
  EXPECT_TRUE(a->tracks[0].audio);
  EXPECT_TRUE(names_published_stream("rtsp://h/live/stream=0?secret=s", "live", a->tracks));
  EXPECT_TRUE(names_published_stream("rtsp://h/live/stream=1?secret=s", "live", a->tracks));
  EXPECT_TRUE(names_published_stream("rtsp://h/live?secret=s/streamid=0", "live", a->tracks));
  EXPECT_FALSE(names_published_stream("rtsp://h/live/stream=2?secret=s", "live", a->tracks))
      << "no such control";
  EXPECT_FALSE(names_published_stream("rtsp://h/other/stream=0", "live", a->tracks));
  EXPECT_FALSE(names_published_stream("rtsp://h/liver/stream=0", "live", a->tracks));
  EXPECT_FALSE(names_published_stream("not a url", "live", a->tracks));
}

TEST(LivePublish, GStreamersPublisherRecordsPausesAndTearsDown) {
  Bed b;
  const auto pub = b.connect(44000);
  const std::string query = "?secret=" + std::string(Bed::kSecret);
  const std::string body(kGstreamerSdp);
  ASSERT_EQ(b.ask(pub, test::request_text("ANNOUNCE", Bed::url(query), 2,
                                          "Content-Type: application/sdp\r\nContent-Length: " +
                                              std::to_string(body.size()) + "\r\n") +
                           body)
                .status,
            200);
  auto audio = b.ask(
      pub, test::request_text("SETUP", Bed::url("/stream=1" + query), 3,
                              "Transport: RTP/AVP/TCP;unicast;interleaved=0-1;mode=RECORD\r\n"));
  ASSERT_EQ(audio.status, 200) << audio.body;
  const std::string session = test::session_of(audio);
  auto video =
      b.ask(pub, test::request_text("SETUP", Bed::url("/stream=0" + query), 4,
                                    "Transport: RTP/AVP/TCP;unicast;interleaved=2-3;mode=RECORD\r\n"
                                    "Session: " +
                                        session + "\r\n"));
  ASSERT_EQ(video.status, 200) << video.body;
  EXPECT_NE(video.headers.get("Transport")->find("interleaved=2-3"), std::string::npos);
  ASSERT_EQ(
      b.ask(pub, test::request_text("RECORD", Bed::url(query), 5, "Session: " + session + "\r\n"))
          .status,
      200);
  const auto& file = *test::sample_media();
  b.send_video(pub, 0, file.blocks()[2].first_packet + 5, 2, 99);
  EXPECT_GT(b.srv->stats().publish_packets, 100u);
  EXPECT_EQ(b.srv->stats().publish_dropped, 0u) << "the video on channel 2 with its type 99";
  const auto viewer = b.connect(44001);
  EXPECT_EQ(b.ask(viewer, test::request_text("DESCRIBE", Bed::url(), 1)).status, 200);
  // Its end of stream: PAUSE (was 454 "Session missing"), then TEARDOWN.
  auto pause =
      b.ask(pub, test::request_text("PAUSE", Bed::url(query), 6, "Session: " + session + "\r\n"));
  EXPECT_EQ(pause.status, 200);
  EXPECT_EQ(test::session_of(pause), session);
  EXPECT_NE(pause.headers.get("Session")->find(";timeout=30"), std::string::npos);
  EXPECT_EQ(b.ask(viewer, test::request_text("DESCRIBE", Bed::url(), 2)).status, 200)
      << "still published while paused";
  EXPECT_EQ(
      b.ask(pub, test::request_text("TEARDOWN", Bed::url(query), 7, "Session: " + session + "\r\n"))
          .status,
      200);
  EXPECT_EQ(b.ask(viewer, test::request_text("DESCRIBE", Bed::url(), 3)).status, 404);
}

TEST(LivePublish, WithReplaceASecondPublisherTakesOver) {
  Bed b(true);
  const auto first = b.connect(42000);
  b.publish(first);
  const auto second = b.connect(42001);
  b.publish(second);
  EXPECT_TRUE(b.srv->connection_open(first));
  b.send_video(first, 0, 10);
  EXPECT_FALSE(b.srv->connection_open(first)) << "closed at its next packet";
  EXPECT_EQ(b.srv->stats().publishers_replaced, 1u);
  b.send_video(second, 0, 10);
  EXPECT_TRUE(b.srv->connection_open(second));
}

TEST(LivePublish, AnOriginWithEdgesRedirectsViewersRoundRobinAndServesRelays) {
  Bed b(false, {"rtsp://198.18.2.2:8554/live", "rtsp://198.18.3.2:8554/live"});
  const auto publisher = b.connect(42000);
  b.publish(publisher);  // ANNOUNCE is never redirected
  std::vector<std::string> went;
  for (int i = 0; i < 3; ++i) {
    const auto viewer = b.connect(static_cast<std::uint16_t>(42100 + i));
    const auto r = b.ask(viewer, test::request_text("DESCRIBE", Bed::url(), 2));
    ASSERT_EQ(r.status, 302);
    went.push_back(std::string(r.headers.get("Location").value_or("")));
  }
  EXPECT_EQ(went,
            (std::vector<std::string>{"rtsp://198.18.2.2:8554/live", "rtsp://198.18.3.2:8554/live",
                                      "rtsp://198.18.2.2:8554/live"}));
  EXPECT_EQ(b.srv->stats().redirects, 3u);
  // An edge pulling the stream says so and is served.
  const auto edge = b.connect(42200);
  const auto r = b.ask(edge, test::request_text("DESCRIBE", Bed::url(), 2,
                                                std::string(server::kRelayHeader) + ": 1\r\n"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(b.srv->stats().redirects, 3u);
}

}  // namespace
}  // namespace predrop

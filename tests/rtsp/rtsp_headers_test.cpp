// Session, RTP-Info, Range and URL helpers (rtsp/include/predrop/rtsp/rtsp_headers.hpp).
#include "predrop/rtsp/rtsp_headers.hpp"

#include <gtest/gtest.h>

namespace predrop::rtsp {
namespace {

TEST(SessionHeader, ParsesAndFormats) {
  auto s = parse_session("A1B2C3D4;timeout=60");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->id, "A1B2C3D4");
  EXPECT_EQ(s->timeout_s, 60u);
  EXPECT_EQ(format_session(*s), "A1B2C3D4;timeout=60");
  EXPECT_EQ(format_session({"12345678", std::nullopt}), "12345678");

  s = parse_session(" 880867021 ");  // FFmpeg's own server: no timeout
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->id, "880867021");
  EXPECT_FALSE(s->timeout_s);

  s = parse_session("abc$-_.+ ; Timeout = 5 ;other=1");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->id, "abc$-_.+");
  EXPECT_EQ(s->timeout_s, 5u);
}

TEST(SessionHeader, RefusesBadIds) {
  for (const char* bad : {"", ";timeout=5", "a b", "a/b", "id;timeout=x", "id;timeout=-1"}) {
    EXPECT_FALSE(parse_session(bad).ok()) << bad;
  }
  EXPECT_FALSE(parse_session(std::string(65, 'a')).ok());
  EXPECT_TRUE(is_valid_session_id(std::string(64, 'a')));
}

TEST(RtpInfo, FormatsAndParses) {
  const std::vector<RtpInfoEntry> entries = {{"rtsp://h/x/trackID=0", 17, 123456},
                                             {"rtsp://h/x/trackID=1", 65535, std::nullopt}};
  const auto text = format_rtp_info(entries);
  EXPECT_EQ(text,
            "url=rtsp://h/x/trackID=0;seq=17;rtptime=123456,url=rtsp://h/x/trackID=1;seq=65535");
  auto back = parse_rtp_info(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].url, "rtsp://h/x/trackID=0");
  EXPECT_EQ((*back)[0].seq, 17);
  EXPECT_EQ((*back)[0].rtptime, 123456u);
  EXPECT_FALSE((*back)[1].rtptime);
  for (const char* bad : {"", "seq=1", "url=a;seq=70000", "url=a;rtptime=x"}) {
    EXPECT_FALSE(parse_rtp_info(bad).ok()) << bad;
  }
}

TEST(NptRange, ParsesWhatClientsSend) {
  auto r = parse_npt_range("npt=0.000-");  // FFmpeg's PLAY
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->start_s, 0.0);
  EXPECT_FALSE(r->end_s);
  r = parse_npt_range("npt=10-20.5");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->start_s, 10.0);
  EXPECT_EQ(r->end_s, 20.5);
  r = parse_npt_range("npt=now-");
  ASSERT_TRUE(r.ok());
  r = parse_npt_range("npt=0:01:02.5-");
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->start_s, 62.5);
  EXPECT_EQ(format_npt_range({0.0, 12.0}), "npt=0.000-12.000");
  EXPECT_EQ(format_npt_range({1.5, std::nullopt}), "npt=1.500-");
  for (const char* bad : {"smpte=0:10:20-", "npt=5", "npt=-1-", "npt=20-10", "npt=a-"}) {
    EXPECT_FALSE(parse_npt_range(bad).ok()) << bad;
  }
}

TEST(RtspUrl, SplitsWhatFfmpegSends) {
  auto u = parse_rtsp_url("rtsp://127.0.0.1:18554/x");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 18554);
  EXPECT_EQ(u->path, "/x");
  EXPECT_EQ(u->stream, "x");
  EXPECT_FALSE(u->track);

  u = parse_rtsp_url("rtsp://127.0.0.1:18554/x/trackID=0");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->stream, "x");
  EXPECT_EQ(u->track, 0u);

  u = parse_rtsp_url("rtsp://127.0.0.1:18554/x/");  // PLAY on the Content-Base
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->stream, "x");
  EXPECT_FALSE(u->track);
}

TEST(RtspUrl, OtherShapes) {
  auto u = parse_rtsp_url("RTSP://user:pw@[::1]/live/cam1/trackid=12?token=abc");
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 554);
  EXPECT_EQ(u->path, "/live/cam1/trackid=12");
  EXPECT_EQ(u->stream, "live/cam1");
  EXPECT_EQ(u->track, 12u);

  u = parse_rtsp_url("rtsp://h");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->path, "/");
  EXPECT_EQ(u->stream, "");

  u = parse_rtsp_url("rtsp://h/streamid=1");  // FFmpeg's own control names
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->stream, "");
  EXPECT_EQ(u->track, 1u);

  for (const char* bad : {"http://h/x", "rtsp://", "rtsp://:554/x", "rtsp://h:0/x",
                          "rtsp://h:99999/x", "rtsp://h:ab/x", "rtsp://[::1/x",
                          "rtsp://h/x/trackID=abc", "rtsp://h/a b", "rtsps://h/x"}) {
    EXPECT_FALSE(parse_rtsp_url(bad).ok()) << bad;
  }
}

TEST(RtspUrl, ResolvesControlAttributes) {
  EXPECT_EQ(resolve_control_url("rtsp://h/x", "trackID=0"), "rtsp://h/x/trackID=0");
  EXPECT_EQ(resolve_control_url("rtsp://h/x/", "trackID=0"), "rtsp://h/x/trackID=0");
  EXPECT_EQ(resolve_control_url("rtsp://h/x?t=1", "/trackID=0"), "rtsp://h/x/trackID=0");
  EXPECT_EQ(resolve_control_url("rtsp://h/x", "*"), "rtsp://h/x");
  EXPECT_EQ(resolve_control_url("rtsp://h/x", "rtsp://o/y/1"), "rtsp://o/y/1");
}

}  // namespace
}  // namespace predrop::rtsp

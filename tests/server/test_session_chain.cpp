// A stream session's chain settings (server/src/session_chain.hpp): the transmitter's tracks
// and CNAME, the intake's tracks and modes, the stream-to-track map, the page's video track and
// the per-packet link overhead; set-up errors as exceptions.
#include "session_chain.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "predrop/core/stage_report.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/wire/rtp.hpp"

namespace predrop::server::detail {
namespace {

std::vector<media::StreamInfo> video_then_audio() {
  std::vector<media::StreamInfo> streams(2);
  streams[0].kind = media::MediaKind::kVideo;
  streams[0].payload_type = 96;
  streams[0].clock_rate = 90000;
  streams[1].kind = media::MediaKind::kAudio;
  streams[1].payload_type = 97;
  streams[1].clock_rate = 48000;
  return streams;
}

SessionTrack track(std::uint8_t stream, std::uint32_t ssrc) {
  SessionTrack t;
  t.media_stream = stream;
  t.ssrc = ssrc;
  t.initial_sequence = static_cast<std::uint16_t>(ssrc);
  t.timestamp_offset = ssrc * 10;
  return t;
}

TEST(SessionChain, TracksFollowTheirStreamsInTheClientsOrder) {
  StreamSessionConfig config;
  config.number = 7;
  config.tracks = {track(1, 11), track(0, 22)};  // audio set up first
  config.tracks[1].payload_type = 102;           // a browser's payload type for the video
  const SessionChain c = session_chain(config, video_then_audio());
  EXPECT_EQ(c.track_of_stream, (std::vector<int>{1, 0}));
  EXPECT_FALSE(c.filter_streams);
  EXPECT_EQ(c.page_track, 1u);  // the first video track
  EXPECT_EQ(c.transmitter.cname, "predrop-7");
  ASSERT_EQ(c.transmitter.tracks.size(), 2u);
  EXPECT_EQ(c.transmitter.tracks[0].ssrc, 11u);
  EXPECT_EQ(c.transmitter.tracks[0].payload_type, 97);  // the stream's own
  EXPECT_EQ(c.transmitter.tracks[0].timestamp_offset, 110u);
  EXPECT_EQ(c.transmitter.tracks[1].payload_type, 102);
  ASSERT_EQ(c.intake.tracks.size(), 2u);
  EXPECT_EQ(c.intake.tracks[0].clock_rate, 48000u);
  EXPECT_EQ(c.intake.tracks[1].initial_sequence, 22);
}

TEST(SessionChain, Vp8AndVp9TracksRenumberTheirPictureIds) {
  auto streams = video_then_audio();
  StreamSessionConfig config;
  config.tracks = {track(0, 1), track(1, 2)};
  EXPECT_EQ(session_chain(config, streams).transmitter.tracks[0].picture_id,
            chain::PictureIdField::kNone);  // H.264
  streams[0].codec = media::Codec::kVp8;
  EXPECT_EQ(session_chain(config, streams).transmitter.tracks[0].picture_id,
            chain::PictureIdField::kVp8);
  streams[0].codec = media::Codec::kVp9;
  const SessionChain c = session_chain(config, streams);
  EXPECT_EQ(c.transmitter.tracks[0].picture_id, chain::PictureIdField::kVp9);
  EXPECT_EQ(c.transmitter.tracks[1].picture_id, chain::PictureIdField::kNone);
}

TEST(SessionChain, AStreamNotSetUpIsFilteredOut) {
  StreamSessionConfig config;
  config.tracks = {track(1, 11)};
  const SessionChain c = session_chain(config, video_then_audio());
  EXPECT_EQ(c.track_of_stream, (std::vector<int>{-1, 0}));
  EXPECT_TRUE(c.filter_streams);
  EXPECT_EQ(c.page_track, 0u);
}

TEST(SessionChain, TheIntakeReadsReceiverReportsOnlyWithoutPdfb) {
  StreamSessionConfig config;
  config.tracks = {track(0, 1)};
  config.rr_adaptation = true;
  EXPECT_FALSE(session_chain(config, video_then_audio()).intake.rr_reports);
  config.feedback = false;
  const SessionChain c = session_chain(config, video_then_audio());
  EXPECT_TRUE(c.intake.rr_reports);
  EXPECT_FALSE(c.intake.pdfb);
}

TEST(SessionChain, ThePacketOverheadIsTheRtpHeaderTheSrtpTagAndTheLinks) {
  StreamSessionConfig config;
  config.tracks = {track(0, 1)};
  const std::size_t plain = wire::rtp_header_size(config.extension_ids) + core::kLinkOverheadBytes;
  EXPECT_EQ(session_chain(config, video_then_audio()).packet_overhead, plain);
  config.srtp_suite = wire::SrtpSuite::AesCm128HmacSha1_80;
  EXPECT_EQ(session_chain(config, video_then_audio()).packet_overhead,
            plain + net::srtp_rtp_tag_size(*config.srtp_suite));
}

TEST(SessionChain, ATrackForAStreamTheSourceLacksOrTooManyTracksAreRefused) {
  StreamSessionConfig config;
  config.tracks = {track(2, 1)};
  EXPECT_THROW(session_chain(config, video_then_audio()), std::runtime_error);
  config.tracks.assign(media::kMaxSourceStreams + 1, track(0, 1));
  EXPECT_THROW(session_chain(config, video_then_audio()), std::runtime_error);
}

}  // namespace
}  // namespace predrop::server::detail

// A session's SR entries (server/src/sender_report_table.hpp): one per track with its SSRC,
// timestamp offset, clock and counts; the first video track named; the RTX stream's entry only
// once it retransmitted, with the repaired track's timestamps and RTCP way.
#include "sender_report_table.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace predrop::server::detail {
namespace {

std::vector<media::StreamInfo> audio_then_video() {
  std::vector<media::StreamInfo> streams(2);
  streams[0].kind = media::MediaKind::kAudio;
  streams[0].clock_rate = 48000;
  streams[1].kind = media::MediaKind::kVideo;
  streams[1].clock_rate = 90000;
  return streams;
}

std::vector<SessionTrack> both_tracks() {
  std::vector<SessionTrack> tracks(2);
  tracks[0].media_stream = 0;
  tracks[0].ssrc = 0xA0;
  tracks[0].timestamp_offset = 1000;
  tracks[1].media_stream = 1;
  tracks[1].ssrc = 0xB0;
  tracks[1].timestamp_offset = 2000;
  return tracks;
}

TEST(SenderReportTable, AnEntryPerTrackAndTheFirstVideoTrackNamed) {
  const auto streams = audio_then_video();
  const auto tracks = both_tracks();
  const std::array<chain::TrackCounters, 2> sent{chain::TrackCounters{5, 500},
                                                 chain::TrackCounters{7, 7000}};
  const SenderReportTable table =
      sender_report_table(tracks, streams, sent, std::nullopt, chain::RetransmitStats{});
  ASSERT_EQ(table.tracks().size(), 2u);
  EXPECT_EQ(table.video, 1u);
  const SenderReports::Track& audio = table.tracks()[0];
  EXPECT_EQ(audio.ssrc, 0xA0u);
  EXPECT_EQ(audio.timestamp_offset, 1000u);
  EXPECT_EQ(audio.clock_rate, 48000u);
  EXPECT_EQ(audio.packets, 5u);
  EXPECT_EQ(audio.octets, 500u);
  EXPECT_FALSE(audio.transport_track.has_value());
  EXPECT_EQ(table.tracks()[1].clock_rate, 90000u);
  EXPECT_EQ(table.tracks()[1].octets, 7000u);
}

TEST(SenderReportTable, NoVideoTrackWhenOnlyAudioIsSetUp) {
  const auto streams = audio_then_video();
  const std::vector<SessionTrack> tracks{both_tracks()[0]};
  const std::array<chain::TrackCounters, 1> sent{};
  const auto table =
      sender_report_table(tracks, streams, sent, std::nullopt, chain::RetransmitStats{});
  EXPECT_EQ(table.tracks().size(), 1u);
  EXPECT_FALSE(table.video.has_value());
}

TEST(SenderReportTable, TheRtxStreamFollowsOnceItRetransmitted) {
  const auto streams = audio_then_video();
  const auto tracks = both_tracks();
  const std::array<chain::TrackCounters, 2> sent{};
  chain::RetransmitConfig rtx_config;
  rtx_config.track = 1;
  rtx_config.ssrc = 0xC0;
  chain::RetransmitStats rtx;
  EXPECT_EQ(sender_report_table(tracks, streams, sent, rtx_config, rtx).tracks().size(), 2u);
  rtx.sent = 3;
  rtx.octets = 3600;
  const auto table = sender_report_table(tracks, streams, sent, rtx_config, rtx);
  ASSERT_EQ(table.tracks().size(), 3u);
  const SenderReports::Track& entry = table.tracks()[2];
  EXPECT_EQ(entry.ssrc, 0xC0u);
  EXPECT_EQ(entry.timestamp_offset, 2000u);  // the repaired video's
  EXPECT_EQ(entry.clock_rate, 90000u);
  EXPECT_EQ(entry.packets, 3u);
  EXPECT_EQ(entry.octets, 3600u);
  EXPECT_EQ(entry.transport_track, 1u);
  // A retransmission configured for a track the session does not have: no entry.
  rtx_config.track = 2;
  EXPECT_EQ(sender_report_table(tracks, streams, sent, rtx_config, rtx).tracks().size(), 2u);
}

}  // namespace
}  // namespace predrop::server::detail

#pragma once
// Private to media/src: the audio track of a live source (live_source.cpp, docs/live.md
// "Audio"). A publisher's AAC (RFC 3640) or Opus (RFC 7587) RTP is passed through, never
// discarded, and put on the video's timeline through both tracks' RTCP sender reports
// (RFC 3550 §6.4.1: the two RTP clocks against one NTP clock); until both came (GStreamer sends
// its first a second or two into the stream), by its arrival against the pictures' arrivals,
// then moved to the reports' place if that is more than kKeepWithinUs off. It keeps the audio of
// the block in progress: the live source's cut takes what falls before the next block's start, the
// rest waits for the next block. An AAC packet larger than the server's payload size is split
// between its access units. Threading: the live source's writer only.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "predrop/media/live_source.hpp"

namespace predrop::media::detail {

/// Where the video's timeline stands when an audio packet comes (the live source's writer).
struct LiveVideoClock {
  std::uint32_t clock_rate = 90000;
  std::uint32_t last_timestamp = 0;   ///< The last picture's RTP timestamp.
  std::int64_t unwrapped = 0;         ///< It unwrapped to 64 bits.
  std::int64_t origin = 0;            ///< The unwrapped tick that is timeline 0.
  std::int64_t block_start_us = 0;    ///< The block in progress: its start,
  std::int64_t block_max_pts_us = 0;  ///< its latest picture,
  std::size_t block_packets = 0;      ///< and its video packets.
  /// Where the audio packet's arrival falls on the timeline by the pictures' arrivals (the
  /// arrival plus the least lead of a recent picture's timestamp over its own arrival); nullopt
  /// before the first picture. Places audio until the sender reports come.
  std::optional<std::int64_t> arrival_on_timeline_us;
};

/// A live stream's audio track (see the file comment).
class LiveAudioTrack {
 public:
  /// Timestamps that jump by more than this (µs) resynchronise the track.
  static constexpr std::int64_t kMaxJumpUs = LiveSource::kMaxJumpUs;
  /// Audio placed by its arrival is moved onto the sender reports' place when they come only if
  /// the two differ by more than this (µs): half an AAC frame at 48 kHz; less is kept, so that
  /// the audio's timestamps run on without a step.
  static constexpr std::int64_t kKeepWithinUs = 10'000;

  /// `max_payload` and `max_block_packets` as the live source's (LiveSourceOptions).
  LiveAudioTrack(const LiveAudioSpec& spec, std::size_t max_payload, std::size_t max_block_packets);

  /// One audio RTP packet while the video has a block in progress: kept in that block's audio,
  /// or dropped (counted) when it cannot be placed yet or there is no room.
  void push(std::uint32_t timestamp, bool marker, std::span<const std::uint8_t> payload,
            const LiveVideoClock& video);
  /// An RTCP sender report of stream `stream` (0 video, 1 audio).
  void sender_report(std::size_t stream, std::uint64_t ntp, std::uint32_t rtp_timestamp);
  /// The reports are forgotten (a new RTP stream: its own timestamps and reports).
  void forget_reports();
  /// The next packet synchronises again (the video's timeline restarted).
  void forget_timeline() { synced_ = false; }
  /// Drops the audio of the block in progress.
  void clear();
  /// The block in progress is cut: its audio before `next_start_us` (all of it if `last`) is
  /// appended to `arena` and `packets` (stream 1, frames from `first_frame` on, send offsets
  /// within [0, duration_us) of `start_us`); the rest stays for the next block.
  void cut(std::int64_t next_start_us, bool last, std::int64_t start_us, std::int64_t duration_us,
           std::uint32_t first_frame, std::vector<std::uint8_t>& arena,
           std::vector<RtpPacket>& packets);

  /// Audio packets held for the block in progress.
  std::size_t pending() const { return sounds_.size(); }
  /// The track's RTP clock rate.
  std::uint32_t clock_rate() const { return clock_; }
  /// Packets (or parts of them) dropped so far.
  std::uint64_t dropped() const { return dropped_; }
  /// Packets placed by their arrival, before both sender reports came.
  std::uint64_t by_arrival() const { return by_arrival_; }
  /// When the reports came after audio placed by arrival: their place minus the arrival's (µs)
  /// for the first packet after them (the step applied when larger than kKeepWithinUs).
  std::optional<std::int64_t> report_offset_us() const { return report_offset_us_; }

 private:
  // A packet's payload (in bytes_) and its place on the timeline.
  struct Sound {
    std::int64_t t_us = 0;
    std::uint32_t rtp = 0;  // relative to the audio's origin (timeline 0)
    std::uint32_t offset = 0;
    std::uint16_t size = 0;
    bool marker = false;
  };
  struct Report {
    std::uint64_t ntp = 0;
    std::uint32_t rtp = 0;
  };
  static constexpr std::int64_t kAacFrameSamples = 1024;

  // Where `timestamp` is on the timeline (µs), by the sender reports; nullopt: not yet.
  std::optional<std::int64_t> map_to_video(std::uint32_t timestamp,
                                           const LiveVideoClock& video) const;
  void add_sound(std::int64_t rel, bool marker, std::span<const std::uint8_t> head,
                 std::span<const std::uint8_t> body, std::size_t video_packets);
  bool split_aac(std::int64_t rel, bool marker, std::span<const std::uint8_t> payload,
                 std::size_t video_packets);

  LiveAudioSpec spec_;
  std::uint32_t clock_;
  std::size_t max_payload_;
  std::size_t max_block_packets_;
  std::array<std::optional<Report>, 2> reports_{};
  // RTP timestamps unwrapped, with the tick that is timeline 0 (origin_).
  bool synced_ = false;
  bool by_reports_ = false;  // synced by the sender reports, not by arrival
  std::uint32_t last_ = 0;
  std::int64_t unwrapped_ = 0;
  std::int64_t origin_ = 0;
  // The block in progress: its packets' payloads and places; scratch for cut() and split_aac().
  std::vector<std::uint8_t> bytes_, carry_;
  std::vector<Sound> sounds_, later_;
  std::vector<std::span<const std::uint8_t>> aus_;
  std::vector<std::uint8_t> head_, body_;
  std::uint64_t dropped_ = 0;
  std::uint64_t by_arrival_ = 0;
  std::optional<std::int64_t> report_offset_us_;
};

}  // namespace predrop::media::detail

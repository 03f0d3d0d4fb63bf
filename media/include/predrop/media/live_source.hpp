#pragma once
// A live BlockSource (docs/media.md "Sources", docs/live.md): blocks are cut as a publisher's
// RTP arrives. The writer (the thread of the RTSP connection that publishes) pushes RTP packets
// of the H.264 stream; they are depacketized (single NAL unit, STAP-A, FU-A: H264Depacketizer)
// into access units, which are packetized once more with the server's payload size (in-band
// SPS/PPS before every key frame, as a file's are) and collected into the block in progress.
// A block is cut at the first IDR picture at or after the block duration, so every block a
// reader can join at starts with a key frame; a stream whose key frames are further apart than
// twice the block duration is cut at a reference picture instead (a block that is no join point).
// The block is published whole when the next one starts: it is complete before any reader gets
// it, so the priority discard sees the whole block as it does for a file (importance ranked per
// block, docs/design.md §3.3), and the stream is one block (plus the wait for the key frame)
// behind its publisher: LiveSourceStats::hold_us measures it.
//
// Published blocks are immutable and kept in a bounded ring (LiveSourceOptions::ring_blocks);
// readers get them without a copy (SourceBlock::hold keeps a dropped one alive while read).
// Pictures before the first IDR cannot be decoded by anyone and are dropped (counted). Hostile
// input (garbage payloads, timestamps that jump, giant pictures) is counted and skipped: a
// picture that would not fit a block's packet bound is dropped with everything up to the next
// IDR, a timestamp that goes backwards or jumps by more than kMaxJumpUs restarts the cut at the
// next IDR. Nothing the publisher sends can make a block exceed max_block_packets().
//
// Audio (push_audio(), docs/live.md "Audio"): an AAC or Opus track's packets are passed
// through, never discarded, put on the video's timeline through the RTCP sender reports (the
// audio track, media/src/live_audio.hpp).
//
// Threading: push_video(), push_audio() and sender_report() on one writer thread at a time, end()
// on any (a writer mutex, never contended but by an end() from elsewhere: a replacing publisher);
// read(), join_sequence(), stats() and the other BlockSource queries on any thread (a mutex around
// the ring, taken once per block read).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/media/block_source.hpp"
#include "predrop/media/latm.hpp"
#include "predrop/media/media_file.hpp"

namespace predrop::media {

/// How a live source cuts and keeps its blocks.
struct LiveSourceOptions {
  /// Largest RTP payload of the packets it makes (the server's rtp_payload_bytes).
  std::size_t max_payload = 1200;
  /// Target block duration in µs (blocks.duration_ms): a block ends at the first IDR at or after.
  std::int64_t block_us = 1'000'000;
  /// Published blocks kept for readers (a reader further behind rejoins at a key block).
  std::size_t ring_blocks = 8;
  /// The most packets a block may hold (readers size their scratch with it).
  std::size_t max_block_packets = 8192;
  /// Dynamic payload type of the H.264 stream it announces.
  std::uint8_t payload_type = 96;
  /// Dynamic payload type of the audio stream it announces, if it has one.
  std::uint8_t audio_payload_type = 97;
};

/// What a publisher's stream says about its video: from the ANNOUNCE SDP.
struct LiveVideoSpec {
  /// SPS and PPS NAL units from sprop-parameter-sets, Annex B (start codes), may be empty.
  std::vector<std::uint8_t> parameter_sets;
  /// profile-level-id as announced ("" if none).
  std::string profile_level_id;
  /// RTP clock of the publisher's stream (90000 for H.264).
  std::uint32_t clock_rate = 90000;
};

/// What a publisher's stream says about its audio (AAC as mpeg4-generic, RFC 3640, or Opus,
/// RFC 7587): from the ANNOUNCE SDP. Its RTP payloads are passed through as they come (one
/// packet, one "frame"), so the SDP viewers get repeats the publisher's rtpmap and fmtp.
struct LiveAudioSpec {
  Codec codec = Codec::kAac;  ///< kAac or kOpus.
  std::uint32_t clock_rate = 48000;
  std::uint16_t channels = 2;
  std::string encoding;  ///< The rtpmap encoding as announced, e.g. "MPEG4-GENERIC/44100/2".
  std::string fmtp;      ///< The fmtp parameters as announced.
  /// AAC: the AU-header fields' widths in bits (RFC 3640 §3.2.1; AAC-hbr: 13, 3, 3). A packet
  /// larger than the server's payload size is split between its access units (each part with
  /// its own AU headers, its timestamp 1024 samples per AU on); else passed through.
  int size_length = 13;
  int index_length = 3;
  int index_delta_length = 3;
  /// The publisher sends MP4A-LATM (RFC 6416, cpresent=0) with this StreamMuxConfig: its
  /// elements are repacked into AAC-hbr (LatmDepacketizer) before anything else sees them, and
  /// `encoding`/`fmtp` are the MPEG4-GENERIC ones viewers get.
  std::optional<LatmConfig> latm;
  friend bool operator==(const LiveAudioSpec&, const LiveAudioSpec&) = default;
};

/// Counters of a live source (a copy, taken under its lock).
struct LiveSourceStats {
  std::uint64_t packets = 0;          ///< RTP packets pushed.
  std::uint64_t access_units = 0;     ///< Pictures reassembled.
  std::uint64_t damaged_units = 0;    ///< Pictures with a lost packet or dropped fragment.
  std::uint64_t malformed = 0;        ///< Payloads the depacketizer could not use.
  std::uint64_t waiting_for_key = 0;  ///< Pictures dropped before the first IDR (or after a reset).
  std::uint64_t oversized = 0;        ///< Pictures that would not fit a block: dropped.
  std::uint64_t timestamp_resets = 0;  ///< Timestamp went back or jumped: cut restarted at an IDR.
  std::uint64_t restarts = 0;          ///< restart() calls (a pulled stream's reconnections).
  /// Packets that came ahead of a gap and were held until it filled or was given up (the
  /// ingest's reorder window, 8 packets).
  std::uint64_t reordered = 0;
  std::uint64_t late_packets = 0;   ///< Behind what the window released, or duplicates: dropped.
  std::uint64_t audio_packets = 0;  ///< Audio RTP packets pushed.
  /// Of them, not used: no audio track, before the first key frame, a jump, no room in the
  /// block, a malformed LATM packet.
  std::uint64_t audio_dropped = 0;
  /// Audio packets placed by their arrival against the pictures' (before both sender reports).
  std::uint64_t audio_by_arrival = 0;
  /// When the reports came after that: their place minus the arrival's for the next packet, µs
  /// (the audio was moved by it when more than 10 ms); 0 if they never did.
  std::int64_t audio_report_offset_us = 0;
  std::uint64_t blocks = 0;       ///< Blocks published.
  std::uint64_t key_blocks = 0;   ///< Of them, starting with an IDR (join points).
  std::uint64_t forced_cuts = 0;  ///< Cut without a key frame (long GOP or packet bound).
  /// Hold: from the arrival of a block's first packet to its publication (the latency this
  /// source adds on top of the network and the viewer's own buffer), last and largest, µs.
  std::uint64_t hold_us_last = 0;
  std::uint64_t hold_us_max = 0;
  std::uint64_t hold_us_sum = 0;
  bool ended = false;
};

/// A live source fed with a publisher's RTP (see the file comment).
class LiveSource final : public BlockSource {
 public:
  /// Pictures whose timestamps jump by more than this restart the cut (a publisher restart).
  static constexpr std::int64_t kMaxJumpUs = 10'000'000;

  /// With `audio`, the source has a second stream (index 1) of the publisher's audio.
  LiveSource(const LiveVideoSpec& video, const LiveSourceOptions& options,
             const std::optional<LiveAudioSpec>& audio = std::nullopt);
  ~LiveSource() override;
  LiveSource(const LiveSource&) = delete;
  LiveSource& operator=(const LiveSource&) = delete;
  LiveSource(LiveSource&&) = delete;
  LiveSource& operator=(LiveSource&&) = delete;

  /// One RTP packet of the video stream, its header already parsed; `arrival_us` on any
  /// monotonic clock (it measures the hold only).
  void push_video(std::uint16_t sequence, std::uint32_t timestamp, bool marker,
                  std::span<const std::uint8_t> payload, std::uint64_t arrival_us);
  /// One RTP packet of the audio stream (dropped without an audio track). Audio is put on the
  /// video's timeline through the publisher's RTCP sender reports (RFC 3550 §6.4.1: both
  /// tracks' RTP timestamps against one NTP clock), so nothing is kept before both came; each
  /// packet goes into the block whose time it falls in (the block in progress, or the next one
  /// when it is ahead of the cut), with kImportanceNever: audio is never discarded, as a file's.
  void push_audio(std::uint16_t sequence, std::uint32_t timestamp, bool marker,
                  std::span<const std::uint8_t> payload, std::uint64_t arrival_us);
  /// An RTCP sender report of stream `stream` (0 video, 1 audio): its NTP and RTP timestamps.
  void sender_report(std::size_t stream, std::uint64_t ntp, std::uint32_t rtp_timestamp);
  /// The publisher is gone: the block in progress is published as it is, then kEnded.
  void end(std::uint64_t now_us);
  /// The writer's RTP stream starts over (a pulled stream reconnected to its upstream, whose
  /// sequence numbers and timestamps start anywhere; docs/live.md "Pull"): the block in progress
  /// is published as it is, the picture in progress is dropped, and the next IDR continues the
  /// timeline where the last block ended (readers waiting meanwhile resume from it; their
  /// schedule re-anchors on a late block). Published blocks stay readable. Counted in
  /// LiveSourceStats::restarts.
  void restart(std::uint64_t now_us);

  LiveSourceStats stats() const;
  const LiveSourceOptions& options() const { return options_; }

  std::span<const StreamInfo> streams() const override { return streams_; }
  std::optional<std::int64_t> duration_us() const override { return std::nullopt; }
  std::int64_t origin_us() const override { return 0; }
  std::size_t max_block_packets() const override { return options_.max_block_packets; }
  std::uint64_t join_sequence() const override;
  BlockState read(std::uint64_t sequence, SourceBlock& out) const override;
  /// By the publisher's latest video sender report (its NTP time against its RTP timestamp,
  /// which the source maps onto its timeline); forgotten at a restart or a timestamp jump.
  std::optional<std::uint64_t> capture_ntp(std::int64_t media_us) const override;

 private:
  struct Writer;
  struct Entry;
  void publish(std::shared_ptr<Entry> entry);
  void sync_counters();  // the writer's counters into stats_ (mutex_ held)

  LiveSourceOptions options_;
  std::vector<StreamInfo> streams_;
  std::mutex write_mutex_;          // push_video() against an end() from another thread
  std::unique_ptr<Writer> writer_;  // the writer's state (write_mutex_)

  mutable std::mutex mutex_;  // guards what follows
  std::deque<std::shared_ptr<const Entry>> ring_;
  std::uint64_t published_ = 0;
  bool ended_ = false;
  LiveSourceStats stats_;
  // The publisher's clock: the timeline instant of its latest video SR and that SR's NTP time.
  struct CaptureClock {
    std::int64_t timeline_us = 0;
    std::uint64_t ntp = 0;
  };
  std::optional<CaptureClock> capture_;
};

}  // namespace predrop::media

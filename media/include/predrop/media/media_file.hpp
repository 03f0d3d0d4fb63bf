#pragma once
// A media file demuxed and packetized once into RTP payloads, split into frame-aligned blocks
// (the stages of streaming mode, docs/design.md §1), with a per-packet importance for the priority
// discard policy (docs/design.md §3). Built once per file and shared read-only by every session.
//
// Packetization: H.264 per RFC 6184 packetization-mode=1 (single NAL unit packets and FU-A, SPS
// and PPS sent in-band before every keyframe), H.265 per RFC 7798 (single NAL unit packets,
// aggregation packets, fragmentation units; VPS/SPS/PPS in-band before every IRAP picture), VP8
// per RFC 7741 (payload descriptor with a 15-bit PictureID), AAC per RFC 3640 mode AAC-hbr (one
// access unit per packet, fragmented if larger than the payload limit), Opus per RFC 7587 (one
// packet each).
//
// Threading: MediaFile::open may run on any thread; the returned object is immutable, so any
// number of threads may read it concurrently without locks.
// Errors: anything caused by the input (missing, empty, corrupt, unsupported) is returned as a
// core::Error with the path and FFmpeg's reason. Damage after a usable start (a truncated file, a
// corrupt packet) yields a partial MediaFile whose warning_count() says how much was skipped.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/media/codec.hpp"

namespace predrop::media {

/// Kind of media a stream carries.
enum class MediaKind : std::uint8_t { kVideo, kAudio };

/// What a frame is, for importance and statistics.
enum class FrameType : std::uint8_t {
  kAudio,      ///< An audio frame (never dropped by the priority policy).
  kKey,        ///< H.264 IDR (or keyframe-flagged I), H.265 IRAP, VP8 key frame: starts a GOP.
  kIntra,      ///< Non-IDR I picture.
  kPredicted,  ///< P picture (H.265 and VP8: every picture that is not a key frame).
  kBidir,      ///< B picture.
  kUnknown,    ///< Slice header unreadable; treated as a reference frame.
};

/// Importance of packets that must never be dropped: audio and SPS/PPS (core::kNeverDrop).
inline constexpr std::uint8_t kImportanceNever = 255;
/// Importance of every packet of a keyframe other than its parameter sets.
inline constexpr std::uint8_t kImportanceKey = 254;
/// Reference (non-key) frames get kImportanceKey - n for the n-th one in its GOP, down to this.
inline constexpr std::uint8_t kImportanceReferenceMin = 128;
/// Disposable (nal_ref_idc == 0) frames get 0 ..= this, in bit-reversed order within the block.
inline constexpr std::uint8_t kImportanceDisposableMax = 127;

/// How blocks are sized. Cuts fall only between frames (see Block).
struct BlockSize {
  enum class Unit : std::uint8_t { kDuration, kBytes };
  Unit unit = Unit::kDuration;
  /// Microseconds of media time (kDuration) or RTP payload bytes (kBytes) per block; > 0.
  std::uint64_t value = 1'000'000;
};

/// Settings of MediaFile::open.
struct PacketizeOptions {
  /// Largest RTP payload in bytes (without RTP header, extensions or SRTP tag); 64 ..= 65000.
  std::size_t max_payload = 1200;
  /// Block size by duration or by bytes.
  BlockSize block{};
  /// Dynamic RTP payload types announced in the SDP.
  std::uint8_t video_payload_type = 96;
  std::uint8_t audio_payload_type = 97;
};

/// One packetized stream and its SDP pieces (RFC 4566 rtpmap/fmtp), for the RTSP DESCRIBE.
struct StreamInfo {
  MediaKind kind = MediaKind::kVideo;
  Codec codec = Codec::kH264;
  std::uint8_t payload_type = 96;
  /// RTP clock: 90000 for video, the sample rate for AAC, 48000 for Opus (RFC 7587 §4.1).
  std::uint32_t clock_rate = 90000;
  /// Audio channels (0 for video).
  std::uint16_t channels = 0;
  /// Video picture size and nominal frame rate (0 for audio).
  int width = 0;
  int height = 0;
  double frame_rate = 0.0;
  /// The rtpmap encoding, e.g. "H264/90000" or "MPEG4-GENERIC/48000/2".
  std::string encoding;
  /// The fmtp parameters, e.g. "packetization-mode=1; sprop-parameter-sets=...; ...".
  std::string fmtp;
  /// "video" or "audio", for the m= line.
  std::string media() const;
  /// "a=rtpmap:<pt> <encoding>\r\n" plus "a=fmtp:<pt> <fmtp>\r\n" when fmtp is not empty.
  std::string sdp_attributes() const;
};

/// One RTP packet of the shared schedule: everything but the RTP header fields a session owns.
struct RtpPacket {
  /// Offset of the payload in MediaFile::arena().
  std::uint64_t payload_offset = 0;
  /// When the packet is due relative to its block's start, in µs (for pacing): its frame's media
  /// time plus its share of the frame's spread (docs/media.md); non-decreasing within a block and
  /// within [0, block duration).
  std::int64_t send_offset_us = 0;
  /// RTP timestamp in the stream's clock relative to the file's origin (sessions add their own
  /// random offset). Equal for every packet of a frame; for video it is the presentation time,
  /// so with B-frames it is not monotonic in send (decode) order (RFC 6184 §5.1).
  std::uint32_t rtp_timestamp = 0;
  /// Index of the packet's frame in MediaFile::frames().
  std::uint32_t frame = 0;
  /// Payload size in bytes, <= PacketizeOptions::max_payload.
  std::uint16_t payload_size = 0;
  /// Index of the packet's stream in MediaFile::streams().
  std::uint8_t stream = 0;
  /// Lower is dropped first; kImportanceNever is never dropped. Equal for every packet of a
  /// frame except in-band SPS/PPS, which are kImportanceNever.
  std::uint8_t importance = 0;
  FrameType frame_type = FrameType::kUnknown;
  /// RTP marker bit: last packet of a video access unit; complete AAC access unit; first Opus.
  bool marker = false;
};

/// One audio or video frame (an AVPacket of the source), in send order.
struct Frame {
  /// Presentation time relative to the file's origin (the video stream's start), in µs.
  std::int64_t pts_us = 0;
  /// Duration in µs as the container states it (0 if unknown).
  std::int64_t duration_us = 0;
  /// Its packets are packets()[first_packet, first_packet + packet_count).
  std::uint32_t first_packet = 0;
  std::uint32_t packet_count = 0;
  /// Sum of its payload sizes.
  std::uint32_t bytes = 0;
  std::uint32_t block = 0;
  std::uint32_t rtp_timestamp = 0;
  /// Video: position in presentation order (0-based; equals the reference decoder's frame index).
  /// Audio: -1.
  std::int32_t display_index = -1;
  std::uint8_t stream = 0;
  std::uint8_t importance = 0;
  FrameType type = FrameType::kUnknown;
  /// Video: another frame may reference it (H.264 nal_ref_idc != 0, H.265 not a sub-layer
  /// non-reference NAL type, VP8 refreshes a reference buffer or the entropy context, AV1 some
  /// frame of the temporal unit has refresh_frame_flags != 0). Audio: false.
  bool reference = false;
  /// Video: temporal sub-layer (H.265 TemporalId, AV1 temporal_id; 0 for H.264, VP8, VP9).
  /// Higher goes first.
  std::uint8_t temporal_id = 0;
};

/// One stage: a frame-aligned run of the packet sequence.
///
/// Video cuts fall only where every frame before the cut (in decode order) is presented before
/// every frame after it, so each block shows a contiguous run of display indices and a frame's
/// packets never straddle two blocks. Duration blocks cut at the first such point at or after
/// each multiple of the block duration (no drift); byte blocks cut once the block holds at least
/// the byte budget. Audio frames go to the block whose time range covers their pts.
struct Block {
  std::uint32_t index = 0;
  /// Media time of the block start (the pts of its first displayed frame), µs from the origin.
  std::int64_t start_us = 0;
  /// Until the next block's start (the last block: until the end of its last frame), in µs.
  std::int64_t duration_us = 0;
  /// Its packets are packets()[first_packet, first_packet + packet_count).
  std::uint32_t first_packet = 0;
  std::uint32_t packet_count = 0;
  /// Its frames (audio and video, send order) are frames()[first_frame, first_frame + frame_count).
  std::uint32_t first_frame = 0;
  std::uint32_t frame_count = 0;
  /// The video frames it shows are display indices [first_display, first_display + display_count).
  std::uint32_t first_display = 0;
  std::uint32_t display_count = 0;
  /// Sum of its payload sizes.
  std::uint64_t bytes = 0;
};

/// A packetized media file, immutable after open(). See the file comment.
class MediaFile {
 public:
  /// Demuxes `path` (MP4, MKV, MPEG-TS, WAV, MP3, ...), packetizes its first H.264, H.265, VP8 or
  /// VP9 video stream and its first AAC, Opus, MP3 or PCM (s16/s24) audio stream, and splits the
  /// result into blocks. A stream of
  /// another codec is skipped and named in skipped(); with nothing supported left, an error.
  static core::Result<std::shared_ptr<const MediaFile>> open(const std::string& path,
                                                             const PacketizeOptions& options = {});

  /// The options it was built with.
  const PacketizeOptions& options() const { return options_; }
  /// Packetized streams: the video stream first if there is one; RtpPacket::stream indexes this.
  std::span<const StreamInfo> streams() const { return streams_; }
  /// Index in streams() of the video (resp. audio) stream, if present.
  std::optional<std::uint8_t> video_stream() const { return video_stream_; }
  std::optional<std::uint8_t> audio_stream() const { return audio_stream_; }

  /// Every packet, in send order (block by block).
  std::span<const RtpPacket> packets() const { return packets_; }
  /// Every frame, in send order; frames()[p.frame] is packet p's frame.
  std::span<const Frame> frames() const { return frames_; }
  /// The blocks, in order.
  std::span<const Block> blocks() const { return blocks_; }
  /// Video frames in presentation order: frames()[video_display_order()[d]] has display index d.
  std::span<const std::uint32_t> video_display_order() const { return display_order_; }

  /// Payload bytes of a packet (a view into the shared arena).
  std::span<const std::uint8_t> payload(const RtpPacket& packet) const {
    return {arena_.data() + packet.payload_offset, packet.payload_size};
  }
  /// The packets of a block.
  std::span<const RtpPacket> packets(const Block& block) const {
    return std::span<const RtpPacket>(packets_).subspan(block.first_packet, block.packet_count);
  }
  /// Importance of a block's packets, contiguous, as core::DiscardPlanner::plan takes it.
  std::span<const std::uint8_t> importance(const Block& block) const {
    return std::span<const std::uint8_t>(importance_)
        .subspan(block.first_packet, block.packet_count);
  }
  /// Display index of the video frame with this RTP timestamp (relative to the origin), if any.
  std::optional<std::uint32_t> display_index_for_rtp(std::uint32_t rtp_timestamp) const;
  /// Index of the block that shows display index `display_index`, if any.
  std::optional<std::uint32_t> block_for_display(std::uint32_t display_index) const;

  /// The payload arena every RtpPacket::payload_offset points into.
  std::span<const std::uint8_t> arena() const { return arena_; }
  /// Media time from the origin to the end of the last frame, in µs.
  std::int64_t duration_us() const { return duration_us_; }
  /// Number of problems skipped over (unreadable tail, malformed packets, ...).
  std::size_t warning_count() const { return warning_count_; }
  /// The first few warnings as text (at most 16).
  std::span<const std::string> warnings() const { return warnings_; }
  /// One line per audio or video stream of the file that is not served, with the reason.
  std::span<const std::string> skipped() const { return skipped_; }

  MediaFile(const MediaFile&) = delete;
  MediaFile& operator=(const MediaFile&) = delete;
  MediaFile(MediaFile&&) = default;
  MediaFile& operator=(MediaFile&&) = default;
  ~MediaFile() = default;

 private:
  MediaFile() = default;
  friend class MediaFileBuilder;

  PacketizeOptions options_;
  std::vector<StreamInfo> streams_;
  std::optional<std::uint8_t> video_stream_;
  std::optional<std::uint8_t> audio_stream_;
  std::vector<RtpPacket> packets_;
  std::vector<std::uint8_t> importance_;
  std::vector<Frame> frames_;
  std::vector<Block> blocks_;
  std::vector<std::uint32_t> display_order_;
  std::vector<std::uint8_t> arena_;
  std::int64_t duration_us_ = 0;
  std::size_t warning_count_ = 0;
  std::vector<std::string> warnings_;
  std::vector<std::string> skipped_;
};

/// The SDP that FFmpeg's own RTP muxer (av_sdp_create) would announce for the same streams of
/// `path`; a diagnostic and test oracle for StreamInfo's rtpmap/fmtp lines.
core::Result<std::string> ffmpeg_reference_sdp(const std::string& path);

}  // namespace predrop::media

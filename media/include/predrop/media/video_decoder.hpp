#pragma once
// Video decoding (libavcodec: H.264, H.265, VP8, VP9; AV1 with libdav1d) for the receive path and
// for the reference file.
//
// The decoder is set up so that loss never stops it: error concealment guesses motion vectors and
// deblocks (`ec=guess_mvs+deblock`), every frame is output even before the first keyframe and
// even when damaged (`flags2=+showall`, `flags=+output_corrupt`), and errors do not abort
// (`err_detect=ignore_err`). One thread, so output is bit-exact and has no frame-thread delay.
// Pictures come out as 8-bit YUV 4:2:0 (converted with libswscale when the stream is not).
//
// Threading: one instance per stream, used from one thread; instances are independent.
// Errors: create()/open() fail with a core::Error; decoding errors are concealed and counted.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/media/codec.hpp"
#include "predrop/media/video_frame.hpp"

namespace predrop::media {

/// Counters, for statistics and tests.
struct DecoderStats {
  std::uint64_t access_units = 0;
  /// Access units libavcodec rejected (the data was skipped; concealment covers the picture).
  std::uint64_t rejected = 0;
  std::uint64_t frames = 0;
  /// Frames output with the decoder's corrupt flag or decode-error flags set.
  std::uint64_t corrupt_frames = 0;
};

/// Settings of VideoDecoder::create.
struct VideoDecoderOptions {
  /// Optional SPS/PPS in Annex-B form (e.g. from the SDP's sprop-parameter-sets); not needed
  /// when parameter sets come in-band, as MediaFile sends them.
  std::vector<std::uint8_t> parameter_sets;
  /// The codec of the access units (H.264, H.265: Annex B; VP8: one frame each).
  Codec codec = Codec::kH264;
};

/// Decodes access units (Annex-B H.264/H.265, VP8 frames) into YUV 4:2:0 frames.
class VideoDecoder {
 public:
  using Callback = std::function<void(const FrameView&)>;

  /// A decoder whose frames go to `on_frame` (FrameView::pts = the pts passed to decode()).
  static core::Result<std::unique_ptr<VideoDecoder>> create(
      Callback on_frame, const VideoDecoderOptions& options = {});

  /// Decodes one access unit (any monotonic-per-frame `pts`, e.g. the RTP timestamp relative to
  /// the session's offset). Frames that become ready are delivered before it returns. With
  /// B-frames the decoder holds back up to the stream's reorder depth (1 frame for the sample):
  /// the last picture of a block comes out when the next block's first frame is decoded.
  void decode(std::span<const std::uint8_t> access_unit, std::int64_t pts);
  /// Drains the frames held back for reordering (end of stream). Afterwards the decoder starts
  /// afresh: the next access unit should be a keyframe.
  void flush();
  const DecoderStats& stats() const;

  ~VideoDecoder();
  VideoDecoder(const VideoDecoder&) = delete;
  VideoDecoder& operator=(const VideoDecoder&) = delete;

 private:
  struct Impl;
  explicit VideoDecoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Settings of ReferenceDecoder::open.
struct ReferenceOptions {
  /// Decoded frames kept in memory (a sliding window); 0 keeps all. Asking for a frame older than
  /// the window restarts decoding from the beginning of the file.
  std::size_t max_cached_frames = 256;
};

/// Decodes the video of a reference file on demand and serves its frames by display index (the
/// same index as Frame::display_index of a MediaFile built from the same file). A frame the
/// decoder never produced is served as the previous one, which is what a player would show.
class ReferenceDecoder {
 public:
  /// Opens `path` and indexes its video packets (a demux pass, no decoding).
  static core::Result<std::unique_ptr<ReferenceDecoder>> open(const std::string& path,
                                                              const ReferenceOptions& options = {});

  /// Number of video frames in the file.
  std::size_t frame_count() const;
  /// Presentation time of display index `index` in µs from the origin (as in Frame::pts_us).
  std::int64_t pts_us(std::size_t index) const;
  /// The picture with display index `index` (FrameView::pts in µs from the origin). The view is
  /// valid until the next call to frame(). Fails for an index >= frame_count() or when nothing
  /// at all could be decoded up to it.
  core::Result<FrameView> frame(std::size_t index);

  ~ReferenceDecoder();
  ReferenceDecoder(const ReferenceDecoder&) = delete;
  ReferenceDecoder& operator=(const ReferenceDecoder&) = delete;

 private:
  struct Impl;
  explicit ReferenceDecoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace predrop::media

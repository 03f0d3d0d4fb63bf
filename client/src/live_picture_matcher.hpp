#pragma once
// Private to client/src: which reference picture a decoded picture of a live stream is
// (docs/live.md "The measuring client on a live stream"). A live stream's blocks are the
// server's, not the reference file's, and it starts wherever the publisher was when the viewer
// joined: the first decodable picture is found in the reference by its content (the anchor:
// identical, or the nearest above 40 dB, searched over the whole reference); every later one
// by its RTP timestamp from the anchor's, to the nearest reference picture. A picture the
// server dropped leaves its index out, a late or reordered one still lands on its own.
// Threading: the client's loop thread.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "predrop/core/result.hpp"
#include "predrop/media/video_frame.hpp"

namespace predrop::client {

/// The reference pictures a live stream is matched against (display order).
class ReferencePictures {
 public:
  virtual ~ReferencePictures() = default;
  /// Number of pictures.
  virtual std::size_t count() const = 0;
  /// Presentation time of picture `index`, µs, non-decreasing in `index`.
  virtual std::int64_t pts_us(std::size_t index) const = 0;
  /// Picture `index` (valid until the next call).
  virtual core::Result<media::FrameView> picture(std::size_t index) = 0;
};

/// Matches a live stream's decoded pictures to reference pictures (see the file comment).
class LivePictureMatcher {
 public:
  /// The lowest PSNR (dB) at which the nearest reference picture counts as the anchor's.
  static constexpr double kAnchorMinPsnrDb = 40.0;
  /// The RTP clock of the stream's video (ticks per second).
  static constexpr std::int64_t kClockRate = 90'000;

  explicit LivePictureMatcher(ReferencePictures& reference) : reference_(reference) {}

  /// The reference index of decoded picture `f` (f.pts: its RTP time in kClockRate ticks
  /// from any fixed base); nullopt while no anchor is found (the picture is counted in
  /// unanchored(), the next one is tried).
  std::optional<std::size_t> match(const media::FrameView& f);
  /// The reference index of stream time `pts` (needs the anchor: anchored()).
  std::size_t index_at(std::int64_t pts) const;
  bool anchored() const { return anchor_pts_.has_value(); }
  /// The anchor's reference index (0 before it is found).
  std::size_t anchor_index() const { return anchor_index_; }
  /// The highest reference index matched so far.
  std::size_t last_shown() const { return last_shown_; }
  /// Pictures that came before the anchor was found (not matched).
  std::uint32_t unanchored() const { return unanchored_; }

 private:
  std::optional<std::size_t> find_by_content(const media::FrameView& f);

  ReferencePictures& reference_;
  std::optional<std::int64_t> anchor_pts_;
  std::size_t anchor_index_ = 0;
  std::size_t last_shown_ = 0;
  std::uint32_t unanchored_ = 0;
};

}  // namespace predrop::client

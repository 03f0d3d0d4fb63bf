#pragma once
// 8-bit YUV 4:2:0 pictures as the decoders hand them out: a borrowed view and an owning copy.
#include <array>
#include <cstdint>
#include <vector>

namespace predrop::media {

/// A borrowed 8-bit YUV 4:2:0 picture (planes Y, U, V; chroma is ceil(w/2) x ceil(h/2)). Valid
/// only for the duration of the callback (or until the next call) that handed it out.
struct FrameView {
  int width = 0;
  int height = 0;
  /// Timestamp the frame was stamped with: the pts given to VideoDecoder::decode, or µs from the
  /// origin for ReferenceDecoder frames.
  std::int64_t pts = 0;
  std::array<const std::uint8_t*, 3> data{};
  std::array<int, 3> stride{};
  /// libavcodec flagged the picture corrupt. FFmpeg 5.1's H.264 decoder sets this only for
  /// pictures before the first keyframe / recovery point, not for concealed slices: use the
  /// depacketizer's AccessUnit::damaged to know about loss.
  bool corrupt = false;

  /// Width of plane p (0 = Y).
  int plane_width(int p) const { return p == 0 ? width : (width + 1) / 2; }
  /// Height of plane p (0 = Y).
  int plane_height(int p) const { return p == 0 ? height : (height + 1) / 2; }
};

/// An owning, tightly packed YUV 4:2:0 picture. assign() reuses its storage when the size allows.
class YuvFrame {
 public:
  YuvFrame() = default;
  /// A uniform picture of the given size and sample values (e.g. black: 16, 128, 128).
  YuvFrame(int width, int height, std::uint8_t y, std::uint8_t u, std::uint8_t v);

  /// Copies `view` (pixels, size, pts, corrupt flag).
  void assign(const FrameView& view);
  /// A view of this picture, valid while it is neither assigned nor destroyed.
  FrameView view() const;
  bool empty() const { return width_ == 0; }

 private:
  int width_ = 0;
  int height_ = 0;
  std::int64_t pts_ = 0;
  bool corrupt_ = false;
  std::vector<std::uint8_t> pixels_;
};

}  // namespace predrop::media

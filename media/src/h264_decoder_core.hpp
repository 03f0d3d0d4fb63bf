#pragma once
// The libavcodec video decoder (H.264, and since issue 24 any codec of codec.hpp; the name is
// historical) shared by VideoDecoder (depacketized access units) and ReferenceDecoder
// (container samples): one codec context, one reusable packet, one reusable frame, and a cached
// libswscale conversion to YUV 4:2:0 for streams that are not already 8-bit 4:2:0.
#include <cstdint>
#include <span>
#include <vector>

#include "av_util.hpp"
#include "predrop/core/result.hpp"
#include "predrop/media/video_decoder.hpp"
#include "predrop/media/video_frame.hpp"

namespace predrop::media::detail {

class H264DecoderCore {
 public:
  /// Opens the decoder with the container's parameters (codec and extradata), or for `codec`
  /// with `annexb_extra` (Annex-B parameter sets, may be empty) when `par` is null.
  static core::Result<H264DecoderCore> open(const AVCodecParameters* par,
                                            std::span<const std::uint8_t> annexb_extra,
                                            Codec codec = Codec::kH264);

  /// Sends one sample. `data` is copied into a reused, padded buffer. Returns false if libavcodec
  /// rejected it (counted; decoding continues with the next sample).
  bool send(std::span<const std::uint8_t> data, std::int64_t pts);
  /// Sends end-of-stream so that receive() drains the reorder buffer.
  void send_eof();
  /// After draining: forget references and the EOF state, ready for a stream that starts with a
  /// keyframe.
  void reset() { avcodec_flush_buffers(context_.get()); }
  /// Delivers every frame that is ready to `sink(const FrameView&)`.
  template <typename Sink>
  void receive(Sink&& sink) {
    for (;;) {
      const int err = avcodec_receive_frame(context_.get(), frame_.get());
      if (err < 0) return;  // EAGAIN, EOF, or an error the next send will also see
      FrameView view;
      if (to_view(view)) {
        ++stats_.frames;
        if (view.corrupt) ++stats_.corrupt_frames;
        sink(static_cast<const FrameView&>(view));
      }
      av_frame_unref(frame_.get());
    }
  }
  const DecoderStats& stats() const { return stats_; }

 private:
  H264DecoderCore() = default;
  bool to_view(FrameView& view);

  CodecContextPtr context_;
  PacketPtr packet_;
  FramePtr frame_;
  FramePtr converted_;
  SwsPtr sws_;
  std::vector<std::uint8_t> input_;  // padded copy of the current sample
  DecoderStats stats_;
};

}  // namespace predrop::media::detail

#pragma once
// The one place FFmpeg's C API is wrapped: one RAII owner per handle type, the library init guard
// and AVERROR -> text. Private to media/src.
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
}

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "predrop/core/result.hpp"
#include "predrop/media/codec.hpp"

namespace predrop::media::detail {

/// FFmpeg's text for an AVERROR code, e.g. "Invalid data found when processing input".
std::string av_error_text(int error);

/// One-time library set-up: FFmpeg logs only fatal errors (the library must not log per packet)
/// unless PREDROP_FFMPEG_LOG names a level ("error", "warning", "info", "debug").
void ensure_libav_initialized();

struct InputFormatDeleter {
  void operator()(AVFormatContext* context) const { avformat_close_input(&context); }
};
/// A demuxer opened with avformat_open_input.
using InputFormatPtr = std::unique_ptr<AVFormatContext, InputFormatDeleter>;

struct OutputFormatDeleter {
  void operator()(AVFormatContext* context) const { avformat_free_context(context); }
};
/// A muxer context from avformat_alloc_output_context2 (used only for av_sdp_create).
using OutputFormatPtr = std::unique_ptr<AVFormatContext, OutputFormatDeleter>;

struct CodecContextDeleter {
  void operator()(AVCodecContext* context) const { avcodec_free_context(&context); }
};
using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextDeleter>;

struct PacketDeleter {
  void operator()(AVPacket* packet) const { av_packet_free(&packet); }
};
using PacketPtr = std::unique_ptr<AVPacket, PacketDeleter>;

struct FrameDeleter {
  void operator()(AVFrame* frame) const { av_frame_free(&frame); }
};
using FramePtr = std::unique_ptr<AVFrame, FrameDeleter>;

struct SwsDeleter {
  void operator()(SwsContext* context) const { sws_freeContext(context); }
};
using SwsPtr = std::unique_ptr<SwsContext, SwsDeleter>;

/// Opens `path` and reads its stream parameters (avformat_open_input + find_stream_info).
core::Result<InputFormatPtr> open_input(const std::string& path);

/// The codec of ours an FFmpeg codec id is, if any.
std::optional<Codec> codec_of(AVCodecID id);

/// The video stream MediaFile and ReferenceDecoder use.
struct VideoStreamChoice {
  /// Index of the first video stream of a supported codec (H.264, H.265, VP8, VP9, AV1), or -1.
  int index = -1;
  Codec codec = Codec::kH264;
  /// When index is -1 but the file has video: "unsupported video codec <name> (supported: ...)".
  std::string unsupported;
};
/// Picks the video stream; attached pictures (cover art) are not video.
VideoStreamChoice find_video_stream(const AVFormatContext* format);

/// The media-time origin in `format`'s stream `stream` time base: the stream's start_time, or 0
/// when the demuxer does not know it. MediaFile and ReferenceDecoder share this rule.
std::int64_t stream_origin(const AVStream* stream);

/// `value` in `from` units converted to µs.
inline std::int64_t to_us(std::int64_t value, AVRational from) {
  return av_rescale_q(value, from, AVRational{1, 1'000'000});
}

}  // namespace predrop::media::detail

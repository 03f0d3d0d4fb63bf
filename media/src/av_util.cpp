#include "av_util.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace predrop::media::detail {

std::string av_error_text(int error) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  if (av_strerror(error, text, sizeof text) < 0) {
    return "FFmpeg error " + std::to_string(error);
  }
  return text;
}

void ensure_libav_initialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    int level = AV_LOG_FATAL;
    if (const char* name = std::getenv("PREDROP_FFMPEG_LOG")) {
      if (std::strcmp(name, "error") == 0) level = AV_LOG_ERROR;
      if (std::strcmp(name, "warning") == 0) level = AV_LOG_WARNING;
      if (std::strcmp(name, "info") == 0) level = AV_LOG_INFO;
      if (std::strcmp(name, "debug") == 0) level = AV_LOG_DEBUG;
    }
    av_log_set_level(level);
  });
}

core::Result<InputFormatPtr> open_input(const std::string& path) {
  ensure_libav_initialized();
  AVFormatContext* raw = nullptr;
  // avformat_open_input frees the context itself when it fails.
  if (int err = avformat_open_input(&raw, path.c_str(), nullptr, nullptr); err < 0) {
    return core::make_error("cannot open '" + path + "': " + av_error_text(err));
  }
  InputFormatPtr format(raw);
  if (int err = avformat_find_stream_info(format.get(), nullptr); err < 0) {
    return core::make_error("cannot read stream parameters of '" + path +
                            "': " + av_error_text(err));
  }
  return format;
}

std::optional<Codec> codec_of(AVCodecID id) {
  switch (id) {
    case AV_CODEC_ID_H264:
      return Codec::kH264;
    case AV_CODEC_ID_HEVC:
      return Codec::kH265;
    case AV_CODEC_ID_VP8:
      return Codec::kVp8;
    case AV_CODEC_ID_VP9:
      return Codec::kVp9;
    case AV_CODEC_ID_AV1:
      return Codec::kAv1;
    case AV_CODEC_ID_AAC:
      return Codec::kAac;
    case AV_CODEC_ID_OPUS:
      return Codec::kOpus;
    case AV_CODEC_ID_PCM_S16LE:
    case AV_CODEC_ID_PCM_S16BE:
      return Codec::kL16;
    case AV_CODEC_ID_PCM_S24LE:
    case AV_CODEC_ID_PCM_S24BE:
      return Codec::kL24;
    case AV_CODEC_ID_MP3:
      return Codec::kMp3;
    default:
      return std::nullopt;
  }
}

VideoStreamChoice find_video_stream(const AVFormatContext* format) {
  // The first video stream of a supported codec wins; cover art (attached pictures) is not video.
  VideoStreamChoice choice;
  int other = -1;
  for (unsigned i = 0; i < format->nb_streams; ++i) {
    const AVStream* st = format->streams[i];
    if (st->codecpar->codec_type != AVMEDIA_TYPE_VIDEO) continue;
    if (st->disposition & AV_DISPOSITION_ATTACHED_PIC) continue;
    const auto codec = codec_of(st->codecpar->codec_id);
    if (codec && is_video(*codec)) {
      choice.index = static_cast<int>(i);
      choice.codec = *codec;
      return choice;
    }
    if (other < 0) other = static_cast<int>(i);
  }
  if (other >= 0) {
    choice.unsupported = std::string("unsupported video codec ") +
                         avcodec_get_name(format->streams[other]->codecpar->codec_id) +
                         " (supported: H.264, H.265, VP8, VP9, AV1)";
  }
  return choice;
}

std::int64_t stream_origin(const AVStream* stream) {
  return stream->start_time == AV_NOPTS_VALUE ? 0 : stream->start_time;
}

}  // namespace predrop::media::detail

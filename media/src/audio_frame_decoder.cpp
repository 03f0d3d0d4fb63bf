// Audio frames to float samples for the audio score (audio_frame_decoder.hpp): PCM directly,
// coded audio with libavcodec's decoder, one thread, output converted to interleaved float.
#include "audio_frame_decoder.hpp"

#include <cctype>
#include <string>

#include "av_util.hpp"
#include "predrop/media/pcm.hpp"

namespace predrop::media::detail {
namespace {

class PcmFrameDecoder final : public AudioFrameDecoder {
 public:
  explicit PcmFrameDecoder(std::uint8_t sample_bytes) : sample_bytes_(sample_bytes) {}
  void decode(Bytes frame, std::vector<float>& out) override {
    pcm_to_float(frame, sample_bytes_, out);
  }
  void reset() override {}

 private:
  std::uint8_t sample_bytes_;
};

// One decoded AVFrame appended as interleaved floats in [-1, 1).
void append_samples(const AVFrame& f, std::vector<float>& out) {
  const int channels = f.ch_layout.nb_channels;
  const auto fmt = static_cast<AVSampleFormat>(f.format);
  const bool planar = av_sample_fmt_is_planar(fmt) != 0;
  for (int i = 0; i < f.nb_samples; ++i) {
    for (int c = 0; c < channels; ++c) {
      const int plane = planar ? c : 0;
      const int index = planar ? i : i * channels + c;
      const std::uint8_t* data = f.extended_data[plane];
      float v = 0.0f;
      switch (fmt) {
        case AV_SAMPLE_FMT_FLT:
        case AV_SAMPLE_FMT_FLTP:
          v = reinterpret_cast<const float*>(data)[index];
          break;
        case AV_SAMPLE_FMT_S16:
        case AV_SAMPLE_FMT_S16P:
          v = static_cast<float>(reinterpret_cast<const std::int16_t*>(data)[index]) / 32768.0f;
          break;
        case AV_SAMPLE_FMT_S32:
        case AV_SAMPLE_FMT_S32P:
          v = static_cast<float>(
              static_cast<double>(reinterpret_cast<const std::int32_t*>(data)[index]) /
              2147483648.0);
          break;
        default:
          break;
      }
      out.push_back(v);
    }
  }
}

class LibavFrameDecoder final : public AudioFrameDecoder {
 public:
  LibavFrameDecoder(CodecContextPtr context, PacketPtr packet, FramePtr frame)
      : context_(std::move(context)), packet_(std::move(packet)), frame_(std::move(frame)) {}

  void decode(Bytes frame, std::vector<float>& out) override {
    // libavcodec reads up to AV_INPUT_BUFFER_PADDING_SIZE bytes past the end.
    padded_.assign(frame.begin(), frame.end());
    padded_.resize(frame.size() + AV_INPUT_BUFFER_PADDING_SIZE, 0);
    packet_->data = padded_.data();
    packet_->size = static_cast<int>(frame.size());
    if (avcodec_send_packet(context_.get(), packet_.get()) < 0) return;
    while (avcodec_receive_frame(context_.get(), frame_.get()) == 0) {
      append_samples(*frame_, out);
      av_frame_unref(frame_.get());
    }
  }
  void reset() override { avcodec_flush_buffers(context_.get()); }

 private:
  CodecContextPtr context_;
  PacketPtr packet_;
  FramePtr frame_;
  std::vector<std::uint8_t> padded_;
};

// The AudioSpecificConfig of an AAC fmtp ("...; config=1190"), empty without one.
std::vector<std::uint8_t> fmtp_config(const std::string& fmtp) {
  std::vector<std::uint8_t> out;
  auto at = fmtp.find("config=");
  if (at == std::string::npos) return out;
  at += 7;
  auto hex = [](char c) -> int {
    if (std::isdigit(static_cast<unsigned char>(c))) return c - '0';
    const int l = std::tolower(static_cast<unsigned char>(c));
    return l >= 'a' && l <= 'f' ? l - 'a' + 10 : -1;
  };
  while (at + 1 < fmtp.size() && hex(fmtp[at]) >= 0 && hex(fmtp[at + 1]) >= 0) {
    out.push_back(static_cast<std::uint8_t>(hex(fmtp[at]) * 16 + hex(fmtp[at + 1])));
    at += 2;
  }
  return out;
}

core::Result<std::unique_ptr<AudioFrameDecoder>> open_libav(AVCodecID id, const StreamInfo& info) {
  ensure_libav_initialized();
  const AVCodec* codec = avcodec_find_decoder(id);
  if (codec == nullptr) {
    return core::make_error(std::string("no ") + avcodec_get_name(id) + " decoder in libavcodec");
  }
  CodecContextPtr context(avcodec_alloc_context3(codec));
  PacketPtr packet(av_packet_alloc());
  FramePtr frame(av_frame_alloc());
  if (!context || !packet || !frame) return core::make_error("out of memory");
  // MPA's RTP clock is 90 kHz; the MP3 decoder takes the rate from each frame's header.
  if (info.codec != Codec::kMp3) context->sample_rate = static_cast<int>(info.clock_rate);
  av_channel_layout_default(&context->ch_layout, std::max(1, int{info.channels}));
  context->thread_count = 1;
  if (info.codec == Codec::kAac) {
    const auto config = fmtp_config(info.fmtp);
    if (!config.empty()) {
      context->extradata =
          static_cast<std::uint8_t*>(av_mallocz(config.size() + AV_INPUT_BUFFER_PADDING_SIZE));
      if (context->extradata == nullptr) return core::make_error("out of memory");
      std::copy(config.begin(), config.end(), context->extradata);
      context->extradata_size = static_cast<int>(config.size());
    }
  }
  if (int err = avcodec_open2(context.get(), codec, nullptr); err < 0) {
    return core::make_error("cannot open the " + std::string(codec->name) +
                            " decoder: " + av_error_text(err));
  }
  return std::unique_ptr<AudioFrameDecoder>(
      new LibavFrameDecoder(std::move(context), std::move(packet), std::move(frame)));
}

}  // namespace

core::Result<std::unique_ptr<AudioFrameDecoder>> make_audio_frame_decoder(const StreamInfo& info) {
  switch (info.codec) {
    case Codec::kL16:
      return std::unique_ptr<AudioFrameDecoder>(new PcmFrameDecoder(2));
    case Codec::kL24:
      return std::unique_ptr<AudioFrameDecoder>(new PcmFrameDecoder(3));
    case Codec::kAac:
      return open_libav(AV_CODEC_ID_AAC, info);
    case Codec::kOpus:
      return open_libav(AV_CODEC_ID_OPUS, info);
    case Codec::kMp3:
      return open_libav(AV_CODEC_ID_MP3, info);
    default:
      break;
  }
  return core::make_error("no audio score for " + std::string(codec_name(info.codec)));
}

std::size_t audio_payload_header_bytes(Codec codec) {
  // RFC 3640 AU-header section of one AU; RFC 2250 §3.5 MBZ + Frag_offset.
  return codec == Codec::kAac || codec == Codec::kMp3 ? 4 : 0;
}

}  // namespace predrop::media::detail

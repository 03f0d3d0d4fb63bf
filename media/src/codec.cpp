// The codec table and AAC's fmtp (codec.hpp), and the video packetizer factory
// (video_packetizer.hpp).
#include "predrop/media/codec.hpp"

#include <cctype>
#include <string>

#include "av1_packetizer.hpp"
#include "bitstream.hpp"
#include "h264_packetizer.hpp"
#include "h265_packetizer.hpp"
#include "video_packetizer.hpp"
#include "vp8_packetizer.hpp"
#include "vp9_packetizer.hpp"

namespace predrop::media {

std::string_view codec_name(Codec codec) {
  switch (codec) {
    case Codec::kH264:
      return "H.264";
    case Codec::kH265:
      return "H.265";
    case Codec::kVp8:
      return "VP8";
    case Codec::kVp9:
      return "VP9";
    case Codec::kAv1:
      return "AV1";
    case Codec::kAac:
      return "AAC";
    case Codec::kOpus:
      return "Opus";
    case Codec::kL16:
      return "L16";
    case Codec::kL24:
      return "L24";
    case Codec::kMp3:
      return "MP3";
  }
  return "?";
}

namespace {

std::string encoding_name(std::string_view encoding) {
  std::string name(encoding.substr(0, encoding.find('/')));
  for (char& c : name) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return name;
}

}  // namespace

std::optional<Codec> video_codec_from_rtpmap(std::string_view encoding) {
  const std::string name = encoding_name(encoding);
  if (name == "H264") return Codec::kH264;
  if (name == "H265") return Codec::kH265;
  if (name == "VP8") return Codec::kVp8;
  if (name == "VP9") return Codec::kVp9;
  if (name == "AV1") return Codec::kAv1;
  return std::nullopt;
}

std::optional<Codec> audio_codec_from_rtpmap(std::string_view encoding) {
  const std::string name = encoding_name(encoding);
  if (name == "MPEG4-GENERIC") return Codec::kAac;
  if (name == "OPUS") return Codec::kOpus;
  if (name == "L16") return Codec::kL16;
  if (name == "L24") return Codec::kL24;
  if (name == "MPA") return Codec::kMp3;
  return std::nullopt;
}

std::string aac_hbr_fmtp(std::span<const std::uint8_t> audio_specific_config) {
  return "profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3; "
         "config=" +
         detail::hex_upper(audio_specific_config);
}

namespace detail {

std::unique_ptr<VideoPacketizer> make_video_packetizer(Codec codec, std::size_t max_payload,
                                                       Warn warn) {
  switch (codec) {
    case Codec::kH264:
      return std::make_unique<H264Packetizer>(max_payload, std::move(warn));
    case Codec::kH265:
      return std::make_unique<H265Packetizer>(max_payload, std::move(warn));
    case Codec::kVp8:
      return std::make_unique<Vp8Packetizer>(max_payload, std::move(warn));
    case Codec::kVp9:
      return std::make_unique<Vp9Packetizer>(max_payload, std::move(warn));
    case Codec::kAv1:
      return std::make_unique<Av1Packetizer>(max_payload, std::move(warn));
    case Codec::kAac:
    case Codec::kOpus:
    case Codec::kL16:
    case Codec::kL24:
    case Codec::kMp3:
      break;
  }
  return nullptr;
}

}  // namespace detail
}  // namespace predrop::media

#pragma once
// The codecs predrop packetizes and depacketizes, and their RTP encoding names (the rtpmap
// encoding without the clock, RFC 4566 §6): the one table the server's SDP, the measuring client
// and the tests share. Each video codec has one packetizer unit (media/src/<codec>_packetizer)
// and one depacketizer unit (media/src/<codec>_depacketizer); docs/media.md lists them.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace predrop::media {

/// Codecs the packetizer supports.
enum class Codec : std::uint8_t { kH264, kAac, kOpus, kH265, kVp8, kVp9, kL16, kL24, kMp3, kAv1 };

/// True for the video codecs.
constexpr bool is_video(Codec codec) {
  return codec == Codec::kH264 || codec == Codec::kH265 || codec == Codec::kVp8 ||
         codec == Codec::kVp9 || codec == Codec::kAv1;
}

/// True for linear PCM (L16, L24: RFC 3551 §4.5.11, RFC 3190 §4).
constexpr bool is_pcm(Codec codec) {
  return codec == Codec::kL16 || codec == Codec::kL24;
}

/// Human name for logs and errors, e.g. "H.265".
std::string_view codec_name(Codec codec);

/// The video codec of an rtpmap encoding ("H264/90000", "h265/90000", "VP8/90000", "VP9/90000",
/// "AV1/90000"; case-blind, RFC 4566 §6), or std::nullopt for anything else.
std::optional<Codec> video_codec_from_rtpmap(std::string_view encoding);

/// The audio codec of an rtpmap encoding ("MPEG4-GENERIC/..", "opus/48000/2", "L16/48000/2",
/// "L24/...", "MPA/90000"; case-blind), or std::nullopt for anything else.
std::optional<Codec> audio_codec_from_rtpmap(std::string_view encoding);

/// The fmtp of AAC sent as RFC 3640 mode AAC-hbr, the one way predrop sends AAC (a file's, a live
/// publisher's, LATM repacked): profile-level-id, mode, AAC-hbr's AU-header widths 13/3/3
/// (§3.3.6) and `audio_specific_config` as the upper-case hex `config`, letter for letter as
/// FFmpeg's RTP muxer writes it (libavformat/sdp.c), so that players see what they see from it.
std::string aac_hbr_fmtp(std::span<const std::uint8_t> audio_specific_config);

}  // namespace predrop::media

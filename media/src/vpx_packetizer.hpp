#pragma once
// Private to media/src: the packetizer the VP8 (RFC 7741) and VP9 (RFC 9628) streams share.
// Both number their pictures with a 15-bit PictureID, read the picture's type and whether it is
// a reference from the frame header (the container's key flag when the header is unreadable,
// with one warning per such frame), send each sample as one picture and set the marker on its
// last packet (RFC 7741 §4.1, RFC 9628 §4.1). What differs is the codec's: `Codec` names it
// (kName), parses its header (parse_frame) and writes its payloads (packetize); see
// vp8_packetizer.hpp and vp9_packetizer.hpp.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "video_packetizer.hpp"

namespace predrop::media::detail {

/// Packetizes the samples of one VP8 or VP9 stream (see the file comment).
template <typename Codec>
class VpxPacketizer final : public VideoPacketizer {
 public:
  VpxPacketizer(std::size_t max_payload, Warn warn)
      : max_payload_(max_payload), warn_(std::move(warn)) {}

  void configure(Bytes /*extradata*/) override {}

  std::optional<VideoPicture> add_sample(Bytes sample, bool key_flag, PayloadSink& sink) override {
    if (sample.empty()) return std::nullopt;
    const auto info = Codec::parse_frame(sample);
    if (!info) {
      warn_("unreadable " + std::string(Codec::kName) + " frame header at frame " +
            std::to_string(pictures_));
    }
    VideoPicture picture;
    const bool key = info ? info->key : key_flag;
    picture.type = key ? FrameType::kKey : (info ? FrameType::kPredicted : FrameType::kUnknown);
    picture.reference = !info || info->reference;
    // A reference of an upper temporal layer goes before the base layer's (importance.hpp).
    if (info) picture.temporal_id = Codec::temporal_id(*info);
    Codec::packetize(sample, picture_id_, picture, max_payload_,
                     [&](Bytes head, Bytes body) { sink.add(head, body, false, false); });
    sink.mark_last();
    picture_id_ = static_cast<std::uint16_t>((picture_id_ + 1) & 0x7fff);
    ++pictures_;
    return picture;
  }

  /// "<name>/90000" without fmtp, as FFmpeg's sdp.c writes it.
  void describe(StreamInfo& info) const override {
    info.encoding = std::string(Codec::kName) + "/90000";
    info.fmtp.clear();
  }

 private:
  std::size_t max_payload_;
  Warn warn_;
  std::uint16_t picture_id_ = 0;
  std::size_t pictures_ = 0;
};

}  // namespace predrop::media::detail

#pragma once
// Private to media/src: what MediaFile asks of a video codec's packetizer. One implementation per
// codec, each in its own unit (h264_packetizer, h265_packetizer, vp8_packetizer, vp9_packetizer,
// av1_packetizer);
// MediaFile only picks one with make_video_packetizer() and never looks at codec bytes itself.
#include <cstdint>
#include <memory>
#include <optional>

#include "staging.hpp"

namespace predrop::media::detail {

/// What a packetizer learnt about one picture, for importance (docs/media.md "Importance").
struct VideoPicture {
  FrameType type = FrameType::kUnknown;
  /// Another picture may depend on it; unreadable pictures are assumed to be references.
  bool reference = true;
  /// Temporal sub-layer (H.265 TemporalId, AV1 temporal_id); higher layers are dropped first.
  std::uint8_t temporal_id = 0;
};

/// Packetizes the samples of one video stream, in decode order.
class VideoPacketizer {
 public:
  virtual ~VideoPacketizer() = default;
  /// Reads the stream's extradata (avcC, hvcC, Annex B parameter sets, or nothing).
  virtual void configure(Bytes extradata) = 0;
  /// Packetizes one sample. Returns the picture, or nullopt for a sample without a picture
  /// (what it carried goes with the next picture, or nowhere).
  virtual std::optional<VideoPicture> add_sample(Bytes sample, bool key_flag,
                                                 PayloadSink& sink) = 0;
  /// The rtpmap encoding and fmtp parameters, as FFmpeg's RTP muxer announces them.
  virtual void describe(StreamInfo& info) const = 0;
};

/// The packetizer of a video codec (kH264, kH265, kVp8, kVp9, kAv1).
std::unique_ptr<VideoPacketizer> make_video_packetizer(Codec codec, std::size_t max_payload,
                                                       Warn warn);

}  // namespace predrop::media::detail

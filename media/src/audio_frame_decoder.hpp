#pragma once
// Private to media/src: one audio frame in, interleaved float samples in [-1, 1) out, for the audio
// score (audio_scorer.hpp). L16/L24 convert their network-order samples directly.
#include <cstdint>
#include <memory>
#include <vector>

#include "bitstream.hpp"
#include "predrop/core/result.hpp"
#include "predrop/media/media_file.hpp"

namespace predrop::media::detail {

/// Decodes the frames of one audio stream in order.
class AudioFrameDecoder {
 public:
  virtual ~AudioFrameDecoder() = default;
  /// Appends the samples of one whole frame (its RTP payloads with their headers removed,
  /// concatenated) to `out`. A frame the decoder rejects appends nothing.
  virtual void decode(Bytes frame, std::vector<float>& out) = 0;
  /// Forgets all state: the next frame is decoded as if it were the first.
  virtual void reset() = 0;
};

/// The decoder for `info`'s codec, or an error for a codec without one.
core::Result<std::unique_ptr<AudioFrameDecoder>> make_audio_frame_decoder(const StreamInfo& info);

/// Bytes of packetization header at the start of each RTP payload of `codec`, removed before
/// decoding (RFC 3640 AU-header section and RFC 2250 MPA header: 4; none for PCM and Opus).
std::size_t audio_payload_header_bytes(Codec codec);

}  // namespace predrop::media::detail

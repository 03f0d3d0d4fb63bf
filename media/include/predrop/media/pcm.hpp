#pragma once
// Linear PCM over RTP, both directions, as pure functions over spans (no FFmpeg): L16 (RFC 3551
// §4.5.11: 16-bit two's complement, network byte order) and L24 (RFC 3190 §4: 24-bit, the same
// layout). A payload is a whole number of sample frames, the channels of one sampling instant
// interleaved (RFC 3551 §4.3); the RTP timestamp counts sample frames, so the clock is the
// sampling rate. There is no payload header and no fragmentation: a packet holds as many whole
// frames as fit under the payload limit (and at most one ptime, below).
//
//   L16 stereo, two frames:  | L0 hi | L0 lo | R0 hi | R0 lo | L1 hi | L1 lo | R1 hi | R1 lo |
//   L24 mono, two frames:    | s0 hi | s0 mid | s0 lo | s1 hi | s1 mid | s1 lo |
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace predrop::media {

/// RFC 3551 §4.5 default packetization interval for audio (ptime), in milliseconds: a packet
/// carries at most this much even when more would fit.
inline constexpr std::uint32_t kPcmPtimeMs = 20;

/// Bytes of one sample: 2 (L16) or 3 (L24).
struct PcmFormat {
  std::uint8_t sample_bytes = 2;
  std::uint16_t channels = 1;
  std::uint32_t sample_rate = 48000;

  /// Bytes of one sample frame (every channel of one instant).
  std::size_t frame_bytes() const { return std::size_t{sample_bytes} * channels; }
};

/// Sample frames per RTP packet: as many as fit in `max_payload`, at most kPcmPtimeMs worth;
/// 0 if not even one frame fits.
std::size_t pcm_frames_per_packet(const PcmFormat& format, std::size_t max_payload);

/// Appends `samples` (`sample_bytes` per sample, little-endian when `little_endian`) to `out` in
/// network byte order. A trailing partial sample is left out. Used once when a file is loaded.
void pcm_to_network_order(std::span<const std::uint8_t> samples, std::uint8_t sample_bytes,
                          bool little_endian, std::vector<std::uint8_t>& out);

/// The sample frames in one L16/L24 payload, or std::nullopt when it is empty or not a whole
/// number of frames (RFC 3551 §4.3 allows no partial frame).
std::optional<std::size_t> pcm_payload_frames(std::span<const std::uint8_t> payload,
                                              const PcmFormat& format);

/// Appends the samples of a network-order L16/L24 payload to `out` as floats in [-1, 1)
/// (divided by 2^15 resp. 2^23), interleaved as sent; a trailing partial sample is left out.
void pcm_to_float(std::span<const std::uint8_t> payload, std::uint8_t sample_bytes,
                  std::vector<float>& out);

/// Cuts network-order PCM into payloads of `frames_per_packet` whole frames (the last may be
/// shorter) and calls `emit(payload, first_frame)` for each, `first_frame` counting from 0: the
/// packet's RTP timestamp is the block's plus it. A trailing partial frame is left out.
template <typename Emit>
void packetize_pcm(std::span<const std::uint8_t> network, std::size_t frame_bytes,
                   std::size_t frames_per_packet, Emit&& emit) {
  if (frame_bytes == 0 || frames_per_packet == 0) return;
  const std::size_t frames = network.size() / frame_bytes;
  for (std::size_t first = 0; first < frames; first += frames_per_packet) {
    const std::size_t n = std::min(frames_per_packet, frames - first);
    emit(network.subspan(first * frame_bytes, n * frame_bytes), first);
  }
}

}  // namespace predrop::media

// L16 / L24 (RFC 3551 §4.5.11, RFC 3190 §4): see pcm.hpp.
#include "predrop/media/pcm.hpp"

#include <algorithm>

namespace predrop::media {

std::size_t pcm_frames_per_packet(const PcmFormat& format, std::size_t max_payload) {
  const std::size_t frame = format.frame_bytes();
  if (frame == 0) return 0;
  const std::size_t by_size = max_payload / frame;
  const std::size_t by_time =
      std::max<std::size_t>(1, std::size_t{format.sample_rate} * kPcmPtimeMs / 1000);
  return std::min(by_size, by_time);
}

void pcm_to_network_order(std::span<const std::uint8_t> samples, std::uint8_t sample_bytes,
                          bool little_endian, std::vector<std::uint8_t>& out) {
  if (sample_bytes == 0) return;
  const std::size_t whole = samples.size() / sample_bytes * sample_bytes;
  if (!little_endian) {
    out.insert(out.end(), samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(whole));
    return;
  }
  const std::size_t start = out.size();
  out.resize(start + whole);
  for (std::size_t i = 0; i < whole; i += sample_bytes) {
    for (std::size_t b = 0; b < sample_bytes; ++b) {
      out[start + i + b] = samples[i + sample_bytes - 1 - b];
    }
  }
}

std::optional<std::size_t> pcm_payload_frames(std::span<const std::uint8_t> payload,
                                              const PcmFormat& format) {
  const std::size_t frame = format.frame_bytes();
  if (frame == 0 || payload.empty() || payload.size() % frame != 0) return std::nullopt;
  return payload.size() / frame;
}

void pcm_to_float(std::span<const std::uint8_t> payload, std::uint8_t sample_bytes,
                  std::vector<float>& out) {
  if (sample_bytes != 2 && sample_bytes != 3) return;
  const float scale = sample_bytes == 2 ? 1.0f / 32768.0f : 1.0f / 8388608.0f;
  for (std::size_t i = 0; i + sample_bytes <= payload.size(); i += sample_bytes) {
    // Big-endian two's complement: put the sample in the top bits of an int32, then shift back
    // arithmetically so the sign extends.
    std::uint32_t u = 0;
    for (std::size_t b = 0; b < sample_bytes; ++b) {
      u = (u << 8) | payload[i + b];
    }
    const int shift = 32 - 8 * sample_bytes;
    const auto v = static_cast<std::int32_t>(u << shift) >> shift;
    out.push_back(static_cast<float>(v) * scale);
  }
}

}  // namespace predrop::media

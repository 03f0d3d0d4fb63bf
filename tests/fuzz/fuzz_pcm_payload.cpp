// libFuzzer target for L16/L24 (RFC 3551 §4.5.11, RFC 3190 §4; issue 24). The first input byte
// picks the mode: even: the rest as a received payload, counted in frames and converted to
// floats for the audio score (must not crash; the count must agree with the conversion); odd: the
// rest as little-endian PCM of a format and limit from the next byte, swapped to network order
// and packetized, every payload whole frames within the limit, the payloads together swapping
// back to the input's whole frames.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_check.hpp"
#include "predrop/media/pcm.hpp"

namespace {

using predrop::media::PcmFormat;

PcmFormat format_of(std::uint8_t b) {
  PcmFormat f;
  f.sample_bytes = (b & 1) ? 3 : 2;
  f.channels = static_cast<std::uint16_t>(1 + ((b >> 1) & 7));
  f.sample_rate = (b & 0x10) ? 8000 : 48000;
  return f;
}

void receive(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return;
  const PcmFormat format = format_of(data[0]);
  const std::span<const std::uint8_t> payload(data + 1, size - 1);
  const auto frames = predrop::media::pcm_payload_frames(payload, format);
  std::vector<float> samples;
  predrop::media::pcm_to_float(payload, format.sample_bytes, samples);
  if (frames) PREDROP_FUZZ_CHECK(samples.size() == *frames * format.channels);
  for (const float s : samples) {
    PREDROP_FUZZ_CHECK(s >= -1.0f && s < 1.0f);
  }
}

void round_trip(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return;
  const PcmFormat format = format_of(data[0]);
  const std::size_t limit = 64 + std::size_t{data[1]} * 8;
  const std::span<const std::uint8_t> raw(data + 2, size - 2);
  std::vector<std::uint8_t> network;
  predrop::media::pcm_to_network_order(raw, format.sample_bytes, true, network);
  const std::size_t per = predrop::media::pcm_frames_per_packet(format, limit);
  std::vector<std::uint8_t> joined;
  std::size_t next = 0;
  predrop::media::packetize_pcm(network, format.frame_bytes(), per,
                                [&](std::span<const std::uint8_t> p, std::size_t first) {
                                  PREDROP_FUZZ_CHECK(p.size() <= limit);
                                  PREDROP_FUZZ_CHECK(first == next);
                                  const auto frames = predrop::media::pcm_payload_frames(p, format);
                                  PREDROP_FUZZ_CHECK(frames.has_value());
                                  next += *frames;
                                  joined.insert(joined.end(), p.begin(), p.end());
                                });
  std::vector<std::uint8_t> back;
  predrop::media::pcm_to_network_order(joined, format.sample_bytes, true, back);
  const std::size_t whole = raw.size() / format.frame_bytes() * format.frame_bytes();
  PREDROP_FUZZ_CHECK(back.size() == whole);
  PREDROP_FUZZ_CHECK(std::equal(back.begin(), back.end(), raw.begin()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  if (data[0] & 1) {
    round_trip(data + 1, size - 1);
  } else {
    receive(data + 1, size - 1);
  }
  return 0;
}

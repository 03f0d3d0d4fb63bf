// libFuzzer target for MP4A-LATM (RFC 6416; predrop/media/latm.hpp). The first byte is the
// StreamMuxConfig's length n: the next n bytes are parsed as one (must not crash; a config it
// accepts has 1-8 channels, a sampling rate, 1-64 subframes and an AudioSpecificConfig of at
// least 2 bytes); when it is refused, GStreamer's config for 48 kHz stereo AAC-LC is used. The
// rest are packets (1-byte flags: bit 0 the marker, bit 1 skip a sequence number, bit 2 a new
// timestamp; 1-byte length; payload) into a LatmDepacketizer, and every AAC-hbr payload it gives
// out is checked: AU-headers-length a multiple of 16 bits, every AU size non-zero, the sizes
// adding up to the payload, index fields 0.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_check.hpp"
#include "predrop/media/latm.hpp"

namespace {

using predrop::media::LatmConfig;

void check_aac_hbr(std::span<const std::uint8_t> p) {
  PREDROP_FUZZ_CHECK(p.size() >= 2);
  const std::size_t bits = (std::size_t{p[0]} << 8) | p[1];
  PREDROP_FUZZ_CHECK(bits % 16 == 0 && bits > 0);
  const std::size_t n = bits / 16;
  PREDROP_FUZZ_CHECK(p.size() >= 2 + 2 * n);
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned h = (unsigned{p[2 + 2 * i]} << 8) | p[3 + 2 * i];
    PREDROP_FUZZ_CHECK((h & 7U) == 0);
    PREDROP_FUZZ_CHECK((h >> 3) != 0);
    total += h >> 3;
  }
  PREDROP_FUZZ_CHECK(2 + 2 * n + total == p.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t n = data[0] < size - 1 ? data[0] : size - 1;
  auto parsed = predrop::media::parse_stream_mux_config(std::span<const std::uint8_t>(data + 1, n));
  LatmConfig config;
  if (parsed) {
    PREDROP_FUZZ_CHECK(parsed->channels >= 1 && parsed->channels <= 8);
    PREDROP_FUZZ_CHECK(parsed->sample_rate > 0);
    PREDROP_FUZZ_CHECK(parsed->subframes >= 1 && parsed->subframes <= 64);
    PREDROP_FUZZ_CHECK(parsed->audio_specific_config.size() >= 2);
    config = *parsed;
  } else {
    static constexpr std::uint8_t kGst[] = {0x40, 0x00, 0x23, 0x20};
    auto gst = predrop::media::parse_stream_mux_config(kGst);
    PREDROP_FUZZ_CHECK(gst.ok());
    config = *gst;
  }
  predrop::media::LatmDepacketizer d(config);
  std::uint16_t sequence = 0;
  std::uint32_t timestamp = 0;
  std::size_t i = 1 + n;
  while (size - i >= 2) {
    const std::uint8_t flags = data[i];
    std::size_t length = data[i + 1];
    i += 2;
    if (length > size - i) length = size - i;
    sequence = static_cast<std::uint16_t>(sequence + ((flags & 2) != 0 ? 2 : 1));
    if ((flags & 4) != 0) timestamp += 1024;
    const auto out = d.push(sequence, timestamp, (flags & 1) != 0,
                            std::span<const std::uint8_t>(data + i, length));
    if (!out.empty()) check_aac_hbr(out);
    i += length;
  }
  return 0;
}

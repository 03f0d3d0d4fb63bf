// libFuzzer target: arbitrary RTP payload sequences into the H.264 depacketizer. The input is a
// series of records: 2-byte sequence, 1-byte flags (bit 0 marker, bit 1 new timestamp), 1-byte
// length, payload.
#include <cstddef>
#include <cstdint>
#include <span>

#include "predrop/media/h264_depacketizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::size_t total = 0;
  predrop::media::H264Depacketizer depacketizer(
      [&](const predrop::media::AccessUnit& au) { total += au.data.size(); });
  std::uint32_t timestamp = 0;
  std::size_t i = 0;
  while (size - i >= 4) {
    const auto sequence = static_cast<std::uint16_t>((data[i] << 8) | data[i + 1]);
    const std::uint8_t flags = data[i + 2];
    std::size_t length = data[i + 3];
    i += 4;
    if (length > size - i) length = size - i;
    if (flags & 2) timestamp += 3000;
    depacketizer.push(sequence, timestamp, flags & 1, std::span(data + i, length));
    i += length;
  }
  depacketizer.flush();
  return total > 0 ? 0 : 0;
}

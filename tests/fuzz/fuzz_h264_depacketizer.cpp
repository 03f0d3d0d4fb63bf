// libFuzzer target: arbitrary RTP payload sequences into the H.264 depacketizer. The input is a
// series of records: 2-byte sequence, 1-byte flags (bit 0 marker, bit 1 new timestamp), 1-byte
// length, payload.
#include <cstddef>
#include <cstdint>

#include "fuzz_payload.hpp"
#include "predrop/media/h264_depacketizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  predrop::media::H264Depacketizer depacketizer([](const predrop::media::AccessUnit&) {});
  predrop::fuzz::push_records(depacketizer, data, size);
  return 0;
}

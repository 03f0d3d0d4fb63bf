// libFuzzer target: the packetizer's pure parsers (NAL splitting, avcC, slice header, ADTS) on
// arbitrary bytes. They must never read out of bounds.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "bitstream.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace d = predrop::media::detail;
  const std::span<const std::uint8_t> bytes(data, size);
  std::vector<d::Bytes> nals;
  d::split_annexb(bytes, nals);
  for (int length_size : {1, 2, 4})
    d::split_length_prefixed(bytes, length_size, nals);
  for (d::Bytes nal : nals)
    (void)d::parse_slice_type(nal);
  (void)d::parse_avcc(bytes);
  (void)d::parse_adts(bytes);
  (void)d::base64(bytes.first(size < 64 ? size : 64));
  return 0;
}

// libFuzzer target for RFC 9628 and the VP9 uncompressed header (issue 24). The first input byte
// picks the mode: even: arbitrary RTP payload records into the VP9 depacketizer (as in
// fuzz_h265_payload); odd: the rest as one frame, whose header is parsed (must not crash) and
// which is packetized at a limit from the next byte and depacketized back exactly.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_check.hpp"
#include "predrop/media/vp9_depacketizer.hpp"
#include "vp9_packetizer.hpp"

namespace {

using predrop::media::AccessUnit;
using predrop::media::Vp9Depacketizer;

void depacketize(const std::uint8_t* data, std::size_t size) {
  Vp9Depacketizer d([](const AccessUnit&) {});
  std::uint32_t timestamp = 0;
  std::size_t i = 0;
  while (size - i >= 4) {
    const auto sequence = static_cast<std::uint16_t>((data[i] << 8) | data[i + 1]);
    const std::uint8_t flags = data[i + 2];
    std::size_t length = data[i + 3];
    i += 4;
    if (length > size - i) length = size - i;
    if (flags & 2) timestamp += 3000;
    d.push(sequence, timestamp, flags & 1, std::span(data + i, length));
    i += length;
  }
  d.flush();
}

void round_trip(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return;
  const std::size_t max_payload = 64 + data[0] * 4;
  const std::span<const std::uint8_t> frame(data + 1, size - 1);
  (void)predrop::media::detail::parse_vp9_frame(frame);
  (void)predrop::media::detail::parse_vp9_descriptor(frame);
  std::vector<std::uint8_t> got;
  std::size_t count = 0;
  Vp9Depacketizer d([&](const AccessUnit& au) {
    ++count;
    got.assign(au.data.begin(), au.data.end());
  });
  std::uint16_t sequence = 0;
  std::vector<std::vector<std::uint8_t>> payloads;
  predrop::media::detail::packetize_vp9(
      frame, 77, false, max_payload,
      [&](predrop::media::detail::Bytes head, predrop::media::detail::Bytes body) {
        std::vector<std::uint8_t> p(head.begin(), head.end());
        p.insert(p.end(), body.begin(), body.end());
        PREDROP_FUZZ_CHECK(p.size() <= max_payload);
        payloads.push_back(std::move(p));
      });
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    d.push(sequence++, 0, i + 1 == payloads.size(), payloads[i]);
  }
  PREDROP_FUZZ_CHECK(count == 1);
  PREDROP_FUZZ_CHECK(got == std::vector<std::uint8_t>(frame.begin(), frame.end()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  if (data[0] & 1) {
    round_trip(data + 1, size - 1);
  } else {
    depacketize(data + 1, size - 1);
  }
  return 0;
}

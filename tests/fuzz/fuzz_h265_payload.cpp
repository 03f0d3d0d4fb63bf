// libFuzzer target for RFC 7798 (issue 24). The first input byte picks the mode:
// even: arbitrary RTP payload records into the H.265 depacketizer (2-byte sequence, 1-byte flags
//   bit 0 marker / bit 1 new timestamp, 1-byte length, payload), which must never crash;
// odd: the rest as NAL units (1-byte length, unit; headers forced valid) packetized at a payload
//   limit from the second byte and depacketized again, which must give the units back exactly.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_payload.hpp"
#include "h265_packetizer.hpp"
#include "predrop/media/h265_depacketizer.hpp"

namespace {

using predrop::media::AccessUnit;
using predrop::media::H265Depacketizer;

void depacketize(const std::uint8_t* data, std::size_t size) {
  H265Depacketizer d([](const AccessUnit&) {});
  predrop::fuzz::push_records(d, data, size);
}

void round_trip(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return;
  predrop::fuzz::Payloads payloads{64 + data[0] * std::size_t{8}, {}};
  std::vector<std::vector<std::uint8_t>> units;
  std::vector<std::uint8_t> expected;
  for (std::size_t i = 1; i < size;) {
    const std::size_t length = 2 + data[i++] * 4;  // up to 1022 bytes: FUs at small limits
    std::vector<std::uint8_t> u(length, 0);
    for (std::size_t k = 0; k < length && i < size; ++k) {
      u[k] = data[i++];
    }
    u[0] = static_cast<std::uint8_t>(u[0] & 0x7f) % 96;  // types 0..47: not AP/FU/PACI
    if ((u[1] & 7) == 0) u[1] |= 1;                      // nuh_temporal_id_plus1 != 0
    expected.insert(expected.end(), {0, 0, 0, 1});
    expected.insert(expected.end(), u.begin(), u.end());
    units.push_back(std::move(u));
  }
  if (units.empty()) return;
  std::vector<predrop::media::detail::Bytes> spans(units.begin(), units.end());
  std::vector<std::uint8_t> scratch;
  predrop::media::detail::packetize_h265(spans, payloads.max_payload, scratch, payloads.emit());
  std::size_t count = 0;
  H265Depacketizer d([&](const AccessUnit& au) {
    ++count;
    PREDROP_FUZZ_CHECK(!au.damaged);
    PREDROP_FUZZ_CHECK(std::vector<std::uint8_t>(au.data.begin(), au.data.end()) == expected);
  });
  payloads.push_into(d);
  PREDROP_FUZZ_CHECK(count == 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return predrop::fuzz::run_payload_target(data, size, round_trip, depacketize);
}

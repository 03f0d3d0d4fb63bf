// libFuzzer target for the AOMedia AV1 RTP payload format (issue 24). The first input byte picks
// the mode: even: arbitrary RTP payload records into the AV1 depacketizer (as in
// fuzz_h265_payload); odd: the rest as one temporal unit at a limit from the next byte: if it
// parses, its packetization must come back from the depacketizer as the same OBUs in the
// decoder's format (a temporal delimiter first, every OBU with its size, temporal delimiters,
// tile lists and padding left out); if it does not, nothing is emitted.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "av1_packetizer.hpp"
#include "fuzz_payload.hpp"
#include "predrop/media/av1_depacketizer.hpp"

namespace {

using predrop::media::AccessUnit;
using predrop::media::Av1Depacketizer;
namespace detail = predrop::media::detail;

void depacketize(const std::uint8_t* data, std::size_t size) {
  Av1Depacketizer d([](const AccessUnit&) {});
  predrop::fuzz::push_records(d, data, size);
}

void round_trip(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return;
  const std::size_t limit = 8 + data[0] * 4;
  const std::span<const std::uint8_t> tu(data + 1, size - 1);
  std::vector<std::vector<std::uint8_t>> payloads;
  const bool ok = detail::packetize_av1(tu, false, limit, [&](std::span<const std::uint8_t> p) {
    PREDROP_FUZZ_CHECK(p.size() <= limit && !p.empty());
    payloads.emplace_back(p.begin(), p.end());
  });
  std::vector<detail::Av1Obu> obus;
  const bool parses = detail::split_av1_obus(tu, obus);
  PREDROP_FUZZ_CHECK(ok == parses);
  if (!ok) {
    PREDROP_FUZZ_CHECK(payloads.empty());
    return;
  }
  std::vector<std::uint8_t> want = {0x12, 0x00};
  bool any = false;
  for (const auto& obu : obus) {
    if (obu.type == detail::kAv1TemporalDelimiter || obu.type == detail::kAv1TileList ||
        obu.type == detail::kAv1Padding) {
      continue;
    }
    any = true;
    want.push_back(obu.header[0] | 0x02);
    if (obu.has_extension) want.push_back(obu.header[1]);
    detail::write_leb128(static_cast<std::uint32_t>(obu.payload.size()), want);
    want.insert(want.end(), obu.payload.begin(), obu.payload.end());
  }
  std::vector<std::uint8_t> got;
  std::size_t units = 0;
  Av1Depacketizer d([&](const AccessUnit& au) {
    ++units;
    got.assign(au.data.begin(), au.data.end());
  });
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    d.push(static_cast<std::uint16_t>(i), 0, i + 1 == payloads.size(), payloads[i]);
  }
  d.flush();
  PREDROP_FUZZ_CHECK(units == (any ? 1u : 0u));
  if (any) PREDROP_FUZZ_CHECK(got == want);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return predrop::fuzz::run_payload_target(data, size, round_trip, depacketize);
}

// libFuzzer target for the AOMedia AV1 RTP payload format (issue 24). The first input byte picks
// the mode: even: arbitrary RTP payload records into the AV1 depacketizer (as in
// fuzz_h265_payload); odd: the rest as one temporal unit at a limit from the next byte: if it
// parses, its packetization must come back from the depacketizer as the same OBUs in the
// decoder's format (a temporal delimiter first, every OBU with its size, temporal delimiters,
// tile lists and padding left out); if it does not, nothing is emitted. The sequence and frame
// header readers run on every OBU, and the unit goes through MediaFile's Av1Packetizer too (its
// payloads within the limit).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
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
  std::optional<detail::Av1SequenceHeader> sequence;
  for (const auto& obu : obus) {
    if (obu.type == detail::kAv1SequenceHeader) {
      sequence = detail::parse_av1_sequence_header(obu.payload);
    }
    (void)detail::parse_av1_frame_header(obu.payload,
                                         sequence.value_or(detail::Av1SequenceHeader{}),
                                         obu.temporal_id, obu.spatial_id);
  }
  std::vector<std::uint8_t> arena;
  std::vector<detail::StagedPacket> staged;
  detail::PayloadSink sink(arena, staged);
  detail::Av1Packetizer packetizer(limit, [](const std::string&) {});
  packetizer.configure(tu);  // the unit as bare config OBUs, as an IVF reader may hand them
  (void)packetizer.add_sample(tu, (data[0] & 2) != 0, sink);
  (void)packetizer.add_sample(tu, false, sink);
  for (const auto& p : staged) {
    PREDROP_FUZZ_CHECK(p.size <= limit && p.size > 0);
  }
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

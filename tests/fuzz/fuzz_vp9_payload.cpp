// libFuzzer target for RFC 9628 and the VP9 uncompressed header (issue 24). The first input byte
// picks the mode: even: arbitrary RTP payload records into the VP9 depacketizer (as in
// fuzz_h265_payload); odd: the rest as one frame, whose header is parsed (must not crash) and
// which is packetized at a limit from the next byte and depacketized back exactly.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_payload.hpp"
#include "predrop/media/vp9_depacketizer.hpp"
#include "vp9_packetizer.hpp"

namespace {

using predrop::media::AccessUnit;
using predrop::media::Vp9Depacketizer;

void depacketize(const std::uint8_t* data, std::size_t size) {
  Vp9Depacketizer d([](const AccessUnit&) {});
  predrop::fuzz::push_records(d, data, size);
}

void round_trip(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return;
  const std::size_t max_payload = 64 + data[0] * 4;
  const std::span<const std::uint8_t> frame(data + 1, size - 1);
  (void)predrop::media::detail::parse_vp9_frame(frame);
  (void)predrop::media::detail::parse_vp9_descriptor(frame);
  predrop::fuzz::frame_round_trip<Vp9Depacketizer>(frame, max_payload, [&](auto emit) {
    predrop::media::detail::packetize_vp9(frame, 77, false, max_payload, emit);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return predrop::fuzz::run_payload_target(data, size, round_trip, depacketize);
}

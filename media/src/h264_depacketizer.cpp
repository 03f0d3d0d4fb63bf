#include "predrop/media/h264_depacketizer.hpp"

namespace predrop::media {
namespace {

constexpr std::uint8_t kStapA = 24;
constexpr std::uint8_t kFuA = 28;

}  // namespace

void H264Depacketizer::on_payload(std::span<const std::uint8_t> payload, bool /*marker*/) {
  const std::uint8_t type = payload[0] & 0x1f;
  if (type >= 1 && type <= 23) {
    // RFC 6184 §5.6: a single NAL unit packet. A new unit ends any unfinished FU-A.
    if (in_fragment()) abort_fragment();
    append_nal(payload);
  } else if (type == kStapA) {
    // §5.7.1: STAP-A header, then { 16-bit size, NAL unit } repeated.
    if (in_fragment()) abort_fragment();
    append_aggregated(payload, 1, 1);
  } else if (type == kFuA) {
    // §5.8: FU indicator (F, NRI, 28), FU header (S, E, R, type), fragment.
    if (payload.size() < 3) {
      if (in_fragment()) abort_fragment();
      malformed();
      return;
    }
    const std::uint8_t header = payload[1];
    const auto nal_header = static_cast<std::uint8_t>((payload[0] & 0xe0) | (header & 0x1f));
    append_fragment((header & 0x80) != 0, (header & 0x40) != 0, std::span(&nal_header, 1),
                    payload.subspan(2));
  } else {
    // STAP-B, MTAP16/24, FU-B (interleaved mode only), or reserved types.
    malformed();
  }
}

}  // namespace predrop::media

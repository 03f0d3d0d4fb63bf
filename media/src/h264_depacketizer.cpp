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
    std::size_t i = 1;
    while (i < payload.size()) {
      if (payload.size() - i < 2) {
        malformed();
        break;
      }
      const std::size_t size = (std::size_t{payload[i]} << 8) | payload[i + 1];
      i += 2;
      if (size == 0 || size > payload.size() - i) {
        malformed();
        break;
      }
      append_nal(payload.subspan(i, size));
      i += size;
    }
  } else if (type == kFuA) {
    // §5.8: FU indicator (F, NRI, 28), FU header (S, E, R, type), fragment.
    if (payload.size() < 3) {
      if (in_fragment()) abort_fragment();
      malformed();
      return;
    }
    const std::uint8_t header = payload[1];
    const bool start = header & 0x80;
    const bool end = header & 0x40;
    if (start) {
      begin_fragment();
      const auto nal_header = static_cast<std::uint8_t>((payload[0] & 0xe0) | (header & 0x1f));
      append_nal(std::span(&nal_header, 1));
      append(payload.subspan(2));
    } else if (in_fragment()) {
      // Continuation: gaps were handled by push(), so this directly follows the last fragment.
      append(payload.subspan(2));
    } else {
      // The start (or a middle part) is missing: nothing to attach this fragment to.
      drop_fragment();
    }
    if (end && in_fragment()) end_fragment();
  } else {
    // STAP-B, MTAP16/24, FU-B (interleaved mode only), or reserved types.
    malformed();
  }
}

}  // namespace predrop::media

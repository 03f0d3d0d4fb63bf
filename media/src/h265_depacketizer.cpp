#include "predrop/media/h265_depacketizer.hpp"

#include "h265_packetizer.hpp"

namespace predrop::media {

void H265Depacketizer::on_payload(std::span<const std::uint8_t> payload, bool /*marker*/) {
  const auto header = detail::parse_h265_nal_header(payload);
  if (!header) {
    if (in_fragment()) abort_fragment();
    malformed();
    return;
  }
  if (header->type < detail::h265::kAp) {
    // RFC 7798 §4.4.1: a single NAL unit packet. A new unit ends any unfinished FU.
    if (in_fragment()) abort_fragment();
    append_nal(payload);
  } else if (header->type == detail::h265::kAp) {
    // §4.4.2: PayloadHdr, then { 16-bit NALU size, NAL unit } repeated (no DONL).
    if (in_fragment()) abort_fragment();
    if (payload.size() <= 2) malformed();
    append_aggregated(payload, 2, 2);
  } else if (header->type == detail::h265::kFu) {
    // §4.4.3: PayloadHdr (type 49), FU header |S|E|FuType|, the unit without its header.
    if (payload.size() < 4) {
      if (in_fragment()) abort_fragment();
      malformed();
      return;
    }
    const std::uint8_t fu = payload[2];
    const std::uint8_t nal_header[2] = {
        static_cast<std::uint8_t>((payload[0] & 0x81) | ((fu & 0x3f) << 1)), payload[1]};
    append_fragment((fu & 0x80) != 0, (fu & 0x40) != 0, nal_header, payload.subspan(3));
  } else {
    // PACI (§4.4.4) and the reserved types 51..63.
    if (in_fragment()) abort_fragment();
    malformed();
  }
}

}  // namespace predrop::media

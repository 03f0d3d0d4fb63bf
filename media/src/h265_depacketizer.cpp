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
    std::size_t i = 2;
    if (i >= payload.size()) malformed();
    while (i < payload.size()) {
      if (payload.size() - i < 2) {
        malformed();
        break;
      }
      const std::size_t size = (std::size_t{payload[i]} << 8) | payload[i + 1];
      i += 2;
      if (size < 2 || size > payload.size() - i) {
        malformed();
        break;
      }
      append_nal(payload.subspan(i, size));
      i += size;
    }
  } else if (header->type == detail::h265::kFu) {
    // §4.4.3: PayloadHdr (type 49), FU header |S|E|FuType|, the unit without its header.
    if (payload.size() < 4) {
      if (in_fragment()) abort_fragment();
      malformed();
      return;
    }
    const std::uint8_t fu = payload[2];
    const bool start = fu & 0x80;
    const bool end = fu & 0x40;
    if (start) {
      begin_fragment();
      const std::uint8_t nal_header[2] = {
          static_cast<std::uint8_t>((payload[0] & 0x81) | ((fu & 0x3f) << 1)), payload[1]};
      append_nal(nal_header);
      append(payload.subspan(3));
    } else if (in_fragment()) {
      append(payload.subspan(3));
    } else {
      drop_fragment();
    }
    if (end && in_fragment()) end_fragment();
  } else {
    // PACI (§4.4.4) and the reserved types 51..63.
    if (in_fragment()) abort_fragment();
    malformed();
  }
}

}  // namespace predrop::media

#include "predrop/media/vp9_depacketizer.hpp"

#include "vp9_packetizer.hpp"

namespace predrop::media {

void Vp9Depacketizer::on_payload(std::span<const std::uint8_t> payload, bool marker) {
  const auto d = detail::parse_vp9_descriptor(payload);
  if (!d) {
    if (in_fragment()) abort_fragment();
    malformed();
    return;
  }
  if (d->begin) {
    begin_fragment();
  } else if (!in_fragment()) {
    drop_fragment();  // its B packet is missing: nothing to attach it to
    return;
  }
  append(payload.subspan(d->size));
  if (d->end || marker) end_fragment();
}

}  // namespace predrop::media

#include "predrop/media/vp8_depacketizer.hpp"

#include "vp8_packetizer.hpp"

namespace predrop::media {

void Vp8Depacketizer::on_payload(std::span<const std::uint8_t> payload, bool marker) {
  const auto d = detail::parse_vp8_descriptor(payload);
  if (!d) {
    if (in_fragment()) abort_fragment();
    malformed();
    return;
  }
  // RFC 7741 §4.5.1: a frame begins with the packet that has S = 1 and PID = 0. The whole frame
  // is one "fragment": push() drops it when a packet of it goes missing, and so does an
  // unannounced new start.
  if (d->start && d->partition == 0) {
    begin_fragment();
  } else if (!in_fragment()) {
    drop_fragment();  // its start is missing: nothing to attach it to
    return;
  }
  append(payload.subspan(d->size));
  // The marker bit ends the frame complete (push() then emits it); a frame cut short by a new
  // timestamp without its marker is dropped like an FU that never ended.
  if (marker) end_fragment();
}

}  // namespace predrop::media

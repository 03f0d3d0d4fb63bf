#include "predrop/chain/picture_id.hpp"

namespace predrop::chain {

std::size_t picture_id_offset(PictureIdField field, std::span<const std::uint8_t> payload) {
  std::size_t at = 0;
  switch (field) {
    case PictureIdField::kNone:
      return 0;
    case PictureIdField::kVp8:
      // X, then I in the extension byte.
      if (payload.size() < 4 || (payload[0] & 0x80) == 0 || (payload[1] & 0x80) == 0) return 0;
      at = 2;
      break;
    case PictureIdField::kVp9:
      if (payload.size() < 3 || (payload[0] & 0x80) == 0) return 0;
      at = 1;
      break;
  }
  return (payload[at] & 0x80) != 0 ? at : 0;  // M: the 15-bit form
}

int PictureIdRenumber::rewrite(std::span<std::uint8_t> payload) {
  const std::size_t at = picture_id_offset(field_, payload);
  if (at == 0) return -1;
  const auto source = static_cast<std::uint16_t>(((payload[at] & 0x7f) << 8) | payload[at + 1]);
  if (!started_) {
    started_ = true;
    last_sent_ = source;
  } else if (source != last_source_) {
    last_sent_ = static_cast<std::uint16_t>((last_sent_ + 1) & 0x7fff);
  }
  last_source_ = source;
  payload[at] = static_cast<std::uint8_t>(0x80 | (last_sent_ >> 8));
  payload[at + 1] = static_cast<std::uint8_t>(last_sent_);
  return last_sent_;
}

}  // namespace predrop::chain

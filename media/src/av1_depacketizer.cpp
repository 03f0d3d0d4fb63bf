// AV1 RTP receive side (see av1_depacketizer.hpp).
#include "predrop/media/av1_depacketizer.hpp"

#include "av1_packetizer.hpp"

namespace predrop::media {

void Av1Depacketizer::append_obu() {
  // An element is at least its obu_header, plus the extension byte when the flag says so.
  if (obu_.empty() || (obu_[0] & 0x80) != 0 || ((obu_[0] & 0x04) != 0 && obu_.size() < 2)) {
    malformed();
    return;
  }
  const std::uint8_t type = (obu_[0] >> 3) & 0x0f;
  if (type == detail::kAv1TemporalDelimiter) return;  // we write our own at the unit's start
  const std::size_t header = (obu_[0] & 0x04) != 0 ? 2 : 1;
  std::uint8_t restored[2] = {static_cast<std::uint8_t>(obu_[0] | 0x02), 0};
  if (header == 2) restored[1] = obu_[1];
  append(std::span<const std::uint8_t>(restored, header));
  std::uint8_t size[8];
  const std::size_t size_bytes =
      detail::write_leb128(static_cast<std::uint32_t>(obu_.size() - header), size);
  append(std::span<const std::uint8_t>(size, size_bytes));
  append(std::span<const std::uint8_t>(obu_).subspan(header));
}

void Av1Depacketizer::on_payload(std::span<const std::uint8_t> payload, bool /*marker*/) {
  if (payload.empty()) {
    if (in_fragment()) abort_fragment();
    malformed();
    return;
  }
  // The unit starts with a temporal delimiter (obu_type 2, has_size, size 0).
  if (unit_size() == 0) {
    static constexpr std::uint8_t kTemporalDelimiter[2] = {0x12, 0x00};
    append(kTemporalDelimiter);
  }
  const std::uint8_t aggregation = payload[0];
  const bool z = (aggregation & 0x80) != 0;
  const bool y = (aggregation & 0x40) != 0;
  const unsigned w = (aggregation >> 4) & 3;
  std::size_t i = 1;
  for (unsigned k = 0; i < payload.size(); ++k) {
    std::size_t size = payload.size() - i;
    if (w == 0 || k + 1 < w) {
      const auto leb = detail::read_leb128(payload.subspan(i));
      if (!leb || leb->first > payload.size() - i - leb->second) {
        if (in_fragment()) abort_fragment();
        malformed();
        return;
      }
      i += leb->second;
      size = leb->first;
    }
    const auto element = payload.subspan(i, size);
    i += size;
    const bool last = i >= payload.size() || (w != 0 && k + 1 == w);
    if (k == 0 && z) {
      if (!in_fragment()) {
        drop_fragment();  // the start of this OBU was lost
        if (last) return;
        continue;
      }
      obu_.insert(obu_.end(), element.begin(), element.end());
    } else {
      if (in_fragment()) abort_fragment();  // the previous OBU never ended
      obu_.assign(element.begin(), element.end());
    }
    if (last && y) {
      if (!in_fragment()) begin_fragment();
      return;
    }
    if (in_fragment()) end_fragment();
    append_obu();
    if (last) return;
  }
}

}  // namespace predrop::media

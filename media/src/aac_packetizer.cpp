// RFC 3640 AAC-hbr packetization (see aac_packetizer.hpp).
#include "aac_packetizer.hpp"

#include <algorithm>

namespace predrop::media::detail {

bool AacPacketizer::add(Bytes au, PayloadSink& sink) {
  // MPEG-TS carries ADTS frames; RFC 3640 carries raw access units.
  if (auto adts = parse_adts(au); adts) {
    if (adts->raw_blocks != 1 || adts->frame_size > au.size()) {
      warn_("ADTS frame with several raw blocks or truncated; skipped");
      return false;
    }
    if (config_.empty()) {
      config_ =
          audio_specific_config(adts->object_type, adts->sample_rate_index, adts->channel_config);
    }
    au = au.subspan(adts->header_size, adts->frame_size - adts->header_size);
  }
  // RFC 3640 §3.3.6 (AAC-hbr): AU-headers-length = 16 bits, then one AU-header of
  // AU-size(13) | AU-Index(3) = 0. The 13-bit size bounds an access unit to 8191 bytes.
  if (au.empty() || au.size() > 8191) {
    warn_("AAC access unit of " + std::to_string(au.size()) + " bytes skipped");
    return false;
  }
  const auto au_header = static_cast<std::uint16_t>(au.size() << 3);
  const std::uint8_t head[4] = {0x00, 0x10, static_cast<std::uint8_t>(au_header >> 8),
                                static_cast<std::uint8_t>(au_header & 0xff)};
  // §3.2.3: an AU larger than a packet is fragmented; every fragment repeats the AU-header with
  // the full AU size, and the marker bit is set only on the last one.
  const std::size_t chunk = max_payload_ - sizeof head;
  Bytes rest = au;
  while (!rest.empty()) {
    const std::size_t n = std::min(chunk, rest.size());
    sink.add(head, rest.first(n), n == rest.size(), false);
    rest = rest.subspan(n);
  }
  return true;
}

}  // namespace predrop::media::detail

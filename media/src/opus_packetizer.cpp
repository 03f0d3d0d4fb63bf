// RFC 7587 Opus packetization (see opus_packetizer.hpp).
#include "opus_packetizer.hpp"

namespace predrop::media::detail {

bool OpusPacketizer::add(Bytes packet, PayloadSink& sink) {
  // RFC 7587 §4.2: one Opus packet per RTP packet, never fragmented.
  if (packet.size() > max_payload_) {
    warn_("Opus packet of " + std::to_string(packet.size()) +
          " bytes exceeds max_payload; skipped");
    return false;
  }
  // §4.1: the marker bit marks the first packet of a talkspurt; without DTX, only the first.
  sink.add({}, packet, !marker_sent_, false);
  marker_sent_ = true;
  return true;
}

}  // namespace predrop::media::detail

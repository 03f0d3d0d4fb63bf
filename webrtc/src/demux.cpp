// RFC 7983 §7 first-byte demux; see predrop/webrtc/demux.hpp.
#include "predrop/webrtc/demux.hpp"

namespace predrop::webrtc {

PacketKind classify_packet(std::span<const std::uint8_t> data) {
  if (data.empty()) return PacketKind::Unknown;
  const std::uint8_t b = data[0];
  if (b <= 3) return PacketKind::Stun;
  if (b >= 16 && b <= 19) return PacketKind::Zrtp;
  if (b >= 20 && b <= 63) return PacketKind::Dtls;
  if (b >= 64 && b <= 79) return PacketKind::TurnChannel;
  if (b >= 128 && b <= 191) {
    // RFC 5761 §4: RTCP packet types 192..223 (SR 200, RR 201, RTPFB 205, PSFB 206, ...) sit
    // where RTP's marker bit and payload type are; RTP payload types 64..95 are not used.
    if (data.size() < 2) return PacketKind::Unknown;
    return data[1] >= 192 && data[1] <= 223 ? PacketKind::Rtcp : PacketKind::Rtp;
  }
  return PacketKind::Unknown;
}

std::string_view to_string(PacketKind kind) {
  switch (kind) {
    case PacketKind::Stun:
      return "stun";
    case PacketKind::Zrtp:
      return "zrtp";
    case PacketKind::Dtls:
      return "dtls";
    case PacketKind::TurnChannel:
      return "turn-channel";
    case PacketKind::Rtp:
      return "rtp";
    case PacketKind::Rtcp:
      return "rtcp";
    case PacketKind::Unknown:
      return "unknown";
  }
  return "unknown";
}

}  // namespace predrop::webrtc

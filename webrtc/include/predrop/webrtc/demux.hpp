#pragma once
// What a datagram on a WebRTC 5-tuple is, by its first byte (RFC 7983 §7, updating RFC 5764
// §5.1.2), and RTP vs RTCP by the second (RFC 5761 §4, rtcp-mux):
//
//                  +----------------+
//                  |        [0..3] -+--> STUN
//                  |      [16..19] -+--> ZRTP
//      packet -->  |      [20..63] -+--> DTLS
//                  |      [64..79] -+--> TURN channel
//                  |    [128..191] -+--> RTP/RTCP (second byte 192..223: RTCP)
//                  +----------------+
//
// Pure, no allocation; safe on any input.
#include <cstdint>
#include <span>
#include <string_view>

namespace predrop::webrtc {

/// The protocol a datagram belongs to.
enum class PacketKind : std::uint8_t { Stun, Zrtp, Dtls, TurnChannel, Rtp, Rtcp, Unknown };

/// Classifies one datagram; empty or unassigned first bytes are Unknown.
PacketKind classify_packet(std::span<const std::uint8_t> data);

/// Short, stable text for a PacketKind ("stun", "dtls", ...).
std::string_view to_string(PacketKind kind);

}  // namespace predrop::webrtc

#pragma once
// The RTCP feedback a WebRTC receiver sends about lost packets and lost pictures:
//
// Generic NACK (RFC 4585 §6.2.1): RTPFB (PT 205), FMT 1, one or more FCIs of
//    0                   1                   2                   3
//    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//   |V=2|P|  FMT=1  |    PT=205     |           length              |
//   |                     SSRC of packet sender                     |
//   |                      SSRC of media source                     |
//   |            PID                |             BLP               |  (FCI, repeated)
// PID names a lost packet; bit i of BLP (LSB = 0) names PID + i + 1 as lost too.
//
// Picture Loss Indication (RFC 4585 §6.3.1): PSFB (PT 206), FMT 1, no FCI.
// Full Intra Request (RFC 5104 §4.3.1): PSFB, FMT 4, FCIs of (SSRC, seq nr, 3 reserved bytes).
//
// Contract: pure functions over caller memory; parse_generic_nack() appends to the caller's
// vector (which keeps its capacity between calls: no allocation in steady state), at most
// `max_sequences` numbers, and checks every length before reading. write_generic_nack() is for
// tests and fuzzing.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace predrop::wire {

/// RTCP payload-specific feedback packet type (RFC 4585 §6.1) and the FMTs read here.
inline constexpr std::uint8_t kRtcpPsfb = 206;
inline constexpr std::uint8_t kGenericNackFmt = 1;  ///< RTPFB FMT 1.
inline constexpr std::uint8_t kPliFmt = 1;          ///< PSFB FMT 1.
inline constexpr std::uint8_t kFirFmt = 4;          ///< PSFB FMT 4 (RFC 5104).

/// The fixed fields of one generic NACK message.
struct GenericNack {
  std::uint32_t sender_ssrc = 0;
  std::uint32_t media_ssrc = 0;
  std::uint16_t fcis = 0;  ///< PID+BLP pairs in it.
  /// Sequence numbers it named beyond `max_sequences` (not appended).
  std::uint32_t truncated = 0;
};

/// Parses one generic NACK (exactly the RTCP packet, header included) and appends the sequence
/// numbers it names (each FCI's PID, then its BLP bits in order) to `sequences`, at most
/// `max_sequences` in all; nullopt (and `sequences` unchanged) if it is not one or is malformed
/// (length past the end, no FCI).
std::optional<GenericNack> parse_generic_nack(std::span<const std::uint8_t> data,
                                              std::vector<std::uint16_t>& sequences,
                                              std::size_t max_sequences = 65536);

/// What a PLI or FIR asks for.
enum class KeyFrameRequestKind : std::uint8_t { kPli, kFir };

/// One PLI or FIR.
struct KeyFrameRequest {
  KeyFrameRequestKind kind = KeyFrameRequestKind::kPli;
  std::uint32_t sender_ssrc = 0;
  /// PLI: the media source field; FIR: the SSRC of its first FCI (the media source field of a
  /// FIR is unused, RFC 5104 §4.3.1.2).
  std::uint32_t media_ssrc = 0;
};

/// Parses one PLI or FIR (exactly the RTCP packet); nullopt if it is neither or malformed.
std::optional<KeyFrameRequest> parse_key_frame_request(std::span<const std::uint8_t> data);

/// Writes a generic NACK for `lost` (any order; each run of PID..PID+16 becomes one FCI, in the
/// order first met); returns the bytes written, 0 if `out` is too small or `lost` is empty.
std::size_t write_generic_nack(std::uint32_t sender_ssrc, std::uint32_t media_ssrc,
                               std::span<const std::uint16_t> lost, std::span<std::uint8_t> out);

}  // namespace predrop::wire

#pragma once
// Transport-wide congestion control feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01
// §3.1), the RTCP message a browser sends about every packet that carried the transport-wide
// sequence number extension:
//
//    0                   1                   2                   3
//    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//   |V=2|P|  FMT=15 |    PT=205     |           length              |
//   |                     SSRC of packet sender                     |
//   |                      SSRC of media source                     |
//   |      base sequence number     |      packet status count      |
//   |                 reference time                | fb pkt. count |
//   |          packet chunk         |         packet chunk          |  ...
//   |  recv delta   |  recv delta   | ...                           |  (padded to 32 bits)
//
// Chunks (§3.1.3, §3.1.4): run length (0 | symbol:2 | run:13) or status vector
// (1 | S | 14 one-bit or 7 two-bit symbols). Symbols: 0 not received, 1 received with a 1-byte
// delta, 2 received with a 2-byte signed delta, 3 reserved (refused). Deltas count 250 µs; the
// reference time counts 64 ms (24 bits, signed).
//
// Contract: parse_transport_cc() is a pure function over caller memory; it appends to the
// caller's vector (which keeps its capacity between calls: no allocation in steady state) and
// checks every length before reading. write_transport_cc() is for tests and fuzzing.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace predrop::wire {

/// RTCP RTPFB packet type and the transport-cc FMT (§3.1).
inline constexpr std::uint8_t kRtcpRtpfb = 205;
inline constexpr std::uint8_t kTransportCcFmt = 15;
/// Delta resolution (§3.1.5) and reference-time unit (§3.1).
inline constexpr std::int64_t kTwccDeltaUs = 250;
inline constexpr std::int64_t kTwccReferenceUs = 64'000;

/// One packet the feedback reports on.
struct TwccPacket {
  std::uint16_t sequence = 0;  ///< Transport-wide sequence number.
  bool received = false;
  /// Arrival time in µs on the receiver's clock (reference time + deltas); 0 if not received.
  std::int64_t arrival_us = 0;

  friend bool operator==(const TwccPacket&, const TwccPacket&) = default;
};

/// The fixed fields of one feedback message.
struct TwccFeedback {
  std::uint32_t sender_ssrc = 0;
  std::uint32_t media_ssrc = 0;
  std::uint16_t base_sequence = 0;
  std::uint16_t status_count = 0;
  std::int32_t reference_time = 0;  ///< In 64 ms units, sign-extended from 24 bits.
  std::uint8_t feedback_count = 0;
};

/// Parses one transport-cc message (exactly the RTCP packet, header included) and appends its
/// `status_count` packets to `packets`; nullopt (and `packets` unchanged) if it is not one or is
/// malformed (a chunk or delta runs past the end, a reserved symbol).
std::optional<TwccFeedback> parse_transport_cc(std::span<const std::uint8_t> data,
                                               std::vector<TwccPacket>& packets);

/// Writes a message reporting `packets` (consecutive sequence numbers from the first; arrival
/// times on 250 µs steps after `reference_time` × 64 ms) with two-bit status vector chunks;
/// returns the bytes written, 0 if `out` is too small or the input cannot be encoded.
std::size_t write_transport_cc(const TwccFeedback& header, std::span<const TwccPacket> packets,
                               std::span<std::uint8_t> out);

}  // namespace predrop::wire

#pragma once
// RTP header codec: RFC 3550 §5.1 (fixed header, CSRC list, padding), §5.3.1 (header extension),
// RFC 8285 §4.2 (one-byte header extension elements, profile 0xBEDE) and §4.3 (two-byte elements,
// profile 0x100X), plus the two extension elements predrop uses:
//
//   urn:predrop:stage (docs/design.md §4), 8 data bytes, all big-endian:
//     u32 stage id | u16 index among the packets *sent* in this stage | u16 packets sent in stage
//   http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time (webrtc.org "Absolute Send Time"),
//     3 data bytes: the sender's send time in seconds as 6.18 unsigned fixed point, so it wraps
//     every 64 s and has a resolution of 1/262144 s (about 3.8 µs).
//
// Contract: parse_rtp() and the writers are pure functions over caller memory. They never allocate
// on success (an error carries a message string, which does allocate; after SRTP authentication
// malformed packets are a peer bug, not a flood). parse_rtp() checks every length before reading
// and returns views into the caller's buffer, valid while that buffer is.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "predrop/core/result.hpp"

namespace predrop::wire {

/// RTP version carried in the two top bits of every packet (RFC 3550 §5.1).
inline constexpr std::uint8_t kRtpVersion = 2;
/// Size of the fixed RTP header without CSRCs or extension (RFC 3550 §5.1).
inline constexpr std::size_t kRtpFixedHeaderSize = 12;
/// "defined by profile" value of a one-byte-element extension block (RFC 8285 §4.2).
inline constexpr std::uint16_t kOneByteExtensionProfile = 0xBEDE;
/// "defined by profile" value of a two-byte-element block, low 4 bits are appbits (RFC 8285 §4.3).
inline constexpr std::uint16_t kTwoByteExtensionProfile = 0x1000;
/// SDP extmap URI of predrop's stage extension (docs/design.md §4).
inline constexpr std::string_view kStageExtensionUri = "urn:predrop:stage";
/// SDP extmap URI of the abs-send-time extension.
inline constexpr std::string_view kAbsSendTimeUri =
    "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time";
/// Data bytes of the stage extension element.
inline constexpr std::size_t kStageExtensionSize = 8;
/// Data bytes of the abs-send-time extension element.
inline constexpr std::size_t kAbsSendTimeSize = 3;
/// SDP extmap URI of the transport-wide sequence number (draft-holmer-rmcat-transport-wide-cc-
/// extensions-01 §2): what a browser's transport-cc feedback names packets by.
inline constexpr std::string_view kTransportSequenceUri =
    "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01";
/// Data bytes of the transport-wide sequence number element (16 bits).
inline constexpr std::size_t kTransportSequenceSize = 2;
/// Largest id usable with one-byte elements; 15 is reserved (RFC 8285 §4.2).
inline constexpr std::uint8_t kMaxOneByteExtensionId = 14;

/// The per-packet fields of an RTP fixed header (RFC 3550 §5.1). V is always 2; CSRCs, padding
/// and the X bit are handled by the codec.
struct RtpHeader {
  bool marker = false;
  std::uint8_t payload_type = 0;  ///< 7 bits.
  std::uint16_t sequence = 0;
  std::uint32_t timestamp = 0;
  std::uint32_t ssrc = 0;

  friend bool operator==(const RtpHeader&, const RtpHeader&) = default;
};

/// predrop's per-packet stage tag (urn:predrop:stage).
struct StageExtension {
  std::uint32_t stage_id = 0;
  std::uint16_t index = 0;  ///< Index among the packets *sent* in this stage (after discarding).
  std::uint16_t count = 0;  ///< Number of packets sent in this stage.

  friend bool operator==(const StageExtension&, const StageExtension&) = default;
};

/// Extension ids negotiated with a=extmap; 0 means "not negotiated". Ids 1..14 fit the one-byte
/// form we write; parse_rtp() also finds ids up to 255 in two-byte blocks.
struct RtpExtensionIds {
  std::uint8_t stage = 0;
  std::uint8_t abs_send_time = 0;
  std::uint8_t transport_sequence = 0;  ///< Transport-wide sequence number (WebRTC peers).

  friend bool operator==(const RtpExtensionIds&, const RtpExtensionIds&) = default;
};

/// The extension elements write_rtp_header() emits: an element is written iff its id is non-zero.
struct RtpExtensions {
  RtpExtensionIds ids;
  StageExtension stage;
  std::uint32_t abs_send_time = 0;  ///< 24-bit 6.18 fixed-point seconds; upper bits ignored.
  std::uint16_t transport_sequence = 0;
};

/// A parsed RTP packet: values plus views into the caller's buffer.
struct RtpPacketView {
  RtpHeader header;
  std::uint8_t csrc_count = 0;
  bool has_extension = false;           ///< X bit.
  std::uint16_t extension_profile = 0;  ///< "defined by profile" (0xBEDE, 0x100X, ...) if X.
  std::size_t header_size = 0;          ///< Fixed header + CSRC list + extension block, in bytes.
  std::size_t padding_size = 0;         ///< RTP padding removed from the end, count byte included.
  std::span<const std::uint8_t> csrcs;  ///< Raw CSRC list, 4 bytes per entry.
  std::span<const std::uint8_t> extension_data;  ///< Extension body after its 4-byte header.
  std::span<const std::uint8_t> payload;         ///< Payload with padding removed.
  std::optional<StageExtension> stage;           ///< Found under RtpExtensionIds::stage.
  std::optional<std::uint32_t> abs_send_time;    ///< Found under RtpExtensionIds::abs_send_time.
  /// Found under RtpExtensionIds::transport_sequence.
  std::optional<std::uint16_t> transport_sequence;

  /// The i-th CSRC; i < csrc_count.
  std::uint32_t csrc(std::size_t i) const;
};

/// Parses an RTP packet (RFC 3550 §5.1, §5.3.1; RFC 8285 §4.2/§4.3). Elements under the given
/// ids are decoded; other elements are skipped; an element under a known id with the wrong size
/// is ignored (left unset) rather than failing the packet. Blocks with another profile are
/// skipped whole. Rejects: short buffers, version != 2, CSRC list / extension / padding that
/// overrun the packet, padding count 0, and element lengths that overrun the block.
core::Result<RtpPacketView> parse_rtp(std::span<const std::uint8_t> packet,
                                      const RtpExtensionIds& ids = {});

/// Header size write_rtp_header() produces for these ids: 12, plus a 4-byte block header and the
/// elements padded to 32 bits if any id is set.
std::size_t rtp_header_size(const RtpExtensionIds& ids);

/// Writes a fixed header (no CSRCs, no padding) and, if any extension id is set, a one-byte
/// extension block: the stage element first, then abs-send-time, then the transport-wide sequence
/// number, zero-padded to 32 bits. Fails
/// on ids outside 1..14, equal ids, payload_type > 127 or a short buffer. Returns bytes written.
core::Result<std::size_t> write_rtp_header(std::span<std::uint8_t> out, const RtpHeader& header,
                                           const RtpExtensions& ext);

/// write_rtp_header() followed by a copy of payload. Returns the packet size.
core::Result<std::size_t> write_rtp_packet(std::span<std::uint8_t> out, const RtpHeader& header,
                                           const RtpExtensions& ext,
                                           std::span<const std::uint8_t> payload);

/// Where write_rtp_header() puts each per-packet field, computed once per stream so that the send
/// path can rewrite a header in place instead of serializing it again.
///
/// Layout contract (what write_rtp_header() writes for the same ids, and what patch() needs):
///   [0]      V=2, P=0, X=1 iff an id is set, CC=0
///   [1]      M bit | payload type
///   [2..3]   sequence, [4..7] timestamp, [8..11] SSRC
///   [12..13] 0xBEDE, [14..15] block length in 32-bit words
///   then, in this order, for each element whose id is set:
///     stage:         one byte (id << 4 | 7), 8 data bytes
///     abs-send-time: one byte (id << 4 | 2), 3 data bytes
///     transport-wide sequence number: one byte (id << 4 | 1), 2 data bytes
///   then zero padding to a 32-bit boundary; the payload follows at header_size().
/// patch() checks the length and the bytes that identify the layout (V, X, CC, 0xBEDE, block
/// length, element id bytes) and fails if they differ, so a buffer of another layout is never
/// silently corrupted. It does not look at the payload.
class RtpHeaderLayout {
 public:
  /// The layout for these ids; fails for ids outside 1..14 or equal non-zero ids.
  static core::Result<RtpHeaderLayout> create(const RtpExtensionIds& ids);

  /// Bytes of header before the payload.
  std::size_t header_size() const { return header_size_; }
  /// The ids this layout was made for.
  const RtpExtensionIds& ids() const { return ids_; }
  /// True if packet begins with a header of this layout (see the contract above).
  bool matches(std::span<const std::uint8_t> packet) const;

  /// Rewrites marker, payload type, sequence, timestamp, SSRC, the stage element and the
  /// abs-send-time value in place (elements absent from the layout are left alone).
  core::Status patch(std::span<std::uint8_t> packet, const RtpHeader& header,
                     const StageExtension& stage, std::uint32_t abs_send_time) const;

  /// Offset of the transport-wide sequence number's data bytes; 0 when the layout has none.
  std::size_t transport_sequence_offset() const { return transport_offset_; }

  /// Rewrites only abs-send-time, for stamping right before protect-and-send after pacing.
  core::Status patch_abs_send_time(std::span<std::uint8_t> packet,
                                   std::uint32_t abs_send_time) const;

 private:
  RtpHeaderLayout() = default;

  RtpExtensionIds ids_;
  std::size_t header_size_ = kRtpFixedHeaderSize;
  std::size_t stage_offset_ = 0;      ///< Offset of the stage element's data; 0 = absent.
  std::size_t abs_offset_ = 0;        ///< Offset of the abs-send-time data; 0 = absent.
  std::size_t transport_offset_ = 0;  ///< Offset of the transport-wide sequence; 0 = absent.
};

// ---- abs-send-time arithmetic (6.18 fixed-point seconds, 24 bits, wraps every 64 s) ----

/// One wrap period of abs-send-time: 2^24 / 2^18 s = 64 s.
inline constexpr std::uint64_t kAbsSendTimePeriodUs = 64'000'000;

/// Converts a time in µs (any epoch, e.g. a monotonic clock) to the 24-bit value, rounded to the
/// nearest 1/262144 s, modulo 64 s.
constexpr std::uint32_t abs_send_time_from_us(std::uint64_t time_us) {
  const std::uint64_t in_period = time_us % kAbsSendTimePeriodUs;
  return static_cast<std::uint32_t>(((in_period << 18) + 500'000) / 1'000'000) & 0xFFFFFFu;
}

/// Converts a 24-bit value (upper bits ignored) to µs within [0, 64 s), rounded to nearest.
constexpr std::uint64_t abs_send_time_to_us(std::uint32_t abs_send_time) {
  return ((std::uint64_t{abs_send_time & 0xFFFFFFu} * 1'000'000) + (1u << 17)) >> 18;
}

/// later - earlier in µs, wrap-safe: the result is taken in [-32 s, 32 s), so two stamps less
/// than 32 s apart compare correctly across a wrap.
constexpr std::int64_t abs_send_time_delta_us(std::uint32_t later, std::uint32_t earlier) {
  std::int64_t d = static_cast<std::int64_t>((later - earlier) & 0xFFFFFFu);
  if (d >= (1 << 23)) {
    d -= (1 << 24);
  }
  // Round half away from zero so that delta(a, b) == -delta(b, a).
  const std::int64_t scaled = d * 1'000'000;
  return scaled >= 0 ? (scaled + (1 << 17)) >> 18 : -((-scaled + (1 << 17)) >> 18);
}

}  // namespace predrop::wire

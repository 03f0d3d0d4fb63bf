#pragma once
// MPEG audio (MP3) over RTP per RFC 2250 §3.5, both directions, as pure functions over spans (no
// FFmpeg). Static payload type 14 (RFC 3551 Table 4, "MPA/90000"): the RTP clock is 90 kHz
// whatever the sampling rate. Each payload starts with a 4-byte header, then MPEG audio data:
//
//    0                   1                   2                   3
//    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |             MBZ               |          Frag_offset          |
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Frag_offset is the byte offset of the data in its audio frame. A payload holds whole frames or
// one fragment of a frame; every fragment of a frame carries the frame's timestamp (§3.5). We send
// one frame per packet (so a packet belongs to exactly one frame, the planner's rule), fragmented
// only when the frame exceeds the payload limit. RFC 5219 (ADUs) was considered; docs/media.md
// "MP3" says why it is not used.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace predrop::media {

/// The static RTP payload type of MPEG audio (RFC 3551 Table 4).
inline constexpr std::uint8_t kMpaPayloadType = 14;

/// Bytes of the RFC 2250 MPEG audio-specific header.
inline constexpr std::size_t kMpaHeaderBytes = 4;

/// One parsed MPA payload.
struct MpaPayload {
  std::uint16_t fragment_offset = 0;
  /// The MPEG audio data after the header (a view into the payload).
  std::span<const std::uint8_t> data;
};

/// Parses an RFC 2250 MPA payload; std::nullopt when it is shorter than the header plus one byte.
/// MBZ is not checked (§3.5: receivers ignore it).
std::optional<MpaPayload> parse_mpa_payload(std::span<const std::uint8_t> payload);

/// The length in bytes of the MPEG audio frame whose header starts `data` (ISO/IEC 11172-3
/// §2.4.2.3, 13818-3 §2.4.2.3 and the MPEG 2.5 extension; layers I-III), or std::nullopt for a
/// bad sync word, reserved fields or the free-format bitrate.
std::optional<std::size_t> mpeg_audio_frame_bytes(std::span<const std::uint8_t> data);

/// Packetizes one MPEG audio frame into payloads of at most `max_payload` bytes (> 4): one
/// payload when it fits, else fragments with their byte offsets. Calls emit(header, data) per
/// payload. Frames over 65535 bytes cannot be described (16-bit offset) and are not emitted;
/// returns false for them.
template <typename Emit>
bool packetize_mpa(std::span<const std::uint8_t> frame, std::size_t max_payload, Emit&& emit) {
  if (frame.empty() || frame.size() > 0xffff || max_payload <= kMpaHeaderBytes) return false;
  const std::size_t chunk = max_payload - kMpaHeaderBytes;
  for (std::size_t at = 0; at < frame.size(); at += chunk) {
    const std::uint8_t header[kMpaHeaderBytes] = {0, 0, static_cast<std::uint8_t>(at >> 8),
                                                  static_cast<std::uint8_t>(at & 0xff)};
    emit(std::span<const std::uint8_t>(header),
         frame.subspan(at, std::min(chunk, frame.size() - at)));
  }
  return true;
}

/// Reassembles MPA payloads into audio frames (the receive side): a payload at offset 0 starts a
/// frame, one at the offset where the frame in progress ends continues it, anything else (a
/// missing fragment) drops the frame in progress until the next offset 0. A frame is emitted when
/// the next one starts or on flush(), with its RTP timestamp, unless it is shorter than its own
/// header says (its last fragment was lost).
class MpaReassembler {
 public:
  /// Receives (rtp_timestamp, frame bytes); the bytes are valid during the call.
  using Callback = std::function<void(std::uint32_t, std::span<const std::uint8_t>)>;
  explicit MpaReassembler(Callback on_frame) : on_frame_(std::move(on_frame)) {}
  /// One RTP payload with its timestamp.
  void push(std::uint32_t rtp_timestamp, std::span<const std::uint8_t> payload);
  /// Emits the frame in progress, if any.
  void flush();
  /// Payloads too short, or fragments that did not continue a frame.
  std::uint64_t malformed() const { return malformed_; }

 private:
  Callback on_frame_;
  std::vector<std::uint8_t> frame_;
  std::uint32_t timestamp_ = 0;
  bool have_ = false;
  std::uint64_t malformed_ = 0;
};

}  // namespace predrop::media

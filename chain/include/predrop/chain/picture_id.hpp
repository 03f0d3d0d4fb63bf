#pragma once
// VP8/VP9 PictureIDs renumbered over the pictures actually sent, as the transmitter renumbers
// RTP sequence numbers over the packets actually sent.
//
// Why: a browser's WebRTC receiver (libwebrtc's frame reference finder) takes a VP8/VP9 picture
// without temporal-layer fields as referencing the picture whose PictureID is one less, and a
// picture whose predecessor never arrives is not decoded until the next key frame. The
// packetizer numbers every picture of the file, so a pre-discarded picture left a gap: with
// disposable pictures (VP8/VP9 temporal layers) the rest of the GOP after the first discard
// stalled in the browser, exactly what discarding disposable pictures is meant to avoid.
// Renumbered, a discarded disposable picture is invisible; a lost one still leaves a gap (the
// sequence numbers say it is lost, and NACK or the next key frame repairs it).
//
// The descriptor is rewritten in place before SRTP; only the 15-bit form (M = 1) the packetizers
// write is touched. A picture is recognised by its source PictureID changing from one packet to
// the next; with nothing discarded the output equals the input.
#include <cstddef>
#include <cstdint>
#include <span>

namespace predrop::chain {

/// Where a track's payloads carry a PictureID.
enum class PictureIdField : std::uint8_t {
  kNone,
  kVp8,  ///< RFC 7741 §4.2: X = 1, then I = 1, then M|PictureID (bytes 2-3)
  kVp9,  ///< RFC 9628 §4.2: I = 1, then M|PictureID (bytes 1-2)
};

/// Offset of the 15-bit PictureID in `payload`, or 0 if it has none (or only the 7-bit one).
std::size_t picture_id_offset(PictureIdField field, std::span<const std::uint8_t> payload);

/// One track's renumbering (see the file comment). Allocates nothing.
class PictureIdRenumber {
 public:
  explicit PictureIdRenumber(PictureIdField field = PictureIdField::kNone) : field_(field) {}
  /// Rewrites the PictureID of one packet's payload about to be sent; returns the PictureID
  /// written (or -1 when the payload carries none).
  int rewrite(std::span<std::uint8_t> payload);

 private:
  PictureIdField field_;
  bool started_ = false;
  std::uint16_t last_source_ = 0;
  std::uint16_t last_sent_ = 0;
};

}  // namespace predrop::chain

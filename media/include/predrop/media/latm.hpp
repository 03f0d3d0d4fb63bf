#pragma once
// MPEG-4 audio in LATM over RTP ("MP4A-LATM", RFC 6416; the syntax is ISO/IEC 14496-3 §1.7.3),
// as GStreamer's rtpmp4apay (what rtspclientsink makes of AAC) and FFmpeg's LATM muxer send it:
// cpresent=0, so the StreamMuxConfig is out of band, in the SDP's fmtp `config=` (hex), and
// each RTP payload is one or more AudioMuxElements — or a fragment of one, the marker bit on
// its last packet (RFC 6416 §6.1) — each a PayloadLengthInfo (the frame's length in bytes, as a
// run of bytes summed while they are 255) and a PayloadMux (the frame) per subframe.
//
// The live source serves AAC one way only, as RFC 3640 AAC-hbr (docs/live.md "Audio"), so a
// LATM publisher's frames are repacked into it: LatmDepacketizer turns each completed element
// (numSubFrames + 1 access units at one RTP timestamp) into one AAC-hbr payload
// (sizelength 13, indexlength 3, indexdeltalength 3), and the viewers' SDP announces
// MPEG4-GENERIC with the StreamMuxConfig's AudioSpecificConfig as its `config`.
//
// What is read: audioMuxVersion 0 or 1 (audioMuxVersionA 0), allStreamsSameTimeFraming 1, one
// program of one layer, frameLengthType 0 (a byte length per frame), AAC object types 1-4 with a
// channelConfiguration 1-7 and 1024-sample frames, explicit SBR/PS (object type 5 or 29) or the
// backward-compatible sync extension (0x2b7) after the core config. GStreamer's config stops
// right after the AudioSpecificConfig (no frameLengthType, latmBufferFullness or flags, as
// FFmpeg's RTP demuxer also tolerates): fields missing at the end are taken as 0. Anything else
// is refused with a reason (the publisher's audio is then not served); in-band configs
// (cpresent=1) are the caller's to refuse. Pure functions and one class over spans, no FFmpeg:
// every read checks the length first, malformed input is an error or a dropped packet (counted).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"

namespace predrop::media {

/// What a StreamMuxConfig says (see the file comment).
struct LatmConfig {
  /// The AudioSpecificConfig's bits, left-aligned and zero-padded to whole bytes (the
  /// MPEG4-GENERIC `config`, what an MP4 file's esds carries).
  std::vector<std::uint8_t> audio_specific_config;
  int object_type = 2;            ///< The core's object type (2 = AAC-LC), under SBR/PS if any.
  std::uint32_t sample_rate = 0;  ///< The core's sampling rate.
  int channels = 0;               ///< From channelConfiguration (7 is 8 channels).
  int subframes = 1;              ///< numSubFrames + 1: access units per AudioMuxElement.
  bool other_data = false;        ///< otherDataPresent: nothing follows the first element.
  friend bool operator==(const LatmConfig&, const LatmConfig&) = default;
};

/// Parses a StreamMuxConfig (the bytes of fmtp `config=`); an error names what is unsupported
/// or where it is truncated.
core::Result<LatmConfig> parse_stream_mux_config(std::span<const std::uint8_t> config);
/// The same from its hex text (fmtp `config=40002320`, either case, an even number of digits).
core::Result<LatmConfig> parse_latm_config_hex(std::string_view hex);

/// Counters of a LatmDepacketizer.
struct LatmStats {
  std::uint64_t elements = 0;   ///< Payloads given out (AudioMuxElements, or packets of several).
  std::uint64_t fragments = 0;  ///< Packets that were a fragment without the marker.
  /// Packets dropped: a length past the end, a zero or too long frame, a fragment after a
  /// sequence gap or of another timestamp, an element larger than kMaxElementBytes.
  std::uint64_t malformed = 0;
};

/// Reassembles a publisher's MP4A-LATM RTP into RFC 3640 AAC-hbr payloads (see the file comment).
class LatmDepacketizer {
 public:
  /// The most bytes of one AudioMuxElement (fragments included): 8 channels of the largest
  /// AAC frame (6144 bits each) are 6 KiB, per subframe.
  static constexpr std::size_t kMaxElementBytes = 16384;

  explicit LatmDepacketizer(const LatmConfig& config);

  /// One RTP packet's payload. Returns the AAC-hbr payload of the access units it completes (in
  /// the depacketizer's buffer, valid until the next call): every frame of the element(s), in
  /// order, at the packet's timestamp; empty while an element is incomplete or when the packet
  /// is dropped (LatmStats). A packet after a sequence gap that continues an element (its
  /// timestamp, no marker before) is dropped with the rest of that element.
  std::span<const std::uint8_t> push(std::uint16_t sequence, std::uint32_t timestamp, bool marker,
                                     std::span<const std::uint8_t> payload);
  /// A partial element is forgotten (the RTP stream starts over).
  void reset();
  const LatmStats& stats() const { return stats_; }

 private:
  bool convert(std::span<const std::uint8_t> element);

  LatmConfig config_;
  std::vector<std::uint8_t> partial_;  // the fragments of the element in progress
  bool have_last_ = false;             // a packet came before: last_sequence_ is valid
  bool broken_ = false;                // the element in progress lost a fragment: drop to marker
  bool last_marker_ = true;
  std::uint16_t last_sequence_ = 0;
  std::uint32_t last_timestamp_ = 0;
  std::uint32_t partial_timestamp_ = 0;
  std::vector<std::span<const std::uint8_t>> frames_;
  std::vector<std::uint8_t> out_;
  LatmStats stats_;
};

}  // namespace predrop::media

#pragma once
// Private to media/src: VP9 into RTP payloads per RFC 9628, and the parsers its depacketizer
// shares. A sample (one frame, or a superframe of several, VP9 bitstream spec Annex B) is one
// "picture" sent as a run of packets, each led by the payload descriptor (§4.2):
//
//        0 1 2 3 4 5 6 7
//       +-+-+-+-+-+-+-+-+
//       |I|P|L|F|B|E|V|Z| (REQUIRED)   P: inter-picture predicted, B/E: first/last packet of
//       +-+-+-+-+-+-+-+-+              the picture, V: scalability structure present
//  I:   |M| PICTURE ID  | (REQUIRED)   M = 1: 15-bit PICTURE ID over two bytes
//       +-+-+-+-+-+-+-+-+
//  M:   | EXTENDED PID  |
//       +-+-+-+-+-+-+-+-+
//  L:   | TID |U| SID |D|              layer indices
//       +-+-+-+-+-+-+-+-+
//       |   TL0PICIDX   |              only with L and F = 0 (non-flexible mode)
//       +-+-+-+-+-+-+-+-+
//  P,F: | P_DIFF      |N|              up to 3, flexible mode only
//       +-+-+-+-+-+-+-+-+
//  V:   | SS            |              N_S|Y|G, sizes if Y, picture group if G (§4.2.1)
//
// We send I=1 with a 15-bit PICTURE ID (as FFmpeg's rtpenc_vp9), P for inter pictures, B and E;
// no L (a VP9 bitstream does not carry its temporal layer) and no SS. The parser reads every
// field.
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>

#include "video_packetizer.hpp"
#include "vpx_packetizer.hpp"

namespace predrop::media::detail {

/// What the uncompressed headers of a VP9 sample say (VP9 bitstream spec §6.2, Annex B).
struct Vp9FrameInfo {
  /// The first frame is a key frame.
  bool key = false;
  /// Some frame of it updates a reference slot (refresh_frame_flags != 0) or saves its entropy
  /// context for later frames (refresh_frame_context = 1 without error resilience).
  bool reference = true;
  /// Frames in the sample (a superframe has more than one).
  int frames = 1;
};
/// Parses a VP9 sample's headers; nullopt if unreadable.
std::optional<Vp9FrameInfo> parse_vp9_frame(Bytes sample);

/// The fields of a VP9 payload descriptor.
struct Vp9Descriptor {
  bool inter_predicted = false;      ///< P
  bool flexible = false;             ///< F
  bool begin = false;                ///< B
  bool end = false;                  ///< E
  bool not_upper_reference = false;  ///< Z
  std::optional<std::uint16_t> picture_id;
  std::optional<std::uint8_t> tid;  ///< with L
  std::optional<std::uint8_t> sid;  ///< with L
  std::optional<std::uint8_t> tl0_pic_idx;
  int reference_diffs = 0;   ///< P_DIFF entries (flexible mode)
  bool scalability = false;  ///< V: an SS was present (skipped)
  /// Bytes of the descriptor; the VP9 payload follows.
  std::size_t size = 1;
};
/// Parses the payload descriptor at the start of an RTP payload; nullopt if truncated or if no
/// payload byte follows it.
std::optional<Vp9Descriptor> parse_vp9_descriptor(Bytes payload);

/// The RTP payloads of one VP9 sample, each handed to `emit` as (descriptor, part of the sample).
void packetize_vp9(Bytes sample, std::uint16_t picture_id, bool inter_predicted,
                   std::size_t max_payload,
                   const std::function<void(Bytes head, Bytes body)>& emit);

/// What VpxPacketizer needs of VP9.
struct Vp9Codec {
  static constexpr std::string_view kName = "VP9";
  static std::optional<Vp9FrameInfo> parse_frame(Bytes sample) { return parse_vp9_frame(sample); }
  /// The descriptor's P (inter-picture predicted): every picture but a key frame.
  static void packetize(Bytes sample, std::uint16_t picture_id, const VideoPicture& picture,
                        std::size_t max_payload,
                        const std::function<void(Bytes head, Bytes body)>& emit) {
    packetize_vp9(sample, picture_id, picture.type != FrameType::kKey, max_payload, emit);
  }
  /// Not read from the frame header (issue 24 ranks VP9's references by GOP position).
  static std::uint8_t temporal_id(const Vp9FrameInfo& /*info*/) { return 0; }
};

/// Packetizes the samples of one VP9 stream.
using Vp9Packetizer = VpxPacketizer<Vp9Codec>;

}  // namespace predrop::media::detail

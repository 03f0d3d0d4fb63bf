#pragma once
// Private to media/src: VP8 into RTP payloads per RFC 7741, and the parsers its depacketizer
// shares. Each frame is one partition-agnostic run of packets (§4.4: a packet may span
// partitions), each led by the payload descriptor (§4.2):
//
//          0 1 2 3 4 5 6 7
//         +-+-+-+-+-+-+-+-+
//         |X|R|N|S|R| PID | (REQUIRED)   N: non-reference frame, S: start of partition PID
//         +-+-+-+-+-+-+-+-+
//    X:   |I|L|T|K| RSV   | (OPTIONAL)
//         +-+-+-+-+-+-+-+-+
//    I:   |M| PictureID   | (OPTIONAL)   M = 1: 15-bit PictureID over two bytes
//         +-+-+-+-+-+-+-+-+
//    L:   |   TL0PICIDX   | (OPTIONAL)
//         +-+-+-+-+-+-+-+-+
//    T/K: |TID|Y| KEYIDX  | (OPTIONAL)
//         +-+-+-+-+-+-+-+-+
//
// We send X=1, I=1 with a 15-bit PictureID (as FFmpeg's rtpenc_vp8 does), N from the frame
// header, S=1 and PID=0 on a frame's first packet; no L/T/K (a VP8 bitstream does not carry its
// temporal layer, only the encoder knows it). The parser reads every field.
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>

#include "video_packetizer.hpp"
#include "vpx_packetizer.hpp"

namespace predrop::media::detail {

/// What the uncompressed and first-partition headers of a VP8 frame say (RFC 6386 §9, §19.2).
struct Vp8FrameInfo {
  bool key = false;
  bool show = true;
  /// Updates a reference buffer (last, golden, altref, by refresh or copy) or keeps its entropy
  /// probabilities for later frames; false only when no later frame can depend on it.
  bool reference = true;
  /// 1 for a shown inter frame that refreshes the golden frame (by refresh or copy) but neither
  /// the last frame nor the altref: only frames that predict from golden depend on it. That is
  /// layer 1 of libvpx's temporal patterns (ts_layering_mode 3's 0-2-1-2: layer 0 refreshes last
  /// and golden, layer 1 golden only, layer 2 nothing), whose layer 0 never predicts from golden;
  /// the payload does not carry the layer (no T/L fields here). 0 otherwise.
  std::uint8_t temporal_id = 0;
};
/// Parses a VP8 frame's headers; nullopt if it is too short or its header is unreadable.
std::optional<Vp8FrameInfo> parse_vp8_frame(Bytes frame);

/// The fields of a VP8 payload descriptor.
struct Vp8Descriptor {
  bool non_reference = false;  ///< N
  bool start = false;          ///< S
  std::uint8_t partition = 0;  ///< PID
  std::optional<std::uint16_t> picture_id;
  std::optional<std::uint8_t> tl0_pic_idx;
  std::optional<std::uint8_t> tid;  ///< when T
  bool layer_sync = false;          ///< Y (with T)
  std::optional<std::uint8_t> key_idx;
  /// Bytes of the descriptor; the VP8 payload follows.
  std::size_t size = 1;
};
/// Parses the payload descriptor at the start of an RTP payload; nullopt if truncated or if no
/// payload byte follows it.
std::optional<Vp8Descriptor> parse_vp8_descriptor(Bytes payload);

/// The RTP payloads of one VP8 frame, each handed to `emit` as (descriptor, part of the frame).
void packetize_vp8(Bytes frame, std::uint16_t picture_id, bool non_reference,
                   std::size_t max_payload,
                   const std::function<void(Bytes head, Bytes body)>& emit);

/// What VpxPacketizer needs of VP8.
struct Vp8Codec {
  static constexpr std::string_view kName = "VP8";
  static std::optional<Vp8FrameInfo> parse_frame(Bytes sample) { return parse_vp8_frame(sample); }
  /// The descriptor's N (non-reference frame): the frame header says no reference is updated.
  static void packetize(Bytes sample, std::uint16_t picture_id, const VideoPicture& picture,
                        std::size_t max_payload,
                        const std::function<void(Bytes head, Bytes body)>& emit) {
    packetize_vp8(sample, picture_id, !picture.reference, max_payload, emit);
  }
  static std::uint8_t temporal_id(const Vp8FrameInfo& info) { return info.temporal_id; }
};

/// Packetizes the frames of one VP8 stream.
using Vp8Packetizer = VpxPacketizer<Vp8Codec>;

}  // namespace predrop::media::detail

#pragma once
// Private to media/src: H.265 into RTP payloads per RFC 7798, without DONL (sprop-max-don-diff
// = 0, the only mode FFmpeg and GStreamer send and read by default): single NAL unit packets
// (§4.4.1), aggregation packets (§4.4.2) for runs of small units, fragmentation units (§4.4.3)
// for units above the payload limit. VPS, SPS and PPS go in-band before every IRAP picture.
//
// The NAL unit header (H.265 §7.3.1.2), also the PayloadHdr of an AP or FU:
//    0                   1
//    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |F|   Type    |  LayerId  | TID |     TID = TemporalId + 1
//   +-------------+-----------------+
// AP (Type 48): PayloadHdr, then { 16-bit NALU size, NAL unit } for each of >= 2 units; F is the
// OR of the units' F bits, LayerId and TID the lowest of theirs (§4.4.2).
// FU (Type 49): PayloadHdr (the unit's F, LayerId, TID), FU header |S|E|FuType(6)|, then the
// unit without its 2-byte header (§4.4.3).
//
// Like H.264, the sample format comes from the container (hvcC: length-prefixed; else Annex B).
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "video_packetizer.hpp"

namespace predrop::media::detail {

/// H.265 NAL unit types used here (ITU-T H.265 Table 7-1) and the RTP-only types (RFC 7798 §4.4).
namespace h265 {
inline constexpr std::uint8_t kIrapFirst = 16;  ///< BLA_W_LP
inline constexpr std::uint8_t kIrapLast = 23;   ///< RSV_IRAP_VCL23
inline constexpr std::uint8_t kVps = 32;
inline constexpr std::uint8_t kSps = 33;
inline constexpr std::uint8_t kPps = 34;
inline constexpr std::uint8_t kAud = 35;
inline constexpr std::uint8_t kFd = 38;
inline constexpr std::uint8_t kAp = 48;
inline constexpr std::uint8_t kFu = 49;
inline constexpr std::uint8_t kPaci = 50;
}  // namespace h265

/// The fields of a 2-byte H.265 NAL unit header.
struct H265NalHeader {
  bool forbidden = false;
  std::uint8_t type = 0;
  std::uint8_t layer_id = 0;
  /// TemporalId (nuh_temporal_id_plus1 - 1); nuh_temporal_id_plus1 = 0 is rejected.
  std::uint8_t temporal_id = 0;
};
/// Parses the header of a NAL unit (or of an RTP payload); nullopt if shorter than 2 bytes or
/// nuh_temporal_id_plus1 is 0.
std::optional<H265NalHeader> parse_h265_nal_header(Bytes nal);

/// VCL types are 0..31; IRAP pictures (BLA, IDR, CRA) 16..23 (H.265 §7.4.2.2).
constexpr bool h265_is_vcl(std::uint8_t type) {
  return type < 32;
}
constexpr bool h265_is_irap(std::uint8_t type) {
  return type >= h265::kIrapFirst && type <= h265::kIrapLast;
}
/// Sub-layer non-reference pictures (TRAIL_N, TSA_N, STSA_N, RADL_N, RASL_N, RSV_VCL_N10/12/14):
/// the even types below 16. No picture of the same sub-layer references them (§7.4.2.2), so
/// dropping them costs only themselves.
constexpr bool h265_is_sub_layer_non_reference(std::uint8_t type) {
  return type <= 14 && type % 2 == 0;
}
constexpr bool h265_is_parameter_set(std::uint8_t type) {
  return type == h265::kVps || type == h265::kSps || type == h265::kPps;
}

/// An hvcC decoder configuration record (ISO/IEC 14496-15 §8.3.3.1).
struct HevcConfig {
  int length_size = 4;
  std::vector<std::vector<std::uint8_t>> vps, sps, pps;
};
/// Parses hvcC; nullopt if it is not one (Annex-B extradata starts with a start code).
std::optional<HevcConfig> parse_hvcc(Bytes data);

/// The RTP payloads (RFC 7798, no DONL) for a run of NAL units sent in this order, each handed to
/// `emit` as (head, body): consecutive units that fit into one AP together are aggregated
/// (greedily, >= 2 per AP), a unit that fits alone is a single NAL unit packet, a larger one is
/// fragmented into FUs. `scratch` holds an AP while it is emitted. max_payload >= 64.
void packetize_h265(std::span<const Bytes> units, std::size_t max_payload,
                    std::vector<std::uint8_t>& scratch,
                    const std::function<void(Bytes head, Bytes body)>& emit);

/// Packetizes the samples of one H.265 stream, in decode order.
class H265Packetizer final : public VideoPacketizer {
 public:
  H265Packetizer(std::size_t max_payload, Warn warn)
      : max_payload_(max_payload), warn_(std::move(warn)) {}

  void configure(Bytes extradata) override;
  std::optional<VideoPicture> add_sample(Bytes sample, bool key_flag, PayloadSink& sink) override;
  /// H265/90000 with sprop-vps, sprop-sps and sprop-pps, laid out as FFmpeg's sdp.c does.
  void describe(StreamInfo& info) const override;

 private:
  void stage(std::span<const Bytes> units, PayloadSink& sink);

  using Sets = std::vector<std::vector<std::uint8_t>>;
  std::size_t max_payload_;
  Warn warn_;
  int length_size_ = 0;  // 0: Annex B samples (no hvcC)
  Sets vps_, sps_, pps_;
  Sets sdp_vps_, sdp_sps_, sdp_pps_;
  std::vector<std::uint8_t> pending_nals_;  // units of a sample without a picture
  std::vector<Bytes> nals_;
  std::vector<std::uint8_t> scratch_;
  bool warned_no_parameter_sets_ = false;
  std::size_t pictures_ = 0;
};

}  // namespace predrop::media::detail

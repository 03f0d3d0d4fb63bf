#pragma once
// Private to media/src: H.264 into RTP payloads per RFC 6184 packetization-mode=1 — single NAL
// unit packets (§5.6) and FU-A (§5.8), SPS and PPS in-band before every keyframe.
//
// The sample format comes from the container, never from a sample's bytes: with avcC extradata
// (MP4, MKV) samples are length-prefixed; without it (MPEG-TS, raw .h264) they are Annex B. A
// 4-byte length prefix of a 256..511-byte NAL unit (00 00 01 xx) looks exactly like a start
// code, so sniffing corrupts such units. FFmpeg's h264_mp4toannexb decides the same way.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "video_packetizer.hpp"

namespace predrop::media::detail {

/// Packetizes the samples of one H.264 stream, in decode order.
class H264Packetizer final : public VideoPacketizer {
 public:
  /// `max_payload` bounds every payload (FU-A fragments above it).
  H264Packetizer(std::size_t max_payload, Warn warn)
      : max_payload_(max_payload), warn_(std::move(warn)) {}

  /// Reads the stream's extradata: avcC (length size and parameter sets) or Annex B units.
  void configure(Bytes extradata) override;

  /// Packetizes one sample. Returns the picture, or nullopt for a sample without a picture
  /// (its parameter sets and SEI are carried into the next picture's packets instead).
  std::optional<VideoPicture> add_sample(Bytes sample, bool key_flag, PayloadSink& sink) override;
  /// H264/90000 with packetization-mode=1, sprop-parameter-sets and profile-level-id.
  void describe(StreamInfo& info) const override;

  /// The first parameter sets seen (extradata, else in-band), for sprop-parameter-sets.
  const std::vector<std::vector<std::uint8_t>>& sdp_sps() const { return sdp_sps_; }
  const std::vector<std::vector<std::uint8_t>>& sdp_pps() const { return sdp_pps_; }

 private:
  void stage_nal(Bytes nal, bool parameter_set, PayloadSink& sink) const;

  std::size_t max_payload_;
  Warn warn_;
  int length_size_ = 0;  // 0: Annex B samples (no avcC)
  std::vector<std::vector<std::uint8_t>> sps_, pps_;
  std::vector<std::vector<std::uint8_t>> sdp_sps_, sdp_pps_;
  std::vector<std::uint8_t> pending_nals_;  // non-VCL units of a sample without a picture
  std::vector<Bytes> nals_;
  bool warned_no_parameter_sets_ = false;
  std::size_t pictures_ = 0;  // for warnings: "at frame N"
};

}  // namespace predrop::media::detail

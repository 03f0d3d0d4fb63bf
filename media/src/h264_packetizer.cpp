// RFC 6184 packetization-mode=1 of H.264 samples (see h264_packetizer.hpp).
#include "h264_packetizer.hpp"

#include <algorithm>

namespace predrop::media::detail {

namespace {
constexpr std::uint8_t kRtpNalFuA = 28;
}  // namespace

void H264Packetizer::configure(Bytes extra) {
  if (auto avcc = parse_avcc(extra)) {
    length_size_ = avcc->length_size;
    sps_ = avcc->sps;
    pps_ = avcc->pps;
  } else if (!extra.empty()) {
    std::vector<Bytes> units;
    split_annexb(extra, units);
    for (Bytes u : units) {
      if (nal_type(u) == kNalSps) sps_.emplace_back(u.begin(), u.end());
      if (nal_type(u) == kNalPps) pps_.emplace_back(u.begin(), u.end());
    }
  }
  sdp_sps_ = sps_;
  sdp_pps_ = pps_;
}

std::optional<VideoPicture> H264Packetizer::add_sample(Bytes data, bool key_flag,
                                                       PayloadSink& sink) {
  nals_.clear();
  // The container decides the format (see the header), never the sample's first bytes.
  const bool clean = length_size_ > 0 ? split_length_prefixed(data, length_size_, nals_)
                                      : split_annexb(data, nals_);
  if (!clean) warn_("malformed H.264 sample at frame " + std::to_string(pictures_));

  // Keep what RTP can carry: drop access unit delimiters and filler (RFC 6184 allows it) and
  // types 0 and 24..31, which RTP reuses for aggregation and fragmentation units.
  std::erase_if(nals_, [](Bytes n) {
    const std::uint8_t t = nal_type(n);
    return t == 0 || t >= 24 || t == kNalAud || t == kNalFiller;
  });
  auto is_vcl = [](Bytes n) {
    const std::uint8_t t = nal_type(n);
    return t >= kNalSlice && t <= kNalIdr;
  };
  if (std::find_if(nals_.begin(), nals_.end(), is_vcl) == nals_.end()) {
    // No picture: carry its parameter sets / SEI into the next frame rather than invent a frame
    // the decoder would never output.
    for (Bytes n : nals_) {
      const auto size = static_cast<std::uint32_t>(n.size());
      for (int s = 3; s >= 0; --s) {
        pending_nals_.push_back(static_cast<std::uint8_t>(size >> (8 * s)));
      }
      pending_nals_.insert(pending_nals_.end(), n.begin(), n.end());
    }
    return std::nullopt;
  }

  // Units carried over from a picture-less sample come first.
  std::vector<Bytes> units;
  if (!pending_nals_.empty()) {
    split_length_prefixed(pending_nals_, 4, units);
  }
  units.insert(units.end(), nals_.begin(), nals_.end());

  bool has_idr = false;
  bool has_sps = false;
  bool has_pps = false;
  std::vector<std::vector<std::uint8_t>> inband_sps;
  std::vector<std::vector<std::uint8_t>> inband_pps;
  for (Bytes n : units) {
    const std::uint8_t t = nal_type(n);
    has_idr = has_idr || t == kNalIdr;
    if (t == kNalSps) {
      has_sps = true;
      inband_sps.emplace_back(n.begin(), n.end());
    }
    if (t == kNalPps) {
      has_pps = true;
      inband_pps.emplace_back(n.begin(), n.end());
    }
  }
  if (has_sps) sps_ = inband_sps;
  if (has_pps) pps_ = inband_pps;
  if (sdp_sps_.empty() && has_sps) sdp_sps_ = inband_sps;
  if (sdp_pps_.empty() && has_pps) sdp_pps_ = inband_pps;

  const Bytes vcl = *std::find_if(units.begin(), units.end(), is_vcl);
  const auto slice_type = parse_slice_type(vcl);
  const bool keyframe = has_idr || (key_flag && slice_type && *slice_type == 2);

  VideoPicture picture;
  picture.reference = nal_ref_idc(vcl) != 0;
  if (keyframe) {
    picture.type = FrameType::kKey;
  } else if (!slice_type) {
    picture.type = FrameType::kUnknown;
    picture.reference = true;  // be conservative about what we do not understand
  } else {
    static constexpr FrameType kBySliceType[5] = {FrameType::kPredicted, FrameType::kBidir,
                                                  FrameType::kIntra, FrameType::kPredicted,
                                                  FrameType::kIntra};
    picture.type = kBySliceType[*slice_type];
  }

  // Parameter sets in-band before every keyframe, so that a receiver can join at any GOP and a
  // lost SDP or a player that ignores sprop-parameter-sets still decodes.
  if (keyframe && !(has_sps && has_pps)) {
    if (sps_.empty() || pps_.empty()) {
      if (!warned_no_parameter_sets_) warn_("keyframe without known SPS/PPS");
      warned_no_parameter_sets_ = true;
    }
    if (!has_sps) {
      for (const auto& s : sps_) {
        stage_nal(s, true, sink);
      }
    }
    if (!has_pps) {
      for (const auto& p : pps_) {
        stage_nal(p, true, sink);
      }
    }
  }
  for (Bytes n : units) {
    const std::uint8_t t = nal_type(n);
    stage_nal(n, t == kNalSps || t == kNalPps, sink);
  }
  pending_nals_.clear();
  // RFC 6184 §5.1: the marker bit is set on the last packet of the access unit.
  sink.mark_last();
  ++pictures_;
  return picture;
}

void H264Packetizer::describe(StreamInfo& info) const {
  info.encoding = "H264/90000";
  // Same layout as FFmpeg's sdp.c, which ffplay and the other players are known to read.
  info.fmtp = "packetization-mode=1";
  if (sdp_sps_.empty() || sdp_pps_.empty()) return;
  std::string sets;
  for (const auto& s : sdp_sps_) {
    sets += (sets.empty() ? "" : ",") + base64(s);
  }
  for (const auto& p : sdp_pps_) {
    sets += "," + base64(p);
  }
  info.fmtp += "; sprop-parameter-sets=" + sets;
  if (sdp_sps_[0].size() >= 4) {
    info.fmtp += "; profile-level-id=" + hex_upper(Bytes(sdp_sps_[0]).subspan(1, 3));
  }
}

void H264Packetizer::stage_nal(Bytes nal, bool parameter_set, PayloadSink& sink) const {
  const std::size_t max = max_payload_;
  if (nal.size() <= max) {
    // RFC 6184 §5.6: a single NAL unit packet is the NAL unit itself.
    sink.add({}, nal, false, parameter_set);
    return;
  }
  // RFC 6184 §5.8 FU-A: FU indicator (F, NRI of the unit, type 28) and FU header (S, E, R=0,
  // the unit's type); the unit's own header byte is not repeated.
  const auto indicator = static_cast<std::uint8_t>((nal[0] & 0xe0) | kRtpNalFuA);
  const std::uint8_t type = nal[0] & 0x1f;
  Bytes rest = nal.subspan(1);
  const std::size_t chunk = max - 2;
  bool first = true;
  while (!rest.empty()) {
    const std::size_t n = std::min(chunk, rest.size());
    const bool last = n == rest.size();
    const auto header = static_cast<std::uint8_t>((first ? 0x80 : 0) | (last ? 0x40 : 0) | type);
    const std::uint8_t head[2] = {indicator, header};
    sink.add(head, rest.first(n), false, parameter_set);
    rest = rest.subspan(n);
    first = false;
  }
}

}  // namespace predrop::media::detail

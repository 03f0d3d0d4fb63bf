// RFC 7798 packetization of H.265 samples (see h265_packetizer.hpp).
#include "h265_packetizer.hpp"

#include <algorithm>

namespace predrop::media::detail {

namespace {

std::uint16_t read_u16(Bytes data, std::size_t at) {
  return static_cast<std::uint16_t>((data[at] << 8) | data[at + 1]);
}

void append_u16(std::vector<std::uint8_t>& out, std::size_t value) {
  out.push_back(static_cast<std::uint8_t>(value >> 8));
  out.push_back(static_cast<std::uint8_t>(value));
}

std::uint8_t type_of(Bytes nal) {
  return nal.empty() ? 0 : static_cast<std::uint8_t>((nal[0] >> 1) & 0x3f);
}

// Stages a run of units that share `parameter_set` (they share an importance, so they may share
// a packet; a parameter set never rides with a droppable slice).
void stage_run(std::span<const Bytes> units, std::size_t max_payload,
               std::vector<std::uint8_t>& scratch, bool parameter_set, PayloadSink& sink) {
  packetize_h265(units, max_payload, scratch,
                 [&](Bytes head, Bytes body) { sink.add(head, body, false, parameter_set); });
}

}  // namespace

std::optional<H265NalHeader> parse_h265_nal_header(Bytes nal) {
  if (nal.size() < 2) return std::nullopt;
  H265NalHeader h;
  h.forbidden = (nal[0] & 0x80) != 0;
  h.type = static_cast<std::uint8_t>((nal[0] >> 1) & 0x3f);
  h.layer_id = static_cast<std::uint8_t>(((nal[0] & 1) << 5) | (nal[1] >> 3));
  const std::uint8_t tid_plus1 = nal[1] & 7;
  if (tid_plus1 == 0) return std::nullopt;  // forbidden value (H.265 §7.4.2.2)
  h.temporal_id = static_cast<std::uint8_t>(tid_plus1 - 1);
  return h;
}

std::optional<HevcConfig> parse_hvcc(Bytes data) {
  // configurationVersion 1, 21 bytes of profile/tier/level and format fields, the last of which
  // ends in lengthSizeMinusOne, then numOfArrays.
  if (data.size() < 23 || data[0] != 1) return std::nullopt;
  HevcConfig config;
  config.length_size = (data[21] & 3) + 1;
  if (config.length_size == 3) return std::nullopt;
  const std::size_t arrays = data[22];
  std::size_t i = 23;
  for (std::size_t a = 0; a < arrays; ++a) {
    if (data.size() - i < 3) return std::nullopt;
    const std::uint8_t type = data[i] & 0x3f;
    const std::size_t count = read_u16(data, i + 1);
    i += 3;
    for (std::size_t n = 0; n < count; ++n) {
      if (data.size() - i < 2) return std::nullopt;
      const std::size_t size = read_u16(data, i);
      i += 2;
      if (size > data.size() - i) return std::nullopt;
      std::vector<std::uint8_t> unit(data.begin() + static_cast<std::ptrdiff_t>(i),
                                     data.begin() + static_cast<std::ptrdiff_t>(i + size));
      if (type == h265::kVps) {
        config.vps.push_back(std::move(unit));
      } else if (type == h265::kSps) {
        config.sps.push_back(std::move(unit));
      } else if (type == h265::kPps) {
        config.pps.push_back(std::move(unit));
      }
      i += size;
    }
  }
  return config;
}

void packetize_h265(std::span<const Bytes> units, std::size_t max_payload,
                    std::vector<std::uint8_t>& scratch,
                    const std::function<void(Bytes head, Bytes body)>& emit) {
  std::size_t i = 0;
  while (i < units.size()) {
    // Greedy AP: as many following units as fit with their 2-byte size fields (§4.4.2).
    std::size_t end = i;
    std::size_t ap_size = 2;
    while (end < units.size() && units[end].size() >= 2 &&
           ap_size + 2 + units[end].size() <= max_payload) {
      ap_size += 2 + units[end].size();
      ++end;
    }
    if (end - i >= 2) {
      scratch.clear();
      std::uint8_t forbidden = 0;
      std::uint8_t layer = 63;
      std::uint8_t tid_plus1 = 7;
      for (std::size_t k = i; k < end; ++k) {
        forbidden |= units[k][0] & 0x80;
        layer = std::min<std::uint8_t>(layer, ((units[k][0] & 1) << 5) | (units[k][1] >> 3));
        tid_plus1 = std::min<std::uint8_t>(tid_plus1, units[k][1] & 7);
      }
      scratch.push_back(static_cast<std::uint8_t>(forbidden | (h265::kAp << 1) | (layer >> 5)));
      scratch.push_back(static_cast<std::uint8_t>(((layer & 0x1f) << 3) | tid_plus1));
      for (std::size_t k = i; k < end; ++k) {
        append_u16(scratch, units[k].size());
        scratch.insert(scratch.end(), units[k].begin(), units[k].end());
      }
      emit(scratch, {});
      i = end;
      continue;
    }
    const Bytes nal = units[i++];
    if (nal.size() <= max_payload || nal.size() < 3) {
      emit({}, nal);  // §4.4.1: a single NAL unit packet is the unit itself
      continue;
    }
    // §4.4.3: FUs carry the unit's payload after its 2-byte header.
    const std::uint8_t type = type_of(nal);
    const std::uint8_t payload_hdr0 = static_cast<std::uint8_t>((nal[0] & 0x81) | (h265::kFu << 1));
    Bytes rest = nal.subspan(2);
    const std::size_t chunk = max_payload - 3;
    bool first = true;
    while (!rest.empty()) {
      const std::size_t n = std::min(chunk, rest.size());
      const bool last = n == rest.size();
      const std::uint8_t head[3] = {
          payload_hdr0, nal[1],
          static_cast<std::uint8_t>((first ? 0x80 : 0) | (last ? 0x40 : 0) | type)};
      emit(head, rest.first(n));
      rest = rest.subspan(n);
      first = false;
    }
  }
}

void H265Packetizer::configure(Bytes extra) {
  if (auto hvcc = parse_hvcc(extra)) {
    length_size_ = hvcc->length_size;
    vps_ = hvcc->vps;
    sps_ = hvcc->sps;
    pps_ = hvcc->pps;
  } else if (!extra.empty()) {
    std::vector<Bytes> units;
    split_annexb(extra, units);
    for (Bytes u : units) {
      if (type_of(u) == h265::kVps) vps_.emplace_back(u.begin(), u.end());
      if (type_of(u) == h265::kSps) sps_.emplace_back(u.begin(), u.end());
      if (type_of(u) == h265::kPps) pps_.emplace_back(u.begin(), u.end());
    }
  }
  sdp_vps_ = vps_;
  sdp_sps_ = sps_;
  sdp_pps_ = pps_;
}

std::optional<VideoPicture> H265Packetizer::add_sample(Bytes data, bool /*key_flag*/,
                                                       PayloadSink& sink) {
  nals_.clear();
  const bool clean = length_size_ > 0 ? split_length_prefixed(data, length_size_, nals_)
                                      : split_annexb(data, nals_);
  if (!clean) warn_("malformed H.265 sample at frame " + std::to_string(pictures_));
  // Drop what RTP need not or cannot carry: access unit delimiters and filler data (RFC 7798
  // §4.1 lets a sender omit them), units with an unreadable header, and types 48..63, which RTP
  // reuses for AP, FU and PACI.
  std::erase_if(nals_, [](Bytes n) {
    const auto h = parse_h265_nal_header(n);
    return !h || h->type == h265::kAud || h->type == h265::kFd || h->type >= h265::kAp;
  });
  auto is_vcl = [](Bytes n) { return h265_is_vcl(type_of(n)); };
  const auto vcl = std::find_if(nals_.begin(), nals_.end(), is_vcl);
  if (vcl == nals_.end()) {
    for (Bytes n : nals_) {
      append_u16(pending_nals_, n.size() >> 16);  // 4-byte length prefix
      append_u16(pending_nals_, n.size() & 0xffff);
      pending_nals_.insert(pending_nals_.end(), n.begin(), n.end());
    }
    return std::nullopt;
  }
  const auto header = *parse_h265_nal_header(*vcl);

  std::vector<Bytes> units;
  if (!pending_nals_.empty()) split_length_prefixed(pending_nals_, 4, units);
  units.insert(units.end(), nals_.begin(), nals_.end());

  Sets inband[3];
  for (Bytes n : units) {
    const std::uint8_t t = type_of(n);
    if (h265_is_parameter_set(t)) inband[t - h265::kVps].emplace_back(n.begin(), n.end());
  }
  Sets* known[3] = {&vps_, &sps_, &pps_};
  Sets* sdp[3] = {&sdp_vps_, &sdp_sps_, &sdp_pps_};
  for (int k = 0; k < 3; ++k) {
    if (inband[k].empty()) continue;
    *known[k] = inband[k];
    if (sdp[k]->empty()) *sdp[k] = inband[k];
  }

  VideoPicture picture;
  picture.temporal_id = header.temporal_id;
  if (h265_is_irap(header.type)) {
    picture.type = FrameType::kKey;
    picture.reference = true;
  } else {
    picture.type = FrameType::kPredicted;
    picture.reference = !h265_is_sub_layer_non_reference(header.type);
  }

  // Parameter sets in-band before every IRAP picture that lacks them, so that a receiver can
  // join at any GOP and a player that ignores sprop-* still decodes.
  std::vector<Bytes> sets;
  if (picture.type == FrameType::kKey) {
    if (vps_.empty() || sps_.empty() || pps_.empty()) {
      if (!warned_no_parameter_sets_) warn_("IRAP picture without known VPS/SPS/PPS");
      warned_no_parameter_sets_ = true;
    }
    for (int k = 0; k < 3; ++k) {
      if (!inband[k].empty()) continue;
      for (const auto& s : *known[k]) {
        sets.emplace_back(s);
      }
    }
  }
  stage_run(sets, max_payload_, scratch_, true, sink);
  stage(units, sink);
  pending_nals_.clear();
  // RFC 7798 §4.1: the marker bit is set on the last packet of the access unit.
  sink.mark_last();
  ++pictures_;
  return picture;
}

void H265Packetizer::stage(std::span<const Bytes> units, PayloadSink& sink) {
  // Consecutive runs of parameter sets resp. other units, each packetized on its own.
  std::size_t i = 0;
  while (i < units.size()) {
    const bool parameter_set = h265_is_parameter_set(type_of(units[i]));
    std::size_t end = i + 1;
    while (end < units.size() && h265_is_parameter_set(type_of(units[end])) == parameter_set) {
      ++end;
    }
    stage_run(units.subspan(i, end - i), max_payload_, scratch_, parameter_set, sink);
    i = end;
  }
}

void H265Packetizer::describe(StreamInfo& info) const {
  info.encoding = "H265/90000";
  // FFmpeg's sdp.c (extradata2psets_hevc): "sprop-vps=..; sprop-sps=..; sprop-pps=..", several
  // sets of one kind separated by commas.
  info.fmtp.clear();
  const char* names[3] = {"sprop-vps=", "sprop-sps=", "sprop-pps="};
  const Sets* sets[3] = {&sdp_vps_, &sdp_sps_, &sdp_pps_};
  for (int k = 0; k < 3; ++k) {
    if (sets[k]->empty()) continue;
    if (!info.fmtp.empty()) info.fmtp += "; ";
    info.fmtp += names[k];
    for (std::size_t n = 0; n < sets[k]->size(); ++n) {
      if (n > 0) info.fmtp += ",";
      info.fmtp += base64((*sets[k])[n]);
    }
  }
}

}  // namespace predrop::media::detail

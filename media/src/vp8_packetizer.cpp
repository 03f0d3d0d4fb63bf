// RFC 7741 packetization of VP8 frames and the VP8 header parsers (see vp8_packetizer.hpp).
#include "vp8_packetizer.hpp"

#include <algorithm>

namespace predrop::media::detail {

namespace {

// The boolean entropy decoder of RFC 6386 §7.3, for the first partition's header. Every header
// field is coded at probability 128; reads past the end set overrun() instead of failing.
class BoolDecoder {
 public:
  explicit BoolDecoder(Bytes data) : data_(data) { value_ = (next() << 8) | next(); }
  bool overrun() const { return overrun_; }
  bool flag() { return read(128) != 0; }
  std::uint32_t literal(int bits) {
    std::uint32_t v = 0;
    while (bits-- > 0) {
      v = (v << 1) | read(128);
    }
    return v;
  }
  // A flag that, when set, is followed by a `bits`-bit magnitude and, if `sign`, a sign bit.
  void optional_value(int bits, bool sign) {
    if (flag()) literal(bits + (sign ? 1 : 0));
  }

 private:
  std::uint32_t next() {
    if (pos_ < data_.size()) return data_[pos_++];
    ++pos_;
    // Two bytes of look-ahead are read at init; reading further than that is a real overrun.
    if (pos_ > data_.size() + 2) overrun_ = true;
    return 0;
  }
  std::uint32_t read(std::uint32_t prob) {
    const std::uint32_t split = 1 + (((range_ - 1) * prob) >> 8);
    const std::uint32_t big_split = split << 8;
    std::uint32_t bit = 0;
    if (value_ >= big_split) {
      bit = 1;
      range_ -= split;
      value_ -= big_split;
    } else {
      range_ = split;
    }
    while (range_ < 128) {
      value_ <<= 1;
      range_ <<= 1;
      if (++bit_count_ == 8) {
        bit_count_ = 0;
        value_ |= next();
      }
    }
    return bit;
  }

  Bytes data_;
  std::size_t pos_ = 0;
  std::uint32_t value_ = 0;
  std::uint32_t range_ = 255;
  int bit_count_ = 0;
  bool overrun_ = false;
};

}  // namespace

std::optional<Vp8FrameInfo> parse_vp8_frame(Bytes frame) {
  // §9.1: a 3-byte frame tag (little endian): key frame (0 = key), version, show_frame,
  // first_part_size; key frames add a start code and the picture size (7 bytes).
  if (frame.size() < 3) return std::nullopt;
  const std::uint32_t tag = frame[0] | (frame[1] << 8) | (std::uint32_t{frame[2]} << 16);
  Vp8FrameInfo info;
  info.key = (tag & 1) == 0;
  info.show = ((tag >> 4) & 1) != 0;
  const std::size_t first_part_size = tag >> 5;
  std::size_t header = 3;
  if (info.key) {
    if (frame.size() < 10 || frame[3] != 0x9d || frame[4] != 0x01 || frame[5] != 0x2a) {
      return std::nullopt;
    }
    header = 10;
    info.reference = true;
    return info;  // a key frame resets every buffer: always a reference
  }
  if (first_part_size > frame.size() - header) return std::nullopt;
  // §19.2, frame_header() of an inter frame, up to refresh_last.
  BoolDecoder d(frame.subspan(header, first_part_size));
  if (d.flag()) {  // segmentation_enabled
    const bool update_map = d.flag();
    const bool update_data = d.flag();
    if (update_data) {
      d.flag();  // segment_feature_mode
      for (int i = 0; i < 4; ++i) {
        d.optional_value(7, true);  // quantizer
      }
      for (int i = 0; i < 4; ++i) {
        d.optional_value(6, true);  // loop filter
      }
    }
    if (update_map) {
      for (int i = 0; i < 3; ++i) {
        d.optional_value(8, false);  // segment_prob
      }
    }
  }
  d.literal(1 + 6 + 3);        // filter_type, loop_filter_level, sharpness_level
  if (d.flag() && d.flag()) {  // loop_filter_adj_enable, mode_ref_lf_delta_update
    for (int i = 0; i < 8; ++i) {
      d.optional_value(6, true);
    }
  }
  d.literal(2);  // log2_nbr_of_dct_partitions
  d.literal(7);  // y_ac_qi
  for (int i = 0; i < 5; ++i) {
    d.optional_value(4, true);  // y_dc .. uv_ac deltas
  }
  const bool refresh_golden = d.flag();
  const bool refresh_alt = d.flag();
  const std::uint32_t copy_golden = refresh_golden ? 0 : d.literal(2);
  const std::uint32_t copy_alt = refresh_alt ? 0 : d.literal(2);
  d.literal(2);  // sign_bias_golden, sign_bias_alternate
  const bool refresh_entropy = d.flag();
  const bool refresh_last = d.flag();
  if (d.overrun()) return std::nullopt;
  info.reference = refresh_golden || refresh_alt || copy_golden != 0 || copy_alt != 0 ||
                   refresh_entropy || refresh_last;
  const bool to_golden = refresh_golden || copy_golden != 0;
  if (info.show && to_golden && !refresh_last && !refresh_alt && copy_alt == 0) {
    info.temporal_id = 1;
  }
  return info;
}

std::optional<Vp8Descriptor> parse_vp8_descriptor(Bytes p) {
  if (p.empty()) return std::nullopt;
  Vp8Descriptor d;
  const std::uint8_t b0 = p[0];
  d.non_reference = (b0 & 0x20) != 0;
  d.start = (b0 & 0x10) != 0;
  d.partition = b0 & 0x07;
  std::size_t i = 1;
  if (b0 & 0x80) {
    if (p.size() <= i) return std::nullopt;
    const std::uint8_t x = p[i++];
    if (x & 0x80) {  // I
      if (p.size() <= i) return std::nullopt;
      if (p[i] & 0x80) {  // M: 15 bits
        if (p.size() - i < 2) return std::nullopt;
        d.picture_id = static_cast<std::uint16_t>(((p[i] & 0x7f) << 8) | p[i + 1]);
        i += 2;
      } else {
        d.picture_id = p[i++];
      }
    }
    if (x & 0x40) {  // L
      if (p.size() <= i) return std::nullopt;
      d.tl0_pic_idx = p[i++];
    }
    if (x & 0x30) {  // T or K: one shared byte
      if (p.size() <= i) return std::nullopt;
      const std::uint8_t tk = p[i++];
      if (x & 0x20) {
        d.tid = static_cast<std::uint8_t>(tk >> 6);
        d.layer_sync = (tk & 0x20) != 0;
      }
      if (x & 0x10) d.key_idx = static_cast<std::uint8_t>(tk & 0x1f);
    }
  }
  if (p.size() <= i) return std::nullopt;
  d.size = i;
  return d;
}

void packetize_vp8(Bytes frame, std::uint16_t picture_id, bool non_reference,
                   std::size_t max_payload,
                   const std::function<void(Bytes head, Bytes body)>& emit) {
  constexpr std::size_t kDescriptor = 4;
  const std::size_t chunk = max_payload - kDescriptor;
  bool first = true;
  while (first || !frame.empty()) {
    const std::size_t n = std::min(chunk, frame.size());
    const std::uint8_t head[kDescriptor] = {
        static_cast<std::uint8_t>(0x80 | (non_reference ? 0x20 : 0) | (first ? 0x10 : 0)),
        0x80,  // I
        static_cast<std::uint8_t>(0x80 | ((picture_id >> 8) & 0x7f)),
        static_cast<std::uint8_t>(picture_id)};
    emit(head, frame.first(n));
    frame = frame.subspan(n);
    first = false;
  }
}

}  // namespace predrop::media::detail

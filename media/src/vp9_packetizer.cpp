// RFC 9628 packetization of VP9 samples and the VP9 header parsers (see vp9_packetizer.hpp).
#include "vp9_packetizer.hpp"

#include <algorithm>

namespace predrop::media::detail {

namespace {

// Reads the uncompressed header's fixed-width fields, MSB first (VP9 bitstream spec §4.9 f(n)).
// Reads past the end return 0 and set overrun().
class BitReader {
 public:
  explicit BitReader(Bytes data) : data_(data) {}
  std::uint32_t bits(int n) {
    std::uint32_t v = 0;
    while (n-- > 0) {
      std::uint32_t bit = 0;
      if (pos_ / 8 < data_.size()) {
        bit = (data_[pos_ / 8] >> (7 - pos_ % 8)) & 1u;
      } else {
        overrun_ = true;
      }
      ++pos_;
      v = (v << 1) | bit;
    }
    return v;
  }
  bool flag() { return bits(1) != 0; }
  bool overrun() const { return overrun_; }

 private:
  Bytes data_;
  std::size_t pos_ = 0;
  bool overrun_ = false;
};

constexpr std::uint32_t kSyncCode = 0x498342;
constexpr std::uint32_t kColorSpaceRgb = 7;

// §6.2.2 color_config().
void skip_color_config(BitReader& r, std::uint32_t profile) {
  if (profile >= 2) r.flag();  // ten_or_twelve_bit
  const std::uint32_t color_space = r.bits(3);
  if (color_space != kColorSpaceRgb) {
    r.flag();                                     // color_range
    if (profile == 1 || profile == 3) r.bits(3);  // subsampling_x, subsampling_y, reserved
  } else if (profile == 1 || profile == 3) {
    r.flag();  // reserved_zero
  }
}

// One frame's uncompressed header (§6.2), up to refresh_frame_context.
std::optional<Vp9FrameInfo> parse_one(Bytes frame) {
  BitReader r(frame);
  if (r.bits(2) != 2) return std::nullopt;  // frame_marker
  const std::uint32_t low = r.bits(1);
  const std::uint32_t profile = (r.bits(1) << 1) | low;
  if (profile == 3) r.flag();  // reserved_zero
  Vp9FrameInfo info;
  if (r.flag()) {  // show_existing_frame: shows a decoded slot, changes nothing
    info.reference = false;
    return r.overrun() ? std::nullopt : std::optional(info);
  }
  info.key = !r.flag();  // frame_type 0 = KEY_FRAME
  const bool show_frame = r.flag();
  const bool error_resilient = r.flag();
  if (info.key) {
    if (r.bits(24) != kSyncCode) return std::nullopt;
    info.reference = true;  // refreshes every slot
    return info;
  }
  const bool intra_only = show_frame ? false : r.flag();
  if (!error_resilient) r.bits(2);  // reset_frame_context
  std::uint32_t refresh = 0;
  if (intra_only) {
    if (r.bits(24) != kSyncCode) return std::nullopt;
    if (profile > 0) skip_color_config(r, profile);
    refresh = r.bits(8);
    r.bits(32);                // frame_size
    if (r.flag()) r.bits(32);  // render_size
  } else {
    refresh = r.bits(8);
    for (int i = 0; i < 3; ++i) {
      r.bits(4);  // ref_frame_idx, ref_frame_sign_bias
    }
    bool found = false;
    for (int i = 0; i < 3 && !found; ++i) {
      found = r.flag();  // found_ref
    }
    if (!found) r.bits(32);    // frame_size
    if (r.flag()) r.bits(32);  // render_size
    r.flag();                  // allow_high_precision_mv
    if (!r.flag()) r.bits(2);  // is_filter_switchable, raw_interpolation_filter
  }
  bool refresh_context = false;
  if (!error_resilient) {
    refresh_context = r.flag();
    r.flag();  // frame_parallel_decoding_mode
  }
  if (r.overrun()) return std::nullopt;
  info.reference = refresh != 0 || refresh_context;
  return info;
}

}  // namespace

std::optional<Vp9FrameInfo> parse_vp9_frame(Bytes sample) {
  if (sample.empty()) return std::nullopt;
  // Annex B: a superframe ends with an index whose first and last byte are 110mmfff.
  const std::uint8_t last = sample.back();
  if ((last & 0xe0) == 0xc0) {
    const std::size_t frames = (last & 7) + 1;
    const std::size_t mag = ((last >> 3) & 3) + 1;
    const std::size_t index = 2 + mag * frames;
    if (sample.size() >= index && sample[sample.size() - index] == last) {
      Vp9FrameInfo all;
      all.reference = false;
      all.frames = static_cast<int>(frames);
      std::size_t offset = 0;
      const std::size_t data_end = sample.size() - index;
      for (std::size_t f = 0; f < frames; ++f) {
        std::size_t size = 0;
        for (std::size_t b = 0; b < mag; ++b) {
          size |= std::size_t{sample[sample.size() - index + 1 + f * mag + b]} << (8 * b);
        }
        if (size > data_end - offset) return std::nullopt;
        const auto one = parse_one(sample.subspan(offset, size));
        if (!one) return std::nullopt;
        if (f == 0) all.key = one->key;
        all.reference = all.reference || one->reference;
        offset += size;
      }
      return all;
    }
  }
  return parse_one(sample);
}

std::optional<Vp9Descriptor> parse_vp9_descriptor(Bytes p) {
  if (p.empty()) return std::nullopt;
  const std::uint8_t b0 = p[0];
  Vp9Descriptor d;
  d.inter_predicted = (b0 & 0x40) != 0;
  d.flexible = (b0 & 0x10) != 0;
  d.begin = (b0 & 0x08) != 0;
  d.end = (b0 & 0x04) != 0;
  d.not_upper_reference = (b0 & 0x01) != 0;
  std::size_t i = 1;
  auto have = [&](std::size_t n) { return p.size() - i >= n; };
  if (b0 & 0x80) {  // I
    if (!have(1)) return std::nullopt;
    if (p[i] & 0x80) {
      if (!have(2)) return std::nullopt;
      d.picture_id = static_cast<std::uint16_t>(((p[i] & 0x7f) << 8) | p[i + 1]);
      i += 2;
    } else {
      d.picture_id = p[i++];
    }
  }
  if (b0 & 0x20) {  // L
    if (!have(1)) return std::nullopt;
    d.tid = static_cast<std::uint8_t>(p[i] >> 5);
    d.sid = static_cast<std::uint8_t>((p[i] >> 1) & 7);
    ++i;
    if (!d.flexible) {
      if (!have(1)) return std::nullopt;
      d.tl0_pic_idx = p[i++];
    }
  }
  if (d.flexible && d.inter_predicted) {  // P_DIFF | N, at most 3 (§4.2)
    for (;;) {
      if (!have(1) || d.reference_diffs == 3) return std::nullopt;
      const bool more = (p[i++] & 1) != 0;
      ++d.reference_diffs;
      if (!more) break;
    }
  }
  if (b0 & 0x02) {  // V: scalability structure (§4.2.1)
    d.scalability = true;
    if (!have(1)) return std::nullopt;
    const std::uint8_t ss = p[i++];
    const std::size_t spatial_layers = (ss >> 5) + 1;
    if (ss & 0x10) {  // Y: WIDTH, HEIGHT per layer
      if (!have(4 * spatial_layers)) return std::nullopt;
      i += 4 * spatial_layers;
    }
    if (ss & 0x08) {  // G: picture group
      if (!have(1)) return std::nullopt;
      const std::size_t pictures = p[i++];
      for (std::size_t g = 0; g < pictures; ++g) {
        if (!have(1)) return std::nullopt;
        const std::size_t refs = (p[i++] >> 2) & 3;
        if (!have(refs)) return std::nullopt;
        i += refs;
      }
    }
  }
  if (!have(1)) return std::nullopt;
  d.size = i;
  return d;
}

void packetize_vp9(Bytes sample, std::uint16_t picture_id, bool inter_predicted,
                   std::size_t max_payload,
                   const std::function<void(Bytes head, Bytes body)>& emit) {
  constexpr std::size_t kDescriptor = 3;
  const std::size_t chunk = max_payload - kDescriptor;
  bool first = true;
  while (first || !sample.empty()) {
    const std::size_t n = std::min(chunk, sample.size());
    const bool last = n == sample.size();
    const std::uint8_t head[kDescriptor] = {
        static_cast<std::uint8_t>(0x80 | (inter_predicted ? 0x40 : 0) | (first ? 0x08 : 0) |
                                  (last ? 0x04 : 0)),
        static_cast<std::uint8_t>(0x80 | ((picture_id >> 8) & 0x7f)),
        static_cast<std::uint8_t>(picture_id)};
    emit(head, sample.first(n));
    sample = sample.subspan(n);
    first = false;
  }
}

}  // namespace predrop::media::detail

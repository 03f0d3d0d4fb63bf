// AV1 RTP packetization (see av1_packetizer.hpp).
#include "av1_packetizer.hpp"

#include <algorithm>

namespace predrop::media::detail {

std::optional<std::pair<std::uint32_t, std::size_t>> read_leb128(std::span<const std::uint8_t> in) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < 8 && i < in.size(); ++i) {
    value |= std::uint64_t{in[i] & 0x7fu} << (7 * i);
    if ((in[i] & 0x80) == 0) {
      if (value > 0xffffffffu) return std::nullopt;
      return std::pair{static_cast<std::uint32_t>(value), i + 1};
    }
  }
  return std::nullopt;
}

void write_leb128(std::uint32_t value, std::vector<std::uint8_t>& out) {
  do {
    std::uint8_t byte = value & 0x7f;
    value >>= 7;
    if (value != 0) byte |= 0x80;
    out.push_back(byte);
  } while (value != 0);
}

bool split_av1_obus(std::span<const std::uint8_t> tu, std::vector<Av1Obu>& out) {
  std::size_t i = 0;
  while (i < tu.size()) {
    // obu_header (§5.3.2): forbidden(1) type(4) extension_flag(1) has_size_field(1) reserved(1).
    const std::uint8_t h = tu[i];
    if (h & 0x80) return false;
    Av1Obu obu;
    obu.type = (h >> 3) & 0x0f;
    obu.has_extension = (h & 0x04) != 0;
    const bool has_size = (h & 0x02) != 0;
    const std::size_t header_size = obu.has_extension ? 2 : 1;
    if (tu.size() - i < header_size) return false;
    obu.header = tu.subspan(i, header_size);
    if (obu.has_extension) {
      // obu_extension_header (§5.3.3): temporal_id(3) spatial_id(2) reserved(3).
      obu.temporal_id = tu[i + 1] >> 5;
      obu.spatial_id = (tu[i + 1] >> 3) & 3;
    }
    i += header_size;
    std::size_t size = tu.size() - i;
    if (has_size) {
      const auto leb = read_leb128(tu.subspan(i));
      if (!leb || leb->first > tu.size() - i - leb->second) return false;
      i += leb->second;
      size = leb->first;
    }
    obu.payload = tu.subspan(i, size);
    i += size;
    out.push_back(obu);
  }
  return true;
}

std::size_t write_leb128(std::uint32_t value, std::uint8_t (&out)[8]) {
  std::size_t n = 0;
  do {
    std::uint8_t byte = value & 0x7f;
    value >>= 7;
    if (value != 0) byte |= 0x80;
    out[n++] = byte;
  } while (value != 0);
  return n;
}

bool packetize_av1(std::span<const std::uint8_t> tu, bool new_sequence, std::size_t max_payload,
                   const std::function<void(std::span<const std::uint8_t>)>& emit) {
  Av1Scratch scratch;
  return packetize_av1(tu, new_sequence, max_payload, scratch,
                       [&](std::span<const std::uint8_t> payload, bool) { emit(payload); });
}

bool packetize_av1(std::span<const std::uint8_t> tu, bool new_sequence, std::size_t max_payload,
                   Av1Scratch& scratch,
                   const std::function<void(std::span<const std::uint8_t>, bool)>& emit) {
  std::vector<Av1Obu>& obus = scratch.obus;
  obus.clear();
  if (max_payload < 8 || !split_av1_obus(tu, obus)) return false;
  std::vector<std::uint8_t>& packet = scratch.packet;
  packet.reserve(max_payload);
  bool first_packet = true;
  bool continues = false;        // the next packet starts with the rest of an element (Z)
  bool sequence_header = false;  // the packet in progress carries a sequence header
  auto start = [&] {
    packet.assign(1, 0);
    if (continues) packet[0] |= 0x80;
    if (first_packet && new_sequence) packet[0] |= 0x08;
    first_packet = false;
    sequence_header = false;
  };
  auto finish = [&](bool fragment_follows) {
    if (fragment_follows) packet[0] |= 0x40;
    emit(packet, sequence_header);
    continues = fragment_follows;
  };
  start();
  for (const Av1Obu& obu : obus) {
    if (obu.type == kAv1TemporalDelimiter || obu.type == kAv1TileList || obu.type == kAv1Padding) {
      continue;
    }
    // The OBU element: the header with obu_has_size_field cleared, then the payload; written
    // straight from the unit, `done` bytes of it so far.
    const std::uint8_t head[2] = {static_cast<std::uint8_t>(obu.header[0] & ~0x02u),
                                  obu.has_extension ? obu.header[1] : std::uint8_t{0}};
    const std::size_t head_size = obu.header.size();
    const std::size_t total = head_size + obu.payload.size();
    std::size_t done = 0;
    auto copy = [&](std::size_t n) {
      for (; n > 0 && done < head_size; --n) {
        packet.push_back(head[done++]);
      }
      const auto part = obu.payload.subspan(done - head_size, n);
      packet.insert(packet.end(), part.begin(), part.end());
      done += n;
    };
    const bool is_sequence_header = obu.type == kAv1SequenceHeader;
    std::uint8_t length[8];
    while (done < total) {
      // Room for a length (at most 3 bytes below 2^21) and at least one byte of data.
      const std::size_t rest = total - done;
      std::size_t length_size = write_leb128(static_cast<std::uint32_t>(rest), length);
      const std::size_t room = max_payload - packet.size();
      if (length_size + rest <= room) {
        packet.insert(packet.end(), length, length + length_size);
        copy(rest);
        sequence_header = sequence_header || is_sequence_header;
        break;
      }
      if (room < 4 + 1) {  // too little for a useful fragment: close this packet
        finish(false);
        start();
        continue;
      }
      // A fragment filling the packet: the largest `take` whose length fits beside it (a
      // payload is far below 2^21, so 3 length bytes always do).
      std::size_t take = 0;
      for (std::size_t bytes = 1; bytes <= 3; ++bytes) {
        length_size = write_leb128(static_cast<std::uint32_t>(room - bytes), length);
        if (length_size <= bytes) {
          take = room - bytes;
          break;
        }
      }
      packet.insert(packet.end(), length, length + length_size);
      copy(take);
      sequence_header = sequence_header || is_sequence_header;
      finish(true);
      start();
    }
  }
  if (packet.size() > 1) finish(false);
  return true;
}

namespace {

// Reads the AV1 spec's f(n) fields (§4.10.2, most significant bit first) and uvlc() (§4.10.3);
// a read past the end sets `failed` and yields 0.
class BitReader {
 public:
  explicit BitReader(std::span<const std::uint8_t> data) : data_(data) {}
  std::uint32_t f(int bits) {
    std::uint32_t v = 0;
    for (int i = 0; i < bits; ++i) {
      if (position_ >= data_.size() * 8) {
        failed_ = true;
        return 0;
      }
      v = (v << 1) | ((data_[position_ / 8] >> (7 - position_ % 8)) & 1u);
      ++position_;
    }
    return v;
  }
  bool flag() { return f(1) != 0; }
  void uvlc() {
    int leading_zeros = 0;
    while (!failed_ && !flag()) {
      ++leading_zeros;
    }
    if (leading_zeros < 32) f(leading_zeros);
  }
  bool failed() const { return failed_; }

 private:
  std::span<const std::uint8_t> data_;
  std::size_t position_ = 0;
  bool failed_ = false;
};

constexpr int kSelect = 2;  // SELECT_SCREEN_CONTENT_TOOLS, SELECT_INTEGER_MV (§6.8.2)
constexpr int kKeyFrame = 0;
constexpr int kIntraOnlyFrame = 2;
constexpr int kSwitchFrame = 3;

}  // namespace

std::optional<Av1SequenceHeader> parse_av1_sequence_header(std::span<const std::uint8_t> payload) {
  BitReader r(payload);
  Av1SequenceHeader h;
  r.f(3);  // seq_profile
  r.f(1);  // still_picture
  h.reduced_still_picture_header = r.flag();
  int buffer_delay_length = 0;
  if (h.reduced_still_picture_header) {
    r.f(5);  // seq_level_idx[0]
  } else {
    if (r.flag()) {  // timing_info_present_flag: timing_info() (§5.5.3)
      r.f(32);       // num_units_in_display_tick
      r.f(32);       // time_scale
      h.equal_picture_interval = r.flag();
      if (h.equal_picture_interval) r.uvlc();  // num_ticks_per_picture_minus_1
      h.decoder_model_info_present = r.flag();
      if (h.decoder_model_info_present) {  // decoder_model_info() (§5.5.4)
        buffer_delay_length = static_cast<int>(r.f(5)) + 1;
        r.f(32);  // num_units_in_decoding_tick
        h.buffer_removal_time_length = static_cast<int>(r.f(5)) + 1;
        h.frame_presentation_time_length = static_cast<int>(r.f(5)) + 1;
      }
    }
    const bool initial_display_delay_present = r.flag();
    h.operating_points = static_cast<int>(r.f(5)) + 1;
    for (int i = 0; i < h.operating_points; ++i) {
      h.operating_point_idc[i] = static_cast<std::uint16_t>(r.f(12));
      if (r.f(5) > 7) r.f(1);  // seq_level_idx, seq_tier
      if (h.decoder_model_info_present) {
        h.decoder_model_present_for_op[i] = r.flag();
        if (h.decoder_model_present_for_op[i]) {  // operating_parameters_info() (§5.5.5)
          r.f(buffer_delay_length);               // decoder_buffer_delay
          r.f(buffer_delay_length);               // encoder_buffer_delay
          r.f(1);                                 // low_delay_mode_flag
        }
      }
      if (initial_display_delay_present && r.flag()) r.f(4);
    }
  }
  const int width_bits = static_cast<int>(r.f(4)) + 1;
  const int height_bits = static_cast<int>(r.f(4)) + 1;
  r.f(width_bits);   // max_frame_width_minus_1
  r.f(height_bits);  // max_frame_height_minus_1
  if (!h.reduced_still_picture_header) h.frame_id_numbers_present = r.flag();
  if (h.frame_id_numbers_present) {
    const int delta_length = static_cast<int>(r.f(4)) + 2;
    h.frame_id_length = static_cast<int>(r.f(3)) + 1 + delta_length;
  }
  r.f(3);  // use_128x128_superblock, enable_filter_intra, enable_intra_edge_filter
  if (!h.reduced_still_picture_header) {
    r.f(4);  // enable_interintra_compound, _masked_compound, _warped_motion, _dual_filter
    const bool enable_order_hint = r.flag();
    if (enable_order_hint) r.f(2);  // enable_jnt_comp, enable_ref_frame_mvs
    h.force_screen_content_tools = r.flag() ? kSelect : static_cast<int>(r.f(1));
    if (h.force_screen_content_tools > 0) {
      h.force_integer_mv = r.flag() ? kSelect : static_cast<int>(r.f(1));
    }
    if (enable_order_hint) h.order_hint_bits = static_cast<int>(r.f(3)) + 1;
  }
  if (r.failed()) return std::nullopt;
  return h;
}

std::optional<Av1FrameHeader> parse_av1_frame_header(std::span<const std::uint8_t> payload,
                                                     const Av1SequenceHeader& seq,
                                                     std::uint8_t temporal_id,
                                                     std::uint8_t spatial_id) {
  BitReader r(payload);
  Av1FrameHeader h;
  if (seq.reduced_still_picture_header) return h;  // a shown key frame
  const bool temporal_point_info = seq.decoder_model_info_present && !seq.equal_picture_interval;
  h.show_existing_frame = r.flag();
  if (h.show_existing_frame) {
    h.frame_to_show = static_cast<std::uint8_t>(r.f(3));
    if (r.failed()) return std::nullopt;
    h.refresh_frame_flags = 0;  // a key frame shown this way refreshes all: the caller knows
    return h;
  }
  h.frame_type = static_cast<int>(r.f(2));
  const bool intra = h.frame_type == kKeyFrame || h.frame_type == kIntraOnlyFrame;
  h.show_frame = r.flag();
  if (h.show_frame && temporal_point_info) r.f(seq.frame_presentation_time_length);
  if (!h.show_frame) r.f(1);  // showable_frame
  const bool shown_key = h.frame_type == kKeyFrame && h.show_frame;
  const bool error_resilient = h.frame_type == kSwitchFrame || shown_key || r.flag();
  r.f(1);  // disable_cdf_update
  const bool screen_content_tools =
      seq.force_screen_content_tools == kSelect ? r.flag() : seq.force_screen_content_tools != 0;
  if (screen_content_tools && seq.force_integer_mv == kSelect) r.f(1);  // force_integer_mv
  if (seq.frame_id_numbers_present) r.f(seq.frame_id_length);           // current_frame_id
  if (h.frame_type != kSwitchFrame) r.f(1);                             // frame_size_override
  r.f(seq.order_hint_bits);                                             // order_hint
  if (!intra && !error_resilient) r.f(3);                               // primary_ref_frame
  if (seq.decoder_model_info_present && r.flag()) {  // buffer_removal_time_present_flag
    for (int op = 0; op < seq.operating_points; ++op) {
      if (!seq.decoder_model_present_for_op[op]) continue;
      const unsigned idc = seq.operating_point_idc[op];
      const bool in_temporal = ((idc >> temporal_id) & 1u) != 0;
      const bool in_spatial = ((idc >> (spatial_id + 8u)) & 1u) != 0;
      if (idc == 0 || (in_temporal && in_spatial)) r.f(seq.buffer_removal_time_length);
    }
  }
  h.refresh_frame_flags = h.frame_type == kSwitchFrame || shown_key
                              ? std::uint8_t{0xff}
                              : static_cast<std::uint8_t>(r.f(8));
  if (r.failed()) return std::nullopt;
  return h;
}

void Av1Packetizer::configure(Bytes extradata) {
  // av1C starts with marker 1 and version 1 (0x81); its configOBUs follow 4 bytes in. FFmpeg's
  // IVF and OBU readers may hand the bare OBUs instead.
  Bytes obus_bytes = extradata;
  if (!extradata.empty() && (extradata[0] & 0x80) != 0) {
    obus_bytes = extradata.size() > 4 ? extradata.subspan(4) : Bytes{};
  }
  obus_.clear();
  split_av1_obus(obus_bytes, obus_);  // what parses before an error is kept
  for (const Av1Obu& obu : obus_) {
    if (obu.type != kAv1SequenceHeader) continue;
    sequence_ = parse_av1_sequence_header(obu.payload);
    if (!sequence_) continue;
    sequence_obu_.assign(obu.header.begin(), obu.header.end());
    sequence_obu_[0] |= 0x02;
    write_leb128(static_cast<std::uint32_t>(obu.payload.size()), sequence_obu_);
    sequence_obu_.insert(sequence_obu_.end(), obu.payload.begin(), obu.payload.end());
    break;
  }
}

bool Av1Packetizer::read_unit(const std::vector<Av1Obu>& obus, VideoPicture& picture) {
  bool any = false;
  bool first = true;
  picture.reference = false;
  for (const Av1Obu& obu : obus) {
    if (obu.type == kAv1SequenceHeader) {
      sequence_ = parse_av1_sequence_header(obu.payload);
      if (sequence_) {  // the latest one goes before key frames that lack it
        sequence_obu_.assign(obu.header.begin(), obu.header.end());
        sequence_obu_[0] |= 0x02;
        write_leb128(static_cast<std::uint32_t>(obu.payload.size()), sequence_obu_);
        sequence_obu_.insert(sequence_obu_.end(), obu.payload.begin(), obu.payload.end());
      }
      continue;
    }
    if (obu.type != kAv1FrameHeader && obu.type != kAv1Frame) continue;
    if (!sequence_) return false;
    const auto h = parse_av1_frame_header(obu.payload, *sequence_, obu.temporal_id, obu.spatial_id);
    if (!h) return false;
    std::uint8_t refresh = h->refresh_frame_flags;
    int type = h->frame_type;
    if (h->show_existing_frame) {
      // Showing a key frame resets the references to it (§7.21): it acts as one.
      type = ref_frame_type_[h->frame_to_show];
      if (type == 0) refresh = 0xff;
    }
    for (int i = 0; i < 8; ++i) {
      if ((refresh >> i) & 1) ref_frame_type_[i] = static_cast<std::uint8_t>(type);
    }
    if (first) {
      picture.type = type == kKeyFrame && (h->show_frame || h->show_existing_frame)
                         ? FrameType::kKey
                     : type == kIntraOnlyFrame ? FrameType::kIntra
                                               : FrameType::kPredicted;
      picture.temporal_id = obu.temporal_id;
      first = false;
    }
    // The unit's layer is its lowest (a unit is one time instant; its frames share it).
    picture.temporal_id = std::min(picture.temporal_id, obu.temporal_id);
    picture.reference = picture.reference || refresh != 0;
    any = true;
  }
  return any;
}

std::optional<VideoPicture> Av1Packetizer::add_sample(Bytes sample, bool key_flag,
                                                      PayloadSink& sink) {
  if (sample.empty()) return std::nullopt;
  obus_.clear();
  VideoPicture picture;
  const bool split = split_av1_obus(sample, obus_);
  const bool readable = split && read_unit(obus_, picture);
  if (!readable) {
    warn_("unreadable AV1 temporal unit at picture " + std::to_string(pictures_));
    picture = VideoPicture{};
    picture.type = key_flag ? FrameType::kKey : FrameType::kUnknown;
    picture.reference = true;
  }
  if (!split) return std::nullopt;
  const bool key = picture.type == FrameType::kKey;
  const bool has_sequence_header = std::any_of(
      obus_.begin(), obus_.end(), [](const Av1Obu& o) { return o.type == kAv1SequenceHeader; });
  Bytes unit = sample;
  if (key && !has_sequence_header && !sequence_obu_.empty()) {
    // A key frame carries its sequence header (§5: a receiver may join there).
    unit_.assign(sequence_obu_.begin(), sequence_obu_.end());
    unit_.insert(unit_.end(), sample.begin(), sample.end());
    unit = unit_;
  }
  const bool new_sequence = key && (has_sequence_header || !sequence_obu_.empty());
  const std::uint32_t first = sink.count();
  packetize_av1(unit, new_sequence, max_payload_, scratch_,
                [&sink](Bytes payload, bool sequence_header) {
                  sink.add({}, payload, false, sequence_header);
                });
  if (sink.count() == first) return std::nullopt;  // nothing to send (delimiters, padding)
  sink.mark_last();
  ++pictures_;
  return picture;
}

void Av1Packetizer::describe(StreamInfo& info) const {
  info.encoding = "AV1/90000";
  info.fmtp.clear();
}

}  // namespace predrop::media::detail

// MP4A-LATM (RFC 6416) into RFC 3640 AAC-hbr (see predrop/media/latm.hpp).
#include "predrop/media/latm.hpp"

#include <array>
#include <string>

#include "predrop/core/text_util.hpp"

namespace predrop::media {

namespace {

// MSB-first bit reader; reading past the end sets `over` and yields zeros.
class Bits {
 public:
  explicit Bits(std::span<const std::uint8_t> data) : data_(data) {}
  std::uint32_t read(int n) {
    std::uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      v <<= 1;
      if (pos_ < data_.size() * 8) {
        v |= (data_[pos_ / 8] >> (7 - pos_ % 8)) & 1U;
      } else {
        over_ = true;
      }
      ++pos_;
    }
    return v;
  }
  std::uint32_t peek(int n) {
    const std::size_t at = pos_;
    const bool was_over = over_;
    const std::uint32_t v = read(n);
    pos_ = at;
    over_ = was_over;
    return v;
  }
  std::size_t left() const { return pos_ < data_.size() * 8 ? data_.size() * 8 - pos_ : 0; }
  std::size_t pos() const { return pos_; }
  void seek(std::size_t pos) { pos_ = pos; }
  bool over() const { return over_; }

 private:
  std::span<const std::uint8_t> data_;
  std::size_t pos_ = 0;
  bool over_ = false;
};

// 14496-3 Table 1.16.
constexpr std::array<std::uint32_t, 13> kSampleRates = {
    96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350};

std::uint32_t audio_object_type(Bits& b) {
  const std::uint32_t aot = b.read(5);
  return aot == 31 ? 32 + b.read(6) : aot;
}

// samplingFrequencyIndex (+ the explicit 24-bit rate); 0 when reserved.
std::uint32_t sampling_frequency(Bits& b) {
  const std::uint32_t index = b.read(4);
  if (index == 0xf) return b.read(24);
  return index < kSampleRates.size() ? kSampleRates[index] : 0;
}

// LatmGetValue() (14496-3 §1.7.3.1).
std::uint32_t latm_value(Bits& b) {
  const std::uint32_t bytes = b.read(2);
  std::uint32_t v = 0;
  for (std::uint32_t i = 0; i <= bytes; ++i) {
    v = (v << 8) | b.read(8);
  }
  return v;
}

// AudioSpecificConfig (14496-3 §1.6.2.1) of the object types we serve, within `end` bits (the
// config's end for audioMuxVersion 0, where its length is not given).
core::Status audio_specific_config(Bits& b, std::size_t end, LatmConfig& out) {
  std::uint32_t aot = audio_object_type(b);
  const std::uint32_t rate = sampling_frequency(b);
  const std::uint32_t channel_config = b.read(4);
  if (b.over()) return core::make_error("truncated AudioSpecificConfig");
  bool explicit_sbr = false;
  if (aot == 5 || aot == 29) {  // explicit SBR (and PS): the extension rate, then the core
    explicit_sbr = true;
    if (sampling_frequency(b) == 0) return core::make_error("a reserved SBR sampling rate");
    aot = audio_object_type(b);
    if (b.over()) return core::make_error("truncated AudioSpecificConfig");
  }
  if (aot < 1 || aot > 4) {
    return core::make_error("audio object type " + std::to_string(aot) +
                            " (only AAC Main, LC, SSR and LTP: 1-4)");
  }
  if (rate == 0) return core::make_error("a reserved sampling frequency index");
  if (channel_config == 0 || channel_config > 7) {
    return core::make_error("channelConfiguration " + std::to_string(channel_config) +
                            " (a program_config_element or reserved; only 1-7)");
  }
  // GASpecificConfig (§4.4.1).
  if (b.read(1) != 0) return core::make_error("960-sample frames (frameLengthFlag 1)");
  if (b.read(1) != 0) b.read(14);  // dependsOnCoreCoder: coreCoderDelay
  if (b.read(1) != 0) b.read(1);   // extensionFlag: extensionFlag3 (object types 1-4)
  // The backward-compatible SBR/PS signalling that may follow (§1.6.5.2): FFmpeg's AAC encoder
  // writes it into its extradata (0x2b7, SBR absent), which rtpmp4apay copies into the config.
  if (!explicit_sbr && b.pos() + 16 <= end && b.peek(11) == 0x2b7) {
    b.read(11);
    if (audio_object_type(b) != 5) {
      return core::make_error("a sync extension other than SBR's");
    }
    if (b.read(1) != 0) {  // sbrPresentFlag
      if (sampling_frequency(b) == 0) return core::make_error("a reserved SBR sampling rate");
      if (b.pos() + 12 <= end && b.peek(11) == 0x548) b.read(12);  // psPresentFlag
    }
  }
  if (b.over() || b.pos() > end) return core::make_error("truncated AudioSpecificConfig");
  out.object_type = static_cast<int>(aot);
  out.sample_rate = rate;
  out.channels = channel_config == 7 ? 8 : static_cast<int>(channel_config);
  return core::Ok{};
}

}  // namespace

core::Result<LatmConfig> parse_stream_mux_config(std::span<const std::uint8_t> config) {
  Bits b(config);
  const std::size_t end = config.size() * 8;
  const std::uint32_t version = b.read(1);
  const std::uint32_t version_a = version == 1 ? b.read(1) : 0;
  if (version == 1 && version_a == 0) latm_value(b);  // taraBufferFullness
  const std::uint32_t same_time_framing = b.read(1);
  LatmConfig out;
  out.subframes = static_cast<int>(b.read(6)) + 1;
  const std::uint32_t programs = b.read(4);
  const std::uint32_t layers = b.read(3);
  if (version_a != 0) return core::make_error("audioMuxVersionA 1 (reserved)");
  if (b.over()) return core::make_error("truncated StreamMuxConfig");
  if (same_time_framing != 1) return core::make_error("allStreamsSameTimeFraming 0");
  if (programs != 0) return core::make_error("more than one program");
  if (layers != 0) return core::make_error("more than one layer");
  std::size_t asc_end = end;
  if (version == 1) {
    const std::uint32_t length = latm_value(b);
    if (b.over() || length > b.left()) return core::make_error("truncated AudioSpecificConfig");
    asc_end = b.pos() + length;
  }
  const std::size_t asc_bits_start = b.pos();
  if (auto s = audio_specific_config(b, asc_end, out); !s) return s.error();
  const std::size_t asc_bits = b.pos() - asc_bits_start;
  // The AudioSpecificConfig left-aligned in whole bytes.
  out.audio_specific_config.assign((asc_bits + 7) / 8, 0);
  {
    Bits copy(config);
    copy.seek(asc_bits_start);
    for (std::size_t i = 0; i < asc_bits; ++i) {
      if (copy.read(1) != 0) {
        out.audio_specific_config[i / 8] |= static_cast<std::uint8_t>(0x80U >> (i % 8));
      }
    }
  }
  if (version == 1) b.seek(asc_end);  // fillBits
  // frameLengthType and what follows, if the config goes on (GStreamer's stops here).
  if (b.left() >= 3) {
    const std::uint32_t frame_length_type = b.read(3);
    if (frame_length_type != 0) {
      return core::make_error("frameLengthType " + std::to_string(frame_length_type) +
                              " (only 0: a byte length per frame)");
    }
    if (b.left() >= 8) b.read(8);  // latmBufferFullness
    if (b.left() >= 1) out.other_data = b.read(1) != 0;
  }
  return out;
}

core::Result<LatmConfig> parse_latm_config_hex(std::string_view hex) {
  if (hex.empty() || hex.size() % 2 != 0 || hex.size() > 256) {
    return core::make_error("config is not an even number of hex digits");
  }
  std::vector<std::uint8_t> bytes;
  bytes.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const auto v = core::text::parse_hex<unsigned>(hex.substr(i, 2));
    if (!v) return core::make_error("config is not hex");
    bytes.push_back(static_cast<std::uint8_t>(*v));
  }
  return parse_stream_mux_config(bytes);
}

LatmDepacketizer::LatmDepacketizer(const LatmConfig& config) : config_(config) {
  partial_.reserve(kMaxElementBytes);
}

void LatmDepacketizer::reset() {
  partial_.clear();
  broken_ = false;
  have_last_ = false;
}

std::span<const std::uint8_t> LatmDepacketizer::push(std::uint16_t sequence,
                                                     std::uint32_t timestamp, bool marker,
                                                     std::span<const std::uint8_t> payload) {
  const bool gap = have_last_ && sequence != static_cast<std::uint16_t>(last_sequence_ + 1);
  // After a gap, a packet at the timestamp of an unfinished element continues it: its start was
  // lost, so the rest of it is dropped up to its marker.
  const bool continues = have_last_ && !last_marker_ && timestamp == last_timestamp_;
  have_last_ = true;
  last_sequence_ = sequence;
  last_timestamp_ = timestamp;
  last_marker_ = marker;
  if (gap) {
    if (!partial_.empty()) ++stats_.malformed;
    partial_.clear();
    broken_ = continues;
  } else if (!partial_.empty() && timestamp != partial_timestamp_) {
    partial_.clear();  // an element that never got its marker
    ++stats_.malformed;
  }
  if (broken_) {
    if (marker) broken_ = false;
    ++stats_.malformed;
    return {};
  }
  if (partial_.empty()) partial_timestamp_ = timestamp;
  if (partial_.size() + payload.size() > kMaxElementBytes) {
    partial_.clear();
    broken_ = !marker;  // the rest of this element is dropped too
    ++stats_.malformed;
    return {};
  }
  partial_.insert(partial_.end(), payload.begin(), payload.end());
  if (!marker) {
    ++stats_.fragments;
    return {};
  }
  const bool ok = convert(partial_);
  partial_.clear();
  if (!ok) {
    ++stats_.malformed;
    return {};
  }
  ++stats_.elements;
  return out_;
}

// PayloadLengthInfo + PayloadMux per subframe, element after element while bytes remain (one
// element only when other data follows it), into AAC-hbr: AU-headers-length, a 16-bit header
// per frame (13-bit size, 3-bit index or index delta 0), the frames.
bool LatmDepacketizer::convert(std::span<const std::uint8_t> element) {
  frames_.clear();
  std::size_t at = 0;
  while (at < element.size()) {
    for (int s = 0; s < config_.subframes; ++s) {
      std::size_t length = 0;
      for (;;) {
        if (at >= element.size()) return false;
        const std::uint8_t v = element[at++];
        length += v;
        if (v != 255) break;
      }
      if (length == 0 || length > 8191 || length > element.size() - at) return false;
      frames_.push_back(element.subspan(at, length));
      at += length;
    }
    if (config_.other_data) break;  // the rest is other data
  }
  if (frames_.empty() || frames_.size() > 4095) return false;  // AU-headers-length is 16 bits
  out_.clear();
  const std::size_t header_bits = frames_.size() * 16;
  out_.push_back(static_cast<std::uint8_t>(header_bits >> 8));
  out_.push_back(static_cast<std::uint8_t>(header_bits));
  for (const auto& f : frames_) {
    const auto h = static_cast<std::uint16_t>(f.size() << 3);
    out_.push_back(static_cast<std::uint8_t>(h >> 8));
    out_.push_back(static_cast<std::uint8_t>(h));
  }
  for (const auto& f : frames_) {
    out_.insert(out_.end(), f.begin(), f.end());
  }
  return true;
}

}  // namespace predrop::media

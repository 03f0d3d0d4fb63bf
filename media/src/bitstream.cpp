#include "bitstream.hpp"

namespace predrop::media::detail {
namespace {

// Reads bits MSB first from an RBSP, skipping emulation-prevention bytes (00 00 03 ->
// 00 00, 14496-10 §7.4.1). Reads past the end return std::nullopt.
class RbspReader {
 public:
  explicit RbspReader(Bytes data) : data_(data) {}

  std::optional<std::uint32_t> bit() {
    if (bit_ == 0) {
      if (!next_byte()) return std::nullopt;
      bit_ = 8;
    }
    --bit_;
    return (current_ >> bit_) & 1u;
  }

  // Unsigned Exp-Golomb (§9.1); at most 31 leading zeros.
  std::optional<std::uint32_t> ue() {
    int zeros = 0;
    for (;;) {
      auto b = bit();
      if (!b) return std::nullopt;
      if (*b == 1) break;
      if (++zeros > 31) return std::nullopt;
    }
    std::uint64_t value = 0;
    for (int i = 0; i < zeros; ++i) {
      auto b = bit();
      if (!b) return std::nullopt;
      value = (value << 1) | *b;
    }
    return static_cast<std::uint32_t>((std::uint64_t{1} << zeros) - 1 + value);
  }

 private:
  bool next_byte() {
    if (pos_ >= data_.size()) return false;
    std::uint8_t byte = data_[pos_++];
    if (byte == 0x03 && zeros_ >= 2) {
      zeros_ = 0;
      if (pos_ >= data_.size()) return false;
      byte = data_[pos_++];
    }
    zeros_ = byte == 0 ? zeros_ + 1 : 0;
    current_ = byte;
    return true;
  }

  Bytes data_;
  std::size_t pos_ = 0;
  int zeros_ = 0;
  std::uint8_t current_ = 0;
  int bit_ = 0;
};

// Length of the start code at `i` (3 or 4), or 0.
std::size_t start_code_at(Bytes d, std::size_t i) {
  if (i + 3 <= d.size() && d[i] == 0 && d[i + 1] == 0 && d[i + 2] == 1) return 3;
  if (i + 4 <= d.size() && d[i] == 0 && d[i + 1] == 0 && d[i + 2] == 0 && d[i + 3] == 1) return 4;
  return 0;
}

void push_trimmed(Bytes nal, std::vector<Bytes>& out) {
  // trailing_zero_8bits belong to the byte stream, not to the NAL unit (Annex B.1).
  std::size_t n = nal.size();
  while (n > 0 && nal[n - 1] == 0) {
    --n;
  }
  if (n > 0) out.push_back(nal.first(n));
}

}  // namespace

bool split_annexb(Bytes data, std::vector<Bytes>& out) {
  std::size_t i = 0;
  bool clean = true;
  // Find the first start code.
  while (i < data.size() && start_code_at(data, i) == 0) {
    ++i;
  }
  if (i != 0) {
    // Leading zero bytes are legal padding; anything else is junk.
    for (std::size_t j = 0; j < i; ++j) {
      clean = clean && data[j] == 0;
    }
  }
  while (i < data.size()) {
    std::size_t sc = start_code_at(data, i);
    std::size_t begin = i + sc;
    std::size_t j = begin;
    while (j < data.size() && start_code_at(data, j) == 0) {
      ++j;
    }
    push_trimmed(data.subspan(begin, j - begin), out);
    i = j;
  }
  return clean;
}

bool split_length_prefixed(Bytes data, int length_size, std::vector<Bytes>& out) {
  if (length_size != 1 && length_size != 2 && length_size != 4) return false;
  const auto ls = static_cast<std::size_t>(length_size);
  std::size_t i = 0;
  while (i < data.size()) {
    if (data.size() - i < ls) return false;
    std::size_t length = 0;
    for (std::size_t k = 0; k < ls; ++k) {
      length = (length << 8) | data[i + k];
    }
    i += ls;
    if (length > data.size() - i) return false;
    if (length > 0) out.push_back(data.subspan(i, length));
    i += length;
  }
  return true;
}

std::optional<AvcConfig> parse_avcc(Bytes d) {
  // configurationVersion(8)=1 profile(8) compat(8) level(8) 111111 lengthSizeMinusOne(2)
  // 111 numOfSequenceParameterSets(5) { length(16) NAL } numOfPictureParameterSets(8) { ... }
  if (d.size() < 7 || d[0] != 1) return std::nullopt;
  AvcConfig config;
  config.length_size = (d[4] & 0x3) + 1;
  if (config.length_size == 3) return std::nullopt;
  std::size_t i = 5;
  auto read_sets = [&](std::size_t count, std::vector<std::vector<std::uint8_t>>& sets) {
    for (std::size_t k = 0; k < count; ++k) {
      if (d.size() - i < 2) return false;
      std::size_t length = (std::size_t{d[i]} << 8) | d[i + 1];
      i += 2;
      if (d.size() - i < length) return false;
      if (length > 0) {
        sets.emplace_back(d.begin() + static_cast<std::ptrdiff_t>(i),
                          d.begin() + static_cast<std::ptrdiff_t>(i + length));
      }
      i += length;
    }
    return true;
  };
  if (!read_sets(d[i++] & 0x1f, config.sps)) return std::nullopt;
  if (i >= d.size()) return std::nullopt;
  if (!read_sets(d[i++], config.pps)) return std::nullopt;
  return config;
}

std::optional<int> parse_slice_type(Bytes nal) {
  if (nal.size() < 2) return std::nullopt;
  RbspReader reader(nal.subspan(1));
  if (!reader.ue()) return std::nullopt;  // first_mb_in_slice
  auto slice_type = reader.ue();
  if (!slice_type || *slice_type > 9) return std::nullopt;
  return static_cast<int>(*slice_type % 5);
}

std::optional<AdtsHeader> parse_adts(Bytes d) {
  // syncword(12)=0xFFF id(1) layer(2)=0 protection_absent(1) profile(2) sf_index(4) private(1)
  // channel_config(3) orig(1) home(1) | copyright_id_bit(1) copyright_id_start(1)
  // frame_length(13) buffer_fullness(11) number_of_raw_data_blocks_in_frame(2)
  if (d.size() < 7 || d[0] != 0xff || (d[1] & 0xf6) != 0xf0) return std::nullopt;
  AdtsHeader h;
  const bool protection_absent = d[1] & 0x1;
  h.header_size = protection_absent ? 7 : 9;
  h.object_type = ((d[2] >> 6) & 0x3) + 1;
  h.sample_rate_index = (d[2] >> 2) & 0xf;
  h.channel_config = ((d[2] & 0x1) << 2) | ((d[3] >> 6) & 0x3);
  h.frame_size = (std::size_t{d[3] & 0x3u} << 11) | (std::size_t{d[4]} << 3) | (d[5] >> 5);
  h.raw_blocks = (d[6] & 0x3) + 1;
  if (h.sample_rate_index > 12 || h.frame_size < h.header_size) return std::nullopt;
  return h;
}

std::vector<std::uint8_t> audio_specific_config(int object_type, int sample_rate_index,
                                                int channel_config) {
  // audioObjectType(5) samplingFrequencyIndex(4) channelConfiguration(4) GASpecificConfig(3)=0
  const unsigned bits = (static_cast<unsigned>(object_type & 0x1f) << 11) |
                        (static_cast<unsigned>(sample_rate_index & 0xf) << 7) |
                        (static_cast<unsigned>(channel_config & 0xf) << 3);
  return {static_cast<std::uint8_t>(bits >> 8), static_cast<std::uint8_t>(bits & 0xff)};
}

std::string base64(Bytes data) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    const std::uint32_t v =
        (std::uint32_t{data[i]} << 16) | (std::uint32_t{data[i + 1]} << 8) | data[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (const std::size_t rest = data.size() - i; rest > 0) {
    std::uint32_t v = std::uint32_t{data[i]} << 16;
    if (rest == 2) v |= std::uint32_t{data[i + 1]} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string hex_upper(Bytes data) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(data.size() * 2);
  for (std::uint8_t b : data) {
    out += kDigits[b >> 4];
    out += kDigits[b & 0xf];
  }
  return out;
}

}  // namespace predrop::media::detail

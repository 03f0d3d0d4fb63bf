// RFC 2250 §3.5 MPEG audio payloads (see mpa.hpp).
#include "predrop/media/mpa.hpp"

namespace predrop::media {

std::optional<MpaPayload> parse_mpa_payload(std::span<const std::uint8_t> payload) {
  if (payload.size() <= kMpaHeaderBytes) return std::nullopt;
  MpaPayload p;
  p.fragment_offset = static_cast<std::uint16_t>((payload[2] << 8) | payload[3]);
  p.data = payload.subspan(kMpaHeaderBytes);
  return p;
}

std::optional<std::size_t> mpeg_audio_frame_bytes(std::span<const std::uint8_t> data) {
  if (data.size() < 4 || data[0] != 0xff || (data[1] & 0xe0) != 0xe0) return std::nullopt;
  const int version = (data[1] >> 3) & 3;      // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5, 1: reserved
  const int layer = 4 - ((data[1] >> 1) & 3);  // the field's 3, 2, 1 are layers I, II, III
  const int bitrate_index = data[2] >> 4;
  const int rate_index = (data[2] >> 2) & 3;
  const int padding = (data[2] >> 1) & 1;
  if (version == 1 || layer == 4 || bitrate_index == 0 || bitrate_index == 15 || rate_index == 3) {
    return std::nullopt;
  }
  // kbit/s, ISO/IEC 11172-3 Table 2.4.2.3 and 13818-3 Table 2.4.2.3 (index 1..14).
  static constexpr int kMpeg1[3][15] = {
      {0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448},
      {0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},
      {0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320}};
  static constexpr int kMpeg2[2][15] = {
      {0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256},
      {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160}};
  static constexpr int kRates[3] = {44100, 48000, 32000};
  const bool mpeg1 = version == 3;
  const int kbps =
      mpeg1 ? kMpeg1[layer - 1][bitrate_index] : kMpeg2[layer == 1 ? 0 : 1][bitrate_index];
  const int rate = kRates[rate_index] >> (mpeg1 ? 0 : version == 2 ? 1 : 2);
  const long bits = 1000L * kbps;
  if (layer == 1) return static_cast<std::size_t>((12 * bits / rate + padding) * 4);
  const long factor = layer == 3 && !mpeg1 ? 72 : 144;
  return static_cast<std::size_t>(factor * bits / rate + padding);
}

void MpaReassembler::push(std::uint32_t rtp_timestamp, std::span<const std::uint8_t> payload) {
  const auto p = parse_mpa_payload(payload);
  if (!p) {
    ++malformed_;
    return;
  }
  if (p->fragment_offset == 0) {
    flush();
    frame_.assign(p->data.begin(), p->data.end());
    timestamp_ = rtp_timestamp;
    have_ = true;
    return;
  }
  // A continuation must belong to the frame in progress and start where it ends.
  if (!have_ || rtp_timestamp != timestamp_ || p->fragment_offset != frame_.size()) {
    ++malformed_;
    have_ = false;
    frame_.clear();
    return;
  }
  frame_.insert(frame_.end(), p->data.begin(), p->data.end());
}

void MpaReassembler::flush() {
  if (have_ && !frame_.empty()) {
    const auto expected = mpeg_audio_frame_bytes(frame_);
    if (expected && frame_.size() < *expected) {
      ++malformed_;  // its last fragment never came
    } else if (on_frame_) {
      on_frame_(timestamp_, frame_);
    }
  }
  have_ = false;
  frame_.clear();
}

}  // namespace predrop::media

#include "predrop/media/h264_depacketizer.hpp"

#include <utility>

namespace predrop::media {
namespace {

constexpr std::uint8_t kStapA = 24;
constexpr std::uint8_t kFuA = 28;
constexpr std::uint8_t kStartCode[4] = {0, 0, 0, 1};

}  // namespace

H264Depacketizer::H264Depacketizer(Callback on_access_unit)
    : on_access_unit_(std::move(on_access_unit)) {
  buffer_.reserve(std::size_t{1} << 18);
}

void H264Depacketizer::append_start_code_and(std::span<const std::uint8_t> nal) {
  buffer_.insert(buffer_.end(), kStartCode, kStartCode + 4);
  buffer_.insert(buffer_.end(), nal.begin(), nal.end());
}

void H264Depacketizer::abort_fragment() {
  // Drop the partial NAL unit rather than hand the decoder a unit with a hole in it.
  buffer_.resize(fragment_start_);
  in_fragment_ = false;
  damaged_ = true;
  ++stats_.dropped_fragments;
}

void H264Depacketizer::emit() {
  if (in_fragment_) abort_fragment();
  if (have_unit_ && !buffer_.empty()) {
    ++stats_.access_units;
    if (damaged_) ++stats_.damaged_access_units;
    on_access_unit_(AccessUnit{timestamp_, buffer_, damaged_});
  }
  buffer_.clear();
  have_unit_ = false;
  damaged_ = false;
}

void H264Depacketizer::flush() {
  emit();
}

void H264Depacketizer::push(std::uint16_t sequence, std::uint32_t rtp_timestamp, bool marker,
                            std::span<const std::uint8_t> payload) {
  ++stats_.packets;
  bool gap = false;
  if (have_sequence_) {
    const auto expected = static_cast<std::uint16_t>(last_sequence_ + 1);
    if (sequence != expected) {
      const auto missing = static_cast<std::uint16_t>(sequence - expected);
      // A "gap" of more than half the sequence space is a late or duplicate packet: it belongs
      // to a unit already handed out, so it is ignored (RFC 3550 A.1 serial arithmetic).
      if (missing >= 0x8000) {
        ++stats_.malformed;
        return;
      }
      stats_.lost += missing;
      gap = true;
    }
  }
  have_sequence_ = true;
  last_sequence_ = sequence;

  // The lost packets may have belonged to the unit in progress, to the next one, or to both.
  if (gap && have_unit_) {
    if (in_fragment_) abort_fragment();
    damaged_ = true;
  }
  if (have_unit_ && rtp_timestamp != timestamp_) emit();
  if (!have_unit_) {
    have_unit_ = true;
    timestamp_ = rtp_timestamp;
    damaged_ = gap;
  }

  if (payload.empty()) {
    ++stats_.malformed;
  } else {
    const std::uint8_t type = payload[0] & 0x1f;
    if (type >= 1 && type <= 23) {
      // RFC 6184 §5.6: a single NAL unit packet. A new unit ends any unfinished FU-A.
      if (in_fragment_) abort_fragment();
      append_start_code_and(payload);
    } else if (type == kStapA) {
      // §5.7.1: STAP-A header, then { 16-bit size, NAL unit } repeated.
      if (in_fragment_) abort_fragment();
      std::size_t i = 1;
      while (i < payload.size()) {
        if (payload.size() - i < 2) {
          ++stats_.malformed;
          damaged_ = true;
          break;
        }
        const std::size_t size = (std::size_t{payload[i]} << 8) | payload[i + 1];
        i += 2;
        if (size == 0 || size > payload.size() - i) {
          ++stats_.malformed;
          damaged_ = true;
          break;
        }
        append_start_code_and(payload.subspan(i, size));
        i += size;
      }
    } else if (type == kFuA) {
      // §5.8: FU indicator (F, NRI, 28), FU header (S, E, R, type), fragment.
      if (payload.size() < 3) {
        ++stats_.malformed;
        if (in_fragment_) abort_fragment();
        damaged_ = true;
      } else {
        const std::uint8_t header = payload[1];
        const bool start = header & 0x80;
        const bool end = header & 0x40;
        if (start) {
          if (in_fragment_) abort_fragment();  // the previous unit never ended
          fragment_start_ = buffer_.size();
          in_fragment_ = true;
          const std::uint8_t nal_header =
              static_cast<std::uint8_t>((payload[0] & 0xe0) | (header & 0x1f));
          buffer_.insert(buffer_.end(), kStartCode, kStartCode + 4);
          buffer_.push_back(nal_header);
          buffer_.insert(buffer_.end(), payload.begin() + 2, payload.end());
        } else if (in_fragment_) {
          // Continuation: gaps were handled above, so this directly follows the last fragment.
          buffer_.insert(buffer_.end(), payload.begin() + 2, payload.end());
        } else {
          // The start (or a middle part) is missing: nothing to attach this fragment to.
          ++stats_.dropped_fragments;
          damaged_ = true;
        }
        if (end && in_fragment_) in_fragment_ = false;
      }
    } else {
      // STAP-B, MTAP16/24, FU-B (interleaved mode only), or reserved types.
      ++stats_.malformed;
      damaged_ = true;
    }
  }
  // §5.1: the marker bit is set on the last packet of an access unit.
  if (marker) emit();
}

}  // namespace predrop::media

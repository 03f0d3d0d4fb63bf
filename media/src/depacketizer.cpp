// What every video depacketizer shares (see depacketizer.hpp), and the factory.
#include "predrop/media/depacketizer.hpp"

#include <utility>

#include "predrop/media/av1_depacketizer.hpp"
#include "predrop/media/h264_depacketizer.hpp"
#include "predrop/media/h265_depacketizer.hpp"
#include "predrop/media/vp8_depacketizer.hpp"
#include "predrop/media/vp9_depacketizer.hpp"

namespace predrop::media {
namespace {
constexpr std::uint8_t kStartCode[4] = {0, 0, 0, 1};
}  // namespace

Depacketizer::Depacketizer(Callback on_access_unit) : on_access_unit_(std::move(on_access_unit)) {
  buffer_.reserve(std::size_t{1} << 18);
}

void Depacketizer::append_nal(std::span<const std::uint8_t> nal) {
  buffer_.insert(buffer_.end(), kStartCode, kStartCode + 4);
  buffer_.insert(buffer_.end(), nal.begin(), nal.end());
}

void Depacketizer::begin_fragment() {
  if (in_fragment_) abort_fragment();  // the previous unit never ended
  fragment_start_ = buffer_.size();
  in_fragment_ = true;
}

void Depacketizer::abort_fragment() {
  // Drop the partial unit rather than hand the decoder a unit with a hole in it.
  buffer_.resize(fragment_start_);
  in_fragment_ = false;
  damaged_ = true;
  ++stats_.dropped_fragments;
}

void Depacketizer::drop_fragment() {
  ++stats_.dropped_fragments;
  damaged_ = true;
}

void Depacketizer::malformed() {
  ++stats_.malformed;
  damaged_ = true;
}

void Depacketizer::append_aggregated(std::span<const std::uint8_t> payload, std::size_t offset,
                                     std::size_t min_unit) {
  std::size_t i = offset;
  while (i < payload.size()) {
    if (payload.size() - i < 2) {
      malformed();
      break;
    }
    const std::size_t size = (std::size_t{payload[i]} << 8) | payload[i + 1];
    i += 2;
    if (size < min_unit || size > payload.size() - i) {
      malformed();
      break;
    }
    append_nal(payload.subspan(i, size));
    i += size;
  }
}

void Depacketizer::append_fragment(bool start, bool end, std::span<const std::uint8_t> nal_header,
                                   std::span<const std::uint8_t> part) {
  if (start) {
    begin_fragment();
    append_nal(nal_header);
    append(part);
  } else if (in_fragment()) {
    // Continuation: gaps were handled by push(), so this directly follows the last part.
    append(part);
  } else {
    // The start (or a middle part) is missing: nothing to attach this part to.
    drop_fragment();
  }
  if (end && in_fragment()) end_fragment();
}

void Depacketizer::emit() {
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

void Depacketizer::flush() {
  emit();
}

void Depacketizer::reset() {
  buffer_.clear();
  have_unit_ = false;
  damaged_ = false;
  in_fragment_ = false;
  have_sequence_ = false;
}

void Depacketizer::push(std::uint16_t sequence, std::uint32_t rtp_timestamp, bool marker,
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
    malformed();
  } else {
    on_payload(payload, marker);
  }
  // The marker bit is set on the last packet of an access unit (all three payload formats).
  if (marker) emit();
}

std::unique_ptr<Depacketizer> make_depacketizer(Codec codec, Depacketizer::Callback on_unit) {
  switch (codec) {
    case Codec::kH264:
      return std::make_unique<H264Depacketizer>(std::move(on_unit));
    case Codec::kH265:
      return std::make_unique<H265Depacketizer>(std::move(on_unit));
    case Codec::kVp8:
      return std::make_unique<Vp8Depacketizer>(std::move(on_unit));
    case Codec::kVp9:
      return std::make_unique<Vp9Depacketizer>(std::move(on_unit));
    case Codec::kAv1:
      return std::make_unique<Av1Depacketizer>(std::move(on_unit));
    case Codec::kAac:
    case Codec::kOpus:
    case Codec::kL16:
    case Codec::kL24:
    case Codec::kMp3:
      break;
  }
  return nullptr;
}

}  // namespace predrop::media

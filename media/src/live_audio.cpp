// A live source's audio track (see live_audio.hpp).
#include "live_audio.hpp"

#include <algorithm>

namespace predrop::media::detail {

LiveAudioTrack::LiveAudioTrack(const LiveAudioSpec& spec, std::size_t max_payload,
                               std::size_t max_block_packets)
    : spec_(spec),
      clock_(spec.clock_rate),
      max_payload_(max_payload),
      max_block_packets_(max_block_packets) {}

void LiveAudioTrack::sender_report(std::size_t stream, std::uint64_t ntp,
                                   std::uint32_t rtp_timestamp) {
  if (stream < reports_.size()) reports_[stream] = Report{ntp, rtp_timestamp};
}

void LiveAudioTrack::forget_reports() {
  reports_[0].reset();
  reports_[1].reset();
}

void LiveAudioTrack::clear() {
  bytes_.clear();
  sounds_.clear();
}

// NTP of the packet by the audio's report, then the video tick of that NTP by the video's.
std::optional<std::int64_t> LiveAudioTrack::map_to_video(std::uint32_t timestamp,
                                                         const LiveVideoClock& video) const {
  if (!reports_[0] || !reports_[1]) return std::nullopt;
  const auto ntp_us = [](std::uint64_t ntp) {
    return static_cast<std::int64_t>((ntp >> 32) * 1'000'000 +
                                     (((ntp & 0xffffffffULL) * 1'000'000) >> 32));
  };
  const std::int64_t since_audio_report_us =
      std::int64_t{static_cast<std::int32_t>(timestamp - reports_[1]->rtp)} * 1'000'000 / clock_;
  const std::int64_t after_video_report_us =
      ntp_us(reports_[1]->ntp) - ntp_us(reports_[0]->ntp) + since_audio_report_us;
  const auto video_rtp = static_cast<std::uint32_t>(
      reports_[0]->rtp +
      static_cast<std::uint32_t>(after_video_report_us *
                                 static_cast<std::int64_t>(video.clock_rate) / 1'000'000));
  const std::int64_t ticks =
      video.unwrapped + static_cast<std::int32_t>(video_rtp - video.last_timestamp) - video.origin;
  return ticks * 1'000'000 / static_cast<std::int64_t>(video.clock_rate);
}

// The first packet after the tracks are synchronised fixes where the audio's RTP clock is on
// the video's (through both sender reports); the rest follow their own timestamps, so the audio
// keeps the publisher's exact spacing.
void LiveAudioTrack::push(std::uint32_t timestamp, bool marker,
                          std::span<const std::uint8_t> payload, const LiveVideoClock& video) {
  const bool room = video.block_packets + sounds_.size() + 8 <= max_block_packets_;
  if (clock_ == 0 || payload.empty() || payload.size() > 65535 || !room) {
    ++dropped_;
    return;
  }
  const auto delta = static_cast<std::int32_t>(timestamp - last_);
  if (synced_ && delta != 0) {
    // A jump of the audio clock alone (the publisher restarted it): synchronise again.
    const std::int64_t step = std::int64_t{delta} * 1'000'000 / clock_;
    if (step > kMaxJumpUs || step < -kMaxJumpUs) synced_ = false;
  }
  if (!synced_) {
    auto t_us = map_to_video(timestamp, video);
    by_reports_ = t_us.has_value();
    // Until both reports came: where the pictures that arrived with it are (a real-time
    // publisher sends both tracks at their capture times), corrected when the reports come.
    if (!t_us) t_us = video.arrival_on_timeline_us;
    if (!t_us) {
      ++dropped_;
      return;
    }
    if (*t_us + kMaxJumpUs < video.block_start_us || *t_us > video.block_max_pts_us + kMaxJumpUs) {
      ++dropped_;  // reports that do not fit the video: wait for newer ones
      return;
    }
    unwrapped_ = 0;
    origin_ = -*t_us * static_cast<std::int64_t>(clock_) / 1'000'000;
    last_ = timestamp;
    synced_ = true;
  } else {
    unwrapped_ += delta;
    last_ = timestamp;
    if (!by_reports_) {
      if (const auto t_us = map_to_video(timestamp, video)) {
        // The reports came: where they put this packet against where its arrival did.
        const std::int64_t here_us =
            (unwrapped_ - origin_) * 1'000'000 / static_cast<std::int64_t>(clock_);
        const std::int64_t off = *t_us - here_us;
        report_offset_us_ = off;
        if (off > kKeepWithinUs || off < -kKeepWithinUs) {
          origin_ -= off * static_cast<std::int64_t>(clock_) / 1'000'000;
        }
        by_reports_ = true;
      }
    }
  }
  if (!by_reports_) ++by_arrival_;
  const std::int64_t rel = unwrapped_ - origin_;
  if (payload.size() <= max_payload_) {
    add_sound(rel, marker, payload, {}, video.block_packets);
    return;
  }
  // Too large for the server's packets (FFmpeg puts up to 5 AAC frames in one): split between
  // its access units.
  if (!split_aac(rel, marker, payload, video.block_packets)) ++dropped_;
}

void LiveAudioTrack::add_sound(std::int64_t rel, bool marker, std::span<const std::uint8_t> head,
                               std::span<const std::uint8_t> body, std::size_t video_packets) {
  if (video_packets + sounds_.size() >= max_block_packets_) {
    ++dropped_;  // the block's packet bound holds whatever the publisher sends
    return;
  }
  Sound snd;
  snd.t_us = rel * 1'000'000 / static_cast<std::int64_t>(clock_);
  snd.rtp = static_cast<std::uint32_t>(rel);
  snd.offset = static_cast<std::uint32_t>(bytes_.size());
  snd.size = static_cast<std::uint16_t>(head.size() + body.size());
  snd.marker = marker;
  bytes_.insert(bytes_.end(), head.begin(), head.end());
  bytes_.insert(bytes_.end(), body.begin(), body.end());
  sounds_.push_back(snd);
}

// RFC 3640 §3.2: AU-headers-length (bits), the AU headers (AU-size, then AU-Index for the first
// and AU-Index-delta for the rest), padding to a byte, the access units back to back. Parts of
// whole AUs each fit max_payload; non-zero index deltas (interleaving) are refused.
bool LiveAudioTrack::split_aac(std::int64_t rel, bool marker, std::span<const std::uint8_t> payload,
                               std::size_t video_packets) {
  if (spec_.codec != Codec::kAac || payload.size() < 2) return false;
  const int size_bits = spec_.size_length;
  const int first_bits = size_bits + spec_.index_length;
  const int next_bits = size_bits + spec_.index_delta_length;
  if (size_bits <= 0 || size_bits > 16 || first_bits > 24 || next_bits > 24) return false;
  const std::size_t header_bits = (std::size_t{payload[0]} << 8) | payload[1];
  const std::size_t header_bytes = (header_bits + 7) / 8;
  if (2 + header_bytes > payload.size()) return false;
  const auto bit = [&](std::size_t pos) { return (payload[2 + pos / 8] >> (7 - pos % 8)) & 1U; };
  const auto field = [&](std::size_t pos, int width) {
    std::uint32_t v = 0;
    for (int i = 0; i < width; ++i) {
      v = (v << 1) | bit(pos + static_cast<std::size_t>(i));
    }
    return v;
  };
  aus_.clear();
  std::size_t pos = 0;
  std::size_t data = 2 + header_bytes;
  while (pos < header_bits) {
    const int width = aus_.empty() ? first_bits : next_bits;
    if (pos + static_cast<std::size_t>(width) > header_bits) return false;
    const std::uint32_t size = field(pos, size_bits);
    if (field(pos + static_cast<std::size_t>(size_bits), width - size_bits) != 0) return false;
    if (size == 0 || data + size > payload.size()) return false;
    aus_.push_back(payload.subspan(data, size));
    data += size;
    pos += static_cast<std::size_t>(width);
  }
  // Groups of whole AUs, each with its own headers (the first AU's header is the widest).
  const std::size_t head_room = 2 + (static_cast<std::size_t>(first_bits) + 7) / 8;
  std::size_t i = 0;
  while (i < aus_.size()) {
    std::size_t bytes = aus_[i].size();
    std::size_t end = i + 1;
    std::size_t bits = static_cast<std::size_t>(first_bits);
    while (end < aus_.size() &&
           2 + (bits + static_cast<std::size_t>(next_bits) + 7) / 8 + bytes + aus_[end].size() <=
               max_payload_) {
      bits += static_cast<std::size_t>(next_bits);
      bytes += aus_[end].size();
      ++end;
    }
    if (head_room + aus_[i].size() > max_payload_) return false;
    // The headers: sizes, zero indexes.
    head_.assign(2 + (bits + 7) / 8, 0);
    head_[0] = static_cast<std::uint8_t>(bits >> 8);
    head_[1] = static_cast<std::uint8_t>(bits);
    std::size_t at = 0;
    for (std::size_t k = i; k < end; ++k) {
      const int width = k == i ? first_bits : next_bits;
      for (int b = 0; b < size_bits; ++b) {
        if (((aus_[k].size() >> (size_bits - 1 - b)) & 1U) != 0) {
          head_[2 + (at + static_cast<std::size_t>(b)) / 8] |=
              static_cast<std::uint8_t>(0x80U >> ((at + static_cast<std::size_t>(b)) % 8));
        }
      }
      at += static_cast<std::size_t>(width);
    }
    body_.clear();
    for (std::size_t k = i; k < end; ++k) {
      body_.insert(body_.end(), aus_[k].begin(), aus_[k].end());
    }
    add_sound(rel + static_cast<std::int64_t>(i) * kAacFrameSamples, marker && end == aus_.size(),
              head_, body_, video_packets);
    i = end;
  }
  return true;
}

void LiveAudioTrack::cut(std::int64_t next_start_us, bool last, std::int64_t start_us,
                         std::int64_t duration_us, std::uint32_t first_frame,
                         std::vector<std::uint8_t>& arena, std::vector<RtpPacket>& packets) {
  // In timestamp order (a late packet after one carried over a cut goes before it).
  std::stable_sort(sounds_.begin(), sounds_.end(),
                   [](const Sound& a, const Sound& b) { return a.t_us < b.t_us; });
  carry_.clear();
  later_.clear();
  std::uint32_t frame = first_frame;
  std::int64_t offset = 0;
  for (const Sound& snd : sounds_) {
    const auto from = bytes_.begin() + snd.offset;
    if (!last && snd.t_us >= next_start_us) {
      // Ahead of the cut (sent before the key frame that cuts): the next block's.
      Sound moved = snd;
      moved.offset = static_cast<std::uint32_t>(carry_.size());
      carry_.insert(carry_.end(), from, from + snd.size);
      later_.push_back(moved);
      continue;
    }
    // At its own time (a file's audio frames are sent at theirs too), never discarded, never
    // before the one ahead of it: the merge into send order keeps audio in its order.
    offset = std::max(offset, std::clamp(snd.t_us - start_us, std::int64_t{0}, duration_us - 1));
    RtpPacket p;
    p.payload_offset = arena.size();
    p.payload_size = snd.size;
    p.send_offset_us = offset;
    p.rtp_timestamp = snd.rtp;
    p.frame = frame++;
    p.stream = 1;
    p.importance = kImportanceNever;
    p.frame_type = FrameType::kAudio;
    p.marker = snd.marker;
    packets.push_back(p);
    arena.insert(arena.end(), from, from + snd.size);
  }
  sounds_.swap(later_);
  bytes_.swap(carry_);
}

}  // namespace predrop::media::detail

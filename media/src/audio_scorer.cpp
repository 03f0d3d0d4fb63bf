// The audio score (audio_scorer.hpp): received payloads are kept per reference frame (matched by
// RTP timestamp); a block is scored by decoding its reference frames and its received frames in
// order and comparing the samples.
#include "predrop/media/audio_scorer.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "audio_frame_decoder.hpp"

namespace predrop::media {

double audio_psnr_from_mse(double mse, double cap_db) {
  if (!(mse > 0.0)) return cap_db;
  return std::min(cap_db, 10.0 * std::log10(1.0 / mse));
}

struct AudioScorer::Impl {
  std::shared_ptr<const MediaFile> file;
  std::uint8_t stream = 0;
  std::size_t header_bytes = 0;
  std::unique_ptr<detail::AudioFrameDecoder> reference_decoder;
  std::unique_ptr<detail::AudioFrameDecoder> received_decoder;
  // Audio frames by RTP timestamp: (timestamp, index in MediaFile::frames()).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> by_timestamp;
  // Per frame of the file (audio frames only used): where its received bytes go, how many came.
  std::vector<std::uint64_t> slot;
  std::vector<std::uint32_t> received;
  std::vector<std::uint8_t> buffer;
  std::uint32_t next_block = 0;
  AudioScoreStats stats;
  // Scratch, reused.
  std::vector<std::uint8_t> unit;
  std::vector<float> want;
  std::vector<float> got;

  // A frame's bytes (its packets' payloads as sent or received) without the payload headers.
  void strip(const Frame& f, std::span<const std::uint8_t> bytes) {
    unit.clear();
    std::size_t at = 0;
    for (std::uint32_t i = 0; i < f.packet_count; ++i) {
      const std::size_t size = file->packets()[f.first_packet + i].payload_size;
      if (at + size > bytes.size()) break;
      if (size > header_bytes) {
        unit.insert(unit.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at + header_bytes),
                    bytes.begin() + static_cast<std::ptrdiff_t>(at + size));
      }
      at += size;
    }
  }

  std::span<const std::uint8_t> reference_bytes(const Frame& f) const {
    const RtpPacket& first = file->packets()[f.first_packet];
    return file->arena().subspan(first.payload_offset, f.bytes);
  }
};

AudioScorer::AudioScorer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AudioScorer::~AudioScorer() = default;

core::Result<std::unique_ptr<AudioScorer>> AudioScorer::create(
    std::shared_ptr<const MediaFile> reference) {
  if (!reference || !reference->audio_stream()) {
    return core::make_error("the reference has no audio stream");
  }
  auto impl = std::make_unique<Impl>();
  impl->stream = *reference->audio_stream();
  const StreamInfo& info = reference->streams()[impl->stream];
  impl->header_bytes = detail::audio_payload_header_bytes(info.codec);
  for (auto* decoder : {&impl->reference_decoder, &impl->received_decoder}) {
    auto made = detail::make_audio_frame_decoder(info);
    if (!made) return made.error();
    *decoder = std::move(made.value());
  }
  const auto frames = reference->frames();
  impl->slot.assign(frames.size(), 0);
  impl->received.assign(frames.size(), 0);
  std::uint64_t total = 0;
  for (std::uint32_t i = 0; i < frames.size(); ++i) {
    if (frames[i].stream != impl->stream) continue;
    // A frame's packets are contiguous in the arena (packetized together).
    impl->by_timestamp.emplace_back(frames[i].rtp_timestamp, i);
    impl->slot[i] = total;
    total += frames[i].bytes;
  }
  std::stable_sort(impl->by_timestamp.begin(), impl->by_timestamp.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  impl->buffer.assign(total, 0);
  impl->file = std::move(reference);
  return std::unique_ptr<AudioScorer>(new AudioScorer(std::move(impl)));
}

void AudioScorer::push(std::uint32_t media_timestamp, std::span<const std::uint8_t> payload) {
  Impl& s = *impl_;
  ++s.stats.packets;
  const auto it = std::lower_bound(s.by_timestamp.begin(), s.by_timestamp.end(), media_timestamp,
                                   [](const std::pair<std::uint32_t, std::uint32_t>& e,
                                      std::uint32_t ts) { return e.first < ts; });
  if (it == s.by_timestamp.end() || it->first != media_timestamp) {
    ++s.stats.unmatched;
    return;
  }
  const std::uint32_t frame = it->second;
  const Frame& f = s.file->frames()[frame];
  std::uint32_t& have = s.received[frame];
  if (payload.size() > f.bytes - have) {
    ++s.stats.unmatched;  // a duplicate, or not this frame's packet
    return;
  }
  std::copy(payload.begin(), payload.end(),
            s.buffer.begin() + static_cast<std::ptrdiff_t>(s.slot[frame] + have));
  have += static_cast<std::uint32_t>(payload.size());
}

std::optional<double> AudioScorer::psnr(std::uint32_t block, double cap_db) {
  Impl& s = *impl_;
  const auto blocks = s.file->blocks();
  if (block >= blocks.size()) return std::nullopt;
  if (block < s.next_block) {
    s.reference_decoder->reset();
    s.received_decoder->reset();
    s.next_block = 0;
  }
  // Coded audio carries state from frame to frame: decode the blocks skipped so far, unscored.
  double sum = 0.0;
  std::uint64_t samples = 0;
  for (std::uint32_t k = s.next_block; k <= block; ++k) {
    const Block& b = blocks[k];
    sum = 0.0;
    samples = 0;
    for (std::uint32_t i = b.first_frame; i < b.first_frame + b.frame_count; ++i) {
      const Frame& f = s.file->frames()[i];
      if (f.stream != s.stream) continue;
      s.want.clear();
      s.strip(f, s.reference_bytes(f));
      s.reference_decoder->decode(s.unit, s.want);
      s.got.clear();
      const bool whole = s.received[i] == f.bytes;
      if (whole) {
        s.strip(f, std::span<const std::uint8_t>(s.buffer).subspan(s.slot[i], f.bytes));
        s.received_decoder->decode(s.unit, s.got);
      }
      if (k == block) {
        ++s.stats.frames;
        s.stats.missing_frames += whole ? 0 : 1;
      }
      for (std::size_t n = 0; n < s.want.size(); ++n) {
        const double d = double{s.want[n]} - (n < s.got.size() ? double{s.got[n]} : 0.0);
        sum += d * d;
      }
      samples += s.want.size();
    }
  }
  s.next_block = block + 1;
  if (samples == 0) return std::nullopt;
  return audio_psnr_from_mse(sum / static_cast<double>(samples), cap_db);
}

const AudioScoreStats& AudioScorer::stats() const {
  return impl_->stats;
}

}  // namespace predrop::media

// The measuring client's audio score; see audio_scoring.hpp.
#include "audio_scoring.hpp"

#include <utility>

#include "predrop/core/log.hpp"

namespace predrop::client {

core::Result<std::unique_ptr<AudioScoring>> AudioScoring::create(
    std::shared_ptr<const media::MediaFile> reference, Role role) {
  const auto stream = reference->audio_stream();
  if (!stream) return core::make_error("the reference has no audio stream");
  auto made = media::AudioScorer::create(std::move(reference));
  if (!made) return made.error();
  return std::unique_ptr<AudioScoring>(new AudioScoring(std::move(made.value()), role, *stream));
}

std::optional<double> AudioScoring::psnr(std::uint32_t stage, double cap_db) {
  const auto score = scorer_->psnr(stage, cap_db);
  if (score) {
    psnr_sum_ += *score;
    ++scores_;
  }
  return score;
}

void AudioScoring::log_stats() const {
  const auto& as = scorer_->stats();
  core::log(core::LogLevel::kInfo, "client",
            "audio: %llu packets, %llu unmatched; %llu frames scored, %llu missing",
            (unsigned long long)as.packets, (unsigned long long)as.unmatched,
            (unsigned long long)as.frames, (unsigned long long)as.missing_frames);
}

}  // namespace predrop::client

#pragma once
// Private to client/src: the measuring client's audio score (docs/media.md "Audio score"): the
// received audio track against the reference's audio stream, block by block
// (media::AudioScorer). A stream without video is scored on its audio alone: that score is P,
// fed back to the server (Role::kAlone). With video, P is the video's PSNR and the audio is
// scored beside it when the reference has an audio stream this client decodes (Role::kBeside):
// reported per block and as a mean at the end, never fed back.
// Threading: the client's loop thread.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "predrop/core/result.hpp"
#include "predrop/media/audio_scorer.hpp"
#include "predrop/media/media_file.hpp"

namespace predrop::client {

/// Scores the stream's audio track against the reference's audio stream.
class AudioScoring {
 public:
  /// Whether the audio is the stream's only score or a second one beside the video's.
  enum class Role { kAlone, kBeside };

  /// Fails when `reference` has no audio stream or its codec cannot be decoded here.
  static core::Result<std::unique_ptr<AudioScoring>> create(
      std::shared_ptr<const media::MediaFile> reference, Role role);

  bool alone() const { return role_ == Role::kAlone; }
  bool beside() const { return role_ == Role::kBeside; }
  /// The reference's audio stream (its packets anchor the track's media time).
  std::uint8_t stream() const { return stream_; }

  /// One RTP payload of the audio track; `media_timestamp` is its timestamp minus the track's
  /// base.
  void push(std::uint32_t media_timestamp, std::span<const std::uint8_t> payload) {
    scorer_->push(media_timestamp, payload);
  }
  /// Block `stage`'s score in dB (capped at `cap_db`), counted into the mean; nullopt when the
  /// block has no audio.
  std::optional<double> psnr(std::uint32_t stage, double cap_db);
  /// The mean of the scores given so far (0 when none).
  double mean_psnr_db() const { return scores_ != 0 ? psnr_sum_ / scores_ : 0.0; }
  /// Logs the scorer's counters (at the end of a run).
  void log_stats() const;

 private:
  AudioScoring(std::unique_ptr<media::AudioScorer> scorer, Role role, std::uint8_t stream)
      : scorer_(std::move(scorer)), role_(role), stream_(stream) {}

  std::unique_ptr<media::AudioScorer> scorer_;
  Role role_;
  std::uint8_t stream_;
  double psnr_sum_ = 0.0;
  std::uint32_t scores_ = 0;
};

}  // namespace predrop::client

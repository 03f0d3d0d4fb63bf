#pragma once
// The audio score of the measuring client (issue 24): what a listener hears against what the
// file holds, per block, as the PSNR of the PCM. Each audio frame of the reference file is decoded
// (L16/L24: the samples themselves) to float samples in [-1, 1); the frame received with the same
// RTP timestamp is decoded the same way, in order, with a frame that did not arrive whole skipped
// (a decoder sees the gap, as a player's would) and heard as silence. A block's score is
// 10·log10(1 / MSE) over every sample of its audio frames: full scale is 1, so a lost 20 ms of a
// -6 dBFS sine in a 1 s block scores about 29 dB; identical samples score the cap (60 dB by
// default, the video PSNR's cap, so that one report column means "intact" at one value).
// docs/media.md "Audio score" says why this measure.
//
// Threading: one instance per stream, one thread. Allocation: one receive buffer as large as the
// reference's audio payloads, made at create(); push() allocates nothing.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "predrop/core/result.hpp"
#include "predrop/media/media_file.hpp"

namespace predrop::media {

/// Counters, for logs and tests.
struct AudioScoreStats {
  std::uint64_t packets = 0;
  /// Packets with no reference frame at their timestamp, or more bytes than their frame has.
  std::uint64_t unmatched = 0;
  /// Frames scored, and of those the ones that did not arrive whole (heard as silence).
  std::uint64_t frames = 0;
  std::uint64_t missing_frames = 0;
};

/// Scores the received audio of a MediaFile's audio stream against the file, block by block.
class AudioScorer {
 public:
  /// Fails when `reference` has no audio stream or its codec cannot be decoded here.
  static core::Result<std::unique_ptr<AudioScorer>> create(
      std::shared_ptr<const MediaFile> reference);
  ~AudioScorer();
  AudioScorer(const AudioScorer&) = delete;
  AudioScorer& operator=(const AudioScorer&) = delete;

  /// One received RTP payload of the audio stream; `media_timestamp` is its RTP timestamp minus
  /// the stream's base (the reference packet's timestamp when nothing is shifted).
  void push(std::uint32_t media_timestamp, std::span<const std::uint8_t> payload);
  /// The score of block `block` in dB (capped at `cap_db`), or std::nullopt when the block has no
  /// audio. Blocks are expected in order; an earlier one restarts the decoders from the start.
  std::optional<double> psnr(std::uint32_t block, double cap_db);
  const AudioScoreStats& stats() const;

 private:
  struct Impl;
  explicit AudioScorer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// 10·log10(1 / mse) for samples of full scale 1, capped at `cap_db` (mse 0 scores the cap).
double audio_psnr_from_mse(double mse, double cap_db);

}  // namespace predrop::media

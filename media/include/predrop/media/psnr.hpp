#pragma once
// PSNR exactly as FFmpeg's vf_psnr computes it (libavfilter/vf_psnr.c), so our figures agree with
// `ffmpeg -lavfi psnr`:
//   - MSE per plane = sum of squared differences / (plane width x plane height);
//   - frame MSE = sum over planes of plane MSE x plane area / total area (Y counts 4/6 in 4:2:0);
//   - PSNR of several frames = 10 log10(255^2 / mean of the frame MSEs): the PSNR of the mean MSE,
//     not the mean of per-frame PSNRs.
// vf_psnr reports +inf for identical pictures; a control rule needs a finite number, so PSNR is
// capped. The default cap is 60 dB, libvmaf's cap for 8-bit PSNR (6 x bitdepth + 12 dB): encoded
// video that arrived intact scores exactly the cap, and any real loss scores well below it.
//
// Threading: free functions are pure; a ShownFrameScorer is used from one thread.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/media/video_frame.hpp"

namespace predrop::media {

class ReferenceDecoder;

/// Default PSNR cap, in dB (libvmaf's 8-bit cap).
inline constexpr double kDefaultPsnrCapDb = 60.0;

/// vf_psnr's area-weighted MSE of two pictures of the same size; an error if the sizes differ.
core::Result<double> frame_mse(const FrameView& a, const FrameView& b);
/// 10 log10(255^2 / mse), at most `cap_db` (also for mse == 0).
double psnr_from_mse(double mse, double cap_db = kDefaultPsnrCapDb);

/// Sums frame MSEs; psnr() is the PSNR of their mean (vf_psnr's "average").
class MseAccumulator {
 public:
  void add(double mse) {
    sum_ += mse;
    ++count_;
  }
  std::size_t count() const { return count_; }
  /// The mean MSE (0 if nothing was added).
  double mean() const { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }
  /// PSNR of the mean MSE, capped; the cap if nothing was added.
  double psnr(double cap_db = kDefaultPsnrCapDb) const { return psnr_from_mse(mean(), cap_db); }

 private:
  double sum_ = 0.0;
  std::size_t count_ = 0;
};

/// Scores what a receiver shows against the reference, frame by display index. A display index
/// that never arrived counts as the last shown picture repeated (what a player shows); before
/// anything was shown, as a black picture. Keeps one picture (the last shown) plus 8 bytes per
/// scored index.
class ShownFrameScorer {
 public:
  /// Borrows `reference`, which must outlive the scorer.
  explicit ShownFrameScorer(ReferenceDecoder& reference);

  /// The receiver decoded `frame` for display index `index`. Indices between the last shown one
  /// and this one are scored as the last shown picture first. An index at or before the last
  /// shown one is ignored (a player does not go back) and counted in late().
  core::Status show(std::size_t index, const FrameView& frame);
  /// Scores every index below `end` not yet scored as the last shown picture repeated (call when
  /// a block's time is over, before asking for its PSNR).
  core::Status fill_until(std::size_t end);
  /// MSE recorded for display index `index` (must be below scored_until()).
  double mse(std::size_t index) const { return mse_[index]; }
  /// Number of leading display indices scored so far.
  std::size_t scored_until() const { return mse_.size(); }
  /// PSNR of the mean MSE of display indices [first, first + count), capped; an error if any of
  /// them is not scored yet.
  core::Result<double> psnr(std::size_t first, std::size_t count,
                            double cap_db = kDefaultPsnrCapDb) const;
  /// Frames given to show() too late to be shown.
  std::size_t late() const { return late_; }
  /// Frames given to show() whose size differs from the reference (scored as not shown).
  std::size_t mismatched() const { return mismatched_; }

 private:
  core::Status score_repeat_until(std::size_t end);

  ReferenceDecoder& reference_;
  YuvFrame last_shown_;
  std::vector<double> mse_;
  std::size_t late_ = 0;
  std::size_t mismatched_ = 0;
};

}  // namespace predrop::media

#include "predrop/media/psnr.hpp"

#include <algorithm>
#include <cmath>

#include "predrop/media/video_decoder.hpp"

namespace predrop::media {

core::Result<double> frame_mse(const FrameView& a, const FrameView& b) {
  if (a.width != b.width || a.height != b.height || a.width <= 0 || a.height <= 0) {
    return core::make_error("picture sizes differ: " + std::to_string(a.width) + "x" +
                            std::to_string(a.height) + " vs " + std::to_string(b.width) + "x" +
                            std::to_string(b.height));
  }
  // vf_psnr: per-plane MSE, then weighted by each plane's share of the total sample count.
  double plane_mse[3];
  double area[3];
  double total_area = 0.0;
  for (int p = 0; p < 3; ++p) {
    const int w = a.plane_width(p);
    const int h = a.plane_height(p);
    std::uint64_t sse = 0;
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* ra = a.data[p] + static_cast<std::ptrdiff_t>(y) * a.stride[p];
      const std::uint8_t* rb = b.data[p] + static_cast<std::ptrdiff_t>(y) * b.stride[p];
      std::uint64_t line = 0;  // 640 x 255^2 fits easily; summed per line as vf_psnr does
      for (int x = 0; x < w; ++x) {
        const int d = int{ra[x]} - int{rb[x]};
        line += static_cast<std::uint64_t>(d * d);
      }
      sse += line;
    }
    area[p] = static_cast<double>(w) * static_cast<double>(h);
    plane_mse[p] = static_cast<double>(sse) / area[p];
    total_area += area[p];
  }
  double mse = 0.0;
  for (int p = 0; p < 3; ++p) {
    mse += plane_mse[p] * (area[p] / total_area);
  }
  return mse;
}

double psnr_from_mse(double mse, double cap_db) {
  if (!(mse > 0.0)) return cap_db;
  return std::min(cap_db, 10.0 * std::log10(255.0 * 255.0 / mse));
}

ShownFrameScorer::ShownFrameScorer(ReferenceDecoder& reference) : reference_(reference) {
  mse_.reserve(reference.frame_count());
}

core::Status ShownFrameScorer::score_repeat_until(std::size_t end) {
  end = std::min(end, reference_.frame_count());
  while (mse_.size() < end) {
    auto ref = reference_.frame(mse_.size());
    if (!ref) return ref.error();
    if (last_shown_.empty()) {
      // Nothing shown yet: the player shows black (Y 16, U/V 128 in limited range).
      last_shown_ = YuvFrame(ref->width, ref->height, 16, 128, 128);
    }
    auto mse = frame_mse(last_shown_.view(), *ref);
    if (!mse) return mse.error();
    mse_.push_back(*mse);
  }
  return core::Ok{};
}

core::Status ShownFrameScorer::show(std::size_t index, const FrameView& frame) {
  if (index < mse_.size()) {
    ++late_;
    return core::Ok{};
  }
  if (index >= reference_.frame_count()) {
    return core::make_error("display index " + std::to_string(index) + " beyond the reference");
  }
  if (auto ok = score_repeat_until(index); !ok) return ok;
  auto ref = reference_.frame(index);
  if (!ref) return ref.error();
  auto mse = frame_mse(frame, *ref);
  if (!mse) {
    // A picture of the wrong size cannot be shown in place of this one: score the repeat.
    ++mismatched_;
    return score_repeat_until(index + 1);
  }
  mse_.push_back(*mse);
  last_shown_.assign(frame);
  return core::Ok{};
}

core::Status ShownFrameScorer::fill_until(std::size_t end) {
  return score_repeat_until(end);
}

core::Result<double> ShownFrameScorer::psnr(std::size_t first, std::size_t count,
                                            double cap_db) const {
  if (first + count > mse_.size()) {
    return core::make_error("display indices up to " + std::to_string(first + count) +
                            " are not all scored yet (" + std::to_string(mse_.size()) + ")");
  }
  MseAccumulator acc;
  for (std::size_t i = first; i < first + count; ++i) {
    acc.add(mse_[i]);
  }
  return acc.psnr(cap_db);
}

}  // namespace predrop::media

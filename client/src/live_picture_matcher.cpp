// Matching a live stream's pictures to the reference's (see live_picture_matcher.hpp).
#include "live_picture_matcher.hpp"

#include <algorithm>

#include "predrop/media/psnr.hpp"

namespace predrop::client {

std::optional<std::size_t> LivePictureMatcher::match(const media::FrameView& f) {
  if (!anchor_pts_) {
    const auto found = find_by_content(f);
    if (!found) {
      ++unanchored_;  // a damaged picture: the next one is tried
      return std::nullopt;
    }
    anchor_pts_ = f.pts;
    anchor_index_ = *found;
  }
  const std::size_t index = index_at(f.pts);
  last_shown_ = std::max(last_shown_, index);
  return index;
}

// Over the whole reference: the stream may start anywhere in it.
std::optional<std::size_t> LivePictureMatcher::find_by_content(const media::FrameView& f) {
  std::optional<std::size_t> best;
  double best_mse = 0;
  for (std::size_t i = 0; i < reference_.count(); ++i) {
    auto ref = reference_.picture(i);
    if (!ref) continue;
    auto mse = media::frame_mse(f, *ref);
    if (!mse) continue;
    if (!best || *mse < best_mse) {
      best = i;
      best_mse = *mse;
      if (*mse == 0) break;
    }
  }
  if (!best || media::psnr_from_mse(best_mse, 100) < kAnchorMinPsnrDb) return std::nullopt;
  return best;
}

// The anchor's presentation time plus the time since it, to the nearest reference picture.
std::size_t LivePictureMatcher::index_at(std::int64_t pts) const {
  const std::int64_t want =
      reference_.pts_us(anchor_index_) + (pts - anchor_pts_.value_or(pts)) * 1'000'000 / kClockRate;
  const std::size_t count = reference_.count();
  std::size_t lo = 0;
  std::size_t hi = count;
  while (lo < hi) {  // the first index at or after `want`
    const std::size_t mid = (lo + hi) / 2;
    if (reference_.pts_us(mid) < want) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == count) return lo == 0 ? 0 : lo - 1;
  if (lo > 0 && want - reference_.pts_us(lo - 1) < reference_.pts_us(lo) - want) return lo - 1;
  return lo;
}

}  // namespace predrop::client

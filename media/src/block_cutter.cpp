// Frame order and block cuts (see block_cutter.hpp).
#include "block_cutter.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace predrop::media::detail {

namespace {
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
}  // namespace

std::vector<std::uint32_t> order_frames(std::vector<StagedFrame>& video,
                                        std::vector<StagedFrame>& audio, const Warn& warn) {
  const std::size_t n = video.size();
  std::vector<std::uint32_t> by_pts(n);
  std::iota(by_pts.begin(), by_pts.end(), 0u);
  std::stable_sort(by_pts.begin(), by_pts.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return video[a].pts < video[b].pts; });
  std::vector<std::uint32_t> display_of(n, 0);
  for (std::uint32_t d = 0; d < n; ++d) {
    display_of[by_pts[d]] = d;
    if (d > 0 && video[by_pts[d]].pts == video[by_pts[d - 1]].pts) {
      warn("two video frames share pts " + std::to_string(video[by_pts[d]].pts));
    }
  }
  // The i-th frame in decode order is sent at the i-th presentation time: a monotonic send
  // clock with the stream's constant reordering delay removed, without trusting container DTS.
  for (std::uint32_t i = 0; i < n; ++i) {
    video[i].send_us = video[by_pts[i]].frame.pts_us;
  }
  std::stable_sort(audio.begin(), audio.end(),
                   [](const StagedFrame& a, const StagedFrame& b) { return a.pts < b.pts; });
  for (auto& a : audio) {
    a.send_us = a.frame.pts_us;
  }
  return display_of;
}

BlockCuts cut_blocks(std::vector<StagedFrame>& video, std::vector<StagedFrame>& audio,
                     const BlockSize& block) {
  BlockCuts out;
  // The primary track decides where blocks may end: video if present, else audio.
  std::vector<StagedFrame>& primary = video.empty() ? audio : video;
  std::vector<StagedFrame>* secondary = video.empty() ? nullptr : &audio;
  const std::size_t n = primary.size();

  // cut_time[i]: earliest pts (µs) among primary frames [i, n); a cut before i is clean when
  // every frame before it is presented earlier than that.
  std::vector<std::int64_t> cut_time(n + 1, std::numeric_limits<std::int64_t>::max());
  for (std::size_t i = n; i-- > 0;) {
    cut_time[i] = std::min(cut_time[i + 1], primary[i].frame.pts_us);
  }
  std::vector<bool> clean(n + 1, false);
  std::int64_t prefix_max = std::numeric_limits<std::int64_t>::min();
  for (std::size_t i = 1; i < n; ++i) {
    prefix_max = std::max(prefix_max, primary[i - 1].frame.pts_us);
    clean[i] = prefix_max < cut_time[i];
  }
  for (const auto* track : {&video, &audio}) {
    for (const auto& f : *track) {
      out.end_us =
          std::max(out.end_us, f.frame.pts_us + std::max<std::int64_t>(f.frame.duration_us, 0));
    }
  }

  // Audio bytes with pts before a time, for byte-sized blocks.
  std::vector<std::uint64_t> audio_prefix(1, 0);
  if (secondary) {
    for (const auto& a : *secondary) {
      audio_prefix.push_back(audio_prefix.back() + a.frame.bytes);
    }
  }
  auto audio_bytes_before = [&](std::int64_t t) -> std::uint64_t {
    if (!secondary) return 0;
    auto it =
        std::lower_bound(secondary->begin(), secondary->end(), t,
                         [](const StagedFrame& a, std::int64_t v) { return a.frame.pts_us < v; });
    return audio_prefix[static_cast<std::size_t>(it - secondary->begin())];
  };

  const std::int64_t start0 = cut_time[0];
  out.cuts.assign(1, 0);
  out.start_us.assign(1, start0);
  const std::uint64_t size = block.value;
  if (block.unit == BlockSize::Unit::kDuration) {
    // Nominal boundaries sit on the k x d grid from the origin; each cut is the first clean
    // point at or after one, so cuts never drift (an early frame, such as an AAC priming frame
    // before the origin, just joins the first block).
    const auto d = static_cast<std::int64_t>(size);
    std::int64_t next_end = std::max(d, (floor_div(start0, d) + 1) * d);
    for (std::size_t i = 1; i < n; ++i) {
      if (!clean[i] || cut_time[i] < next_end) continue;
      out.cuts.push_back(static_cast<std::uint32_t>(i));
      out.start_us.push_back(cut_time[i]);
      next_end = (floor_div(cut_time[i], d) + 1) * d;
    }
  } else {
    std::uint64_t primary_bytes = 0;
    std::uint64_t audio_at_start = audio_bytes_before(std::numeric_limits<std::int64_t>::min());
    for (std::size_t i = 1; i < n; ++i) {
      primary_bytes += primary[i - 1].frame.bytes;
      if (!clean[i]) continue;
      const std::uint64_t audio_now = audio_bytes_before(cut_time[i]);
      if (primary_bytes + (audio_now - audio_at_start) < size) continue;
      out.cuts.push_back(static_cast<std::uint32_t>(i));
      out.start_us.push_back(cut_time[i]);
      primary_bytes = 0;
      audio_at_start = audio_now;
    }
  }
  out.cuts.push_back(static_cast<std::uint32_t>(n));

  for (std::uint32_t k = 0; k + 1 < out.cuts.size(); ++k) {
    for (std::uint32_t i = out.cuts[k]; i < out.cuts[k + 1]; ++i) {
      primary[i].frame.block = k;
    }
  }
  if (secondary) {
    for (auto& a : *secondary) {
      auto it = std::upper_bound(out.start_us.begin(), out.start_us.end(), a.frame.pts_us);
      a.frame.block = it == out.start_us.begin()
                          ? 0
                          : static_cast<std::uint32_t>(it - out.start_us.begin() - 1);
    }
  }
  out.end_us = std::max(out.end_us, out.start_us.back() + 1);
  return out;
}

}  // namespace predrop::media::detail

// Frame importance for priority discard (see importance.hpp).
#include "importance.hpp"

#include <algorithm>
#include <numeric>

namespace predrop::media::detail {

std::vector<std::uint32_t> bit_reversed_ranks(std::uint32_t m) {
  unsigned bits = 0;
  while ((std::uint64_t{1} << bits) < m) {
    ++bits;
  }
  auto reverse = [bits](std::uint32_t v) {
    std::uint32_t r = 0;
    for (unsigned b = 0; b < bits; ++b) {
      r |= ((v >> b) & 1u) << (bits - 1 - b);
    }
    return r;
  };
  std::vector<std::uint32_t> order(m);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(),
            [&](std::uint32_t a, std::uint32_t b) { return reverse(a) < reverse(b); });
  std::vector<std::uint32_t> rank(m);
  for (std::uint32_t p = 0; p < m; ++p) {
    rank[order[p]] = p;
  }
  return rank;
}

void assign_importance(std::vector<StagedFrame>& video, std::vector<StagedFrame>& audio,
                       const std::vector<std::uint32_t>& display_of, std::uint32_t blocks) {
  for (auto& a : audio) {
    a.frame.importance = kImportanceNever;
  }
  // Reference frames: later in the GOP means fewer frames depend on it, so lower importance.
  std::uint32_t since_key = 0;
  for (auto& v : video) {
    if (v.frame.type == FrameType::kKey) {
      v.frame.importance = kImportanceKey;
      since_key = 0;
    } else if (v.frame.reference) {
      ++since_key;
      // A reference picture of temporal sub-layer t > 0 (H.265; VP8's golden-only refreshes, see
      // vp8_packetizer.hpp) is referenced only by pictures of layers >= t, so whole upper layers
      // go before the base layer's references.
      const std::int64_t layer_step = std::int64_t{kTemporalLayerStep} * v.frame.temporal_id;
      v.frame.importance = static_cast<std::uint8_t>(std::max<std::int64_t>(
          kImportanceReferenceMin, std::int64_t{kImportanceKey} - since_key - layer_step));
    }
  }
  // Disposable frames: per block, in display order, ranked in bit-reversed order.
  std::vector<std::vector<std::uint32_t>> disposable(blocks);
  for (std::uint32_t i = 0; i < video.size(); ++i) {
    if (!video[i].frame.reference) disposable[video[i].frame.block].push_back(i);
  }
  std::vector<std::uint32_t> order;
  for (auto& list : disposable) {
    // Highest temporal sub-layer first (H.265 TemporalId; 0 for H.264 and for VP8's disposable
    // frames, whose layer the bitstream does not say); within a layer, in display order, ranked
    // in bit-reversed order.
    std::sort(list.begin(), list.end(), [&](std::uint32_t a, std::uint32_t b) {
      if (video[a].frame.temporal_id != video[b].frame.temporal_id) {
        return video[a].frame.temporal_id > video[b].frame.temporal_id;
      }
      return display_of[a] < display_of[b];
    });
    order.clear();  // order[p]: index into list of the p-th disposable frame to go
    for (std::size_t begin = 0; begin < list.size();) {
      std::size_t end = begin + 1;
      while (end < list.size() &&
             video[list[end]].frame.temporal_id == video[list[begin]].frame.temporal_id) {
        ++end;
      }
      const auto layer = bit_reversed_ranks(static_cast<std::uint32_t>(end - begin));
      std::vector<std::uint32_t> by_rank(layer.size());
      for (std::uint32_t j = 0; j < layer.size(); ++j) {
        by_rank[layer[j]] = static_cast<std::uint32_t>(begin) + j;
      }
      order.insert(order.end(), by_rank.begin(), by_rank.end());
      begin = end;
    }
    const auto m = static_cast<std::uint32_t>(list.size());
    const std::uint32_t levels = kImportanceDisposableMax + 1;
    for (std::uint32_t p = 0; p < m; ++p) {
      const std::uint64_t level = m <= levels ? p : std::uint64_t{p} * levels / m;
      video[list[order[p]]].frame.importance = static_cast<std::uint8_t>(level);
    }
  }
}

}  // namespace predrop::media::detail

#pragma once
// Private to media/src: frame order and block cuts — the stages of streaming mode
// (docs/design.md §1). Video is sent in decode order at presentation times; cuts fall only where
// every frame before the cut is presented before every frame after it, so a block shows a
// contiguous run of pictures and a frame never straddles two blocks.
#include <cstdint>
#include <vector>

#include "staging.hpp"

namespace predrop::media::detail {

/// Gives every frame its send time and returns each video frame's display index (decode
/// position -> presentation position). Sorts `audio` by pts. Warns about duplicate video pts.
std::vector<std::uint32_t> order_frames(std::vector<StagedFrame>& video,
                                        std::vector<StagedFrame>& audio, const Warn& warn);

/// Where the blocks are.
struct BlockCuts {
  /// Primary-track positions (video if any, else audio) where blocks start, then the end.
  std::vector<std::uint32_t> cuts;
  /// Media time of each block's start, µs from the origin.
  std::vector<std::int64_t> start_us;
  /// End of the last frame, µs from the origin (> the last block's start).
  std::int64_t end_us = 0;
};

/// Cuts the frames into blocks of `size` (duration: at the first clean point at or after each
/// multiple of the duration, no drift; bytes: once a block holds at least the budget) and sets
/// every frame's `frame.block`. Audio frames go to the block whose time range covers their pts.
BlockCuts cut_blocks(std::vector<StagedFrame>& video, std::vector<StagedFrame>& audio,
                     const BlockSize& size);

}  // namespace predrop::media::detail

#pragma once
// Private to media/src: per-frame importance for the priority discard policy (docs/design.md §3):
// audio (and, per packet, SPS/PPS) never; keyframes highest; reference frames by GOP position
// (later = fewer dependants = lower); disposable frames lowest, in bit-reversed display order
// within their block so that dropping the lowest first thins a block out evenly. With temporal
// sub-layers (H.265 TemporalId, AV1 temporal_id) the disposable frames of the highest layer go
// first, and reference frames of a layer t > 0 sit kTemporalLayerStep x t below the base layer's.
#include <cstdint>
#include <vector>

#include "staging.hpp"

namespace predrop::media::detail {

/// How far each temporal sub-layer above 0 lowers a reference frame's importance.
inline constexpr std::uint8_t kTemporalLayerStep = 32;

/// Sets `frame.importance` of every frame; needs frame.block and the display order.
void assign_importance(std::vector<StagedFrame>& video, std::vector<StagedFrame>& audio,
                       const std::vector<std::uint32_t>& display_of, std::uint32_t blocks);

/// The position of `j` in the drop order of `m` disposable frames: ascending bit-reversed j
/// (over the next power of two) — van der Corput order.
std::vector<std::uint32_t> bit_reversed_ranks(std::uint32_t m);

}  // namespace predrop::media::detail

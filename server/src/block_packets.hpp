#pragma once
// A block's packets as one session sends them: those of the streams its client set up (all of
// the block's, or the ones an index picks when the client set up only some streams), and what
// they come to in link bytes — payload plus the session's per-packet overhead, the unit of the
// capacity policy and of PDFB v1.1's counts: the bytes of a block or of its rest, and the
// discard curve a policy sizes R with under priority discard (core::StageStart::removable).
//
// Pure functions over borrowed views; the caller owns the scratch (sized once for the source's
// largest block), so that no block allocates.
#include <cstddef>
#include <cstdint>
#include <span>

#include "predrop/media/media_file.hpp"

namespace predrop::server::detail {

/// The packets of a block for the tracks set up (borrowed from the block).
struct BlockPackets {
  const media::RtpPacket* packets = nullptr;  ///< All of the block's packets.
  const std::uint32_t* index = nullptr;       ///< Null: all of them; else the ones it names.
  std::size_t size = 0;                       ///< Packets for the tracks set up.

  const media::RtpPacket& operator[](std::size_t i) const {
    return packets[index != nullptr ? index[i] : i];
  }
};

/// Picks the packets of streams with a track (`track_of_stream[stream]` >= 0), in order, into
/// `index` (their positions in `packets`) and `picked_importance`, as many as both hold.
/// Returns how many.
std::uint32_t pick_packets(std::span<const media::RtpPacket> packets,
                           std::span<const std::uint8_t> importance,
                           std::span<const int> track_of_stream, std::span<std::uint32_t> index,
                           std::span<std::uint8_t> picked_importance);

/// How many of `importance` are disposable frames' (media::kImportanceDisposableMax or lower).
std::uint32_t disposable_packets(std::span<const std::uint8_t> importance);

/// Link bytes of the packets from `first` to the end, at `overhead` bytes each beyond the payload.
std::uint64_t link_bytes(const BlockPackets& block, std::size_t first, std::size_t overhead);

/// core::discard_curve of the packets from `first` on, whose importance is `importance` (from
/// `first`), in link bytes (payload plus `overhead` each). Same scratch rules as core's.
std::span<const std::uint64_t> discard_curve(const BlockPackets& block,
                                             std::span<const std::uint8_t> importance,
                                             std::size_t first, std::size_t overhead,
                                             std::span<std::uint32_t> order,
                                             std::span<std::uint64_t> removable);

}  // namespace predrop::server::detail

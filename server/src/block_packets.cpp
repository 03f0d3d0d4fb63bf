// A block's packets as one session sends them (block_packets.hpp).
#include "block_packets.hpp"

#include <algorithm>

#include "predrop/core/discard_curve.hpp"

namespace predrop::server::detail {

std::uint32_t pick_packets(std::span<const media::RtpPacket> packets,
                           std::span<const std::uint8_t> importance,
                           std::span<const int> track_of_stream, std::span<std::uint32_t> index,
                           std::span<std::uint8_t> picked_importance) {
  std::uint32_t n = 0;
  for (std::uint32_t i = 0; i < packets.size() && n < index.size() && n < picked_importance.size();
       ++i) {
    if (track_of_stream[packets[i].stream] < 0) continue;
    index[n] = i;
    picked_importance[n] = importance[i];
    ++n;
  }
  return n;
}

std::uint32_t disposable_packets(std::span<const std::uint8_t> importance) {
  return static_cast<std::uint32_t>(std::count_if(importance.begin(), importance.end(), [](auto v) {
    return v <= media::kImportanceDisposableMax;
  }));
}

std::uint64_t link_bytes(const BlockPackets& block, std::size_t first, std::size_t overhead) {
  std::uint64_t bytes = 0;
  for (std::size_t i = first; i < block.size; ++i) {
    bytes += block[i].payload_size + overhead;
  }
  return bytes;
}

std::span<const std::uint64_t> discard_curve(const BlockPackets& block,
                                             std::span<const std::uint8_t> importance,
                                             std::size_t first, std::size_t overhead,
                                             std::span<std::uint32_t> order,
                                             std::span<std::uint64_t> removable) {
  return core::discard_curve(
      importance, [&](std::size_t i) { return block[first + i].payload_size + overhead; }, order,
      removable);
}

}  // namespace predrop::server::detail

#pragma once
// Aggregation output of the DDL relay (relay.hpp): the buffers a closed stage is averaged into
// (the `zero`-policy average and the contributors per chunk, written by ddl::StageCollector), and
// the aggregate's packets, encoded once per stage and shared read-only by every worker's egress
// (docs/design.md §5): only chunks some worker contributed, flagged PARTIAL when fewer than all
// did, with their importance for the `priority` discard policy (docs/ddl.md), rotated to start at
// a different chunk each stage (so that a queue dropping the end of the burst drops other chunks
// each stage).
//
// Threading: the relay's loop thread. Memory: allocate() sizes everything for the job's tensor;
// encode() allocates nothing.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/ddl/chunk.hpp"

namespace predrop::ddl {

/// A stage's average and its encoded packets.
class RelayAggregate {
 public:
  /// Sizes the buffers for `plan` (throws std::bad_alloc if they do not fit in memory).
  void allocate(const ChunkPlan& plan);

  /// Where ddl::StageCollector::poll writes the average and the contributors per chunk.
  std::span<float> average() { return average_; }
  std::span<std::uint16_t> chunk_contributors() { return chunk_contributors_; }

  /// Encodes the average of stage `stage` over `live` workers into packets; with `priority`
  /// computes the chunks' importance first. Returns the number of packets.
  std::size_t encode(std::uint32_t stage, std::uint32_t live, bool priority);

  /// The packets of the last encode().
  std::span<const chain::OutgoingPacket> packets() const {
    return std::span<const chain::OutgoingPacket>(packets_).first(count_);
  }
  /// Their importance, one byte per packet.
  std::span<const std::uint8_t> importance() const {
    return std::span<const std::uint8_t>(importance_).first(count_);
  }

 private:
  ChunkPlan plan_;
  std::vector<float> average_;
  std::vector<std::uint16_t> chunk_contributors_;
  std::vector<std::uint8_t> importance_full_, importance_;  // per plan chunk / per packet
  std::size_t payload_size_ = 0;
  std::vector<std::uint8_t> payloads_;
  std::vector<chain::OutgoingPacket> packets_;
  std::size_t count_ = 0;
};

}  // namespace predrop::ddl

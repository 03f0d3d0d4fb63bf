#pragma once
// Aggregation of one stage's gradient chunks from N contributors, and the policy for chunks that
// never arrive (pre-discarded by the sender, lost in the network, or late).
//
// Missing-chunk policy (docs/ddl.md "Missing chunks"):
//   zero  The relay averages each element over the contributors whose chunk arrived; an element
//         no contributor delivered becomes 0 (MLT's choice: a missing gradient entry is no step).
//   own   The worker fills every chunk it did not receive in the aggregate with its own gradient
//         for those elements, so a lost aggregate chunk still moves the model along the worker's
//         own descent direction. Only the worker has an own gradient, so this is fill_missing()
//         on the worker side; the relay always averages with `zero`.
//
// Chunks must follow the ChunkPlan (offset = i * chunk_elements, count = the plan's count): the
// contribution count is then the same for every element of a chunk, so it is kept per chunk.
//
// Threading: one Aggregator per stage slot, one thread. No allocation after construction.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/ddl/chunk.hpp"

namespace predrop::ddl {

/// What a receiver does about chunks that never arrived.
enum class MissingPolicy : std::uint8_t {
  kZero,  ///< Missing elements contribute nothing; with no contributor at all they become 0.
  kOwn,   ///< The worker uses its own gradient where the aggregate chunk is missing.
};

/// "zero" or "own".
std::string_view to_string(MissingPolicy policy);
/// Parses "zero" or "own", with an error naming the known values.
core::Result<MissingPolicy> parse_missing_policy(std::string_view name);

/// What add() did with a chunk.
enum class AddOutcome : std::uint8_t {
  kAccepted,   ///< Summed in.
  kDuplicate,  ///< This contributor's chunk was already summed in; ignored.
  kRejected,   ///< Wrong contributor, tensor id or length, not a plan chunk, or a non-finite value.
};

/// Running counts of one Aggregator since construction (reset() keeps them).
struct AggregatorCounters {
  std::uint64_t accepted = 0;   ///< Chunks summed in.
  std::uint64_t duplicate = 0;  ///< Repeated chunks ignored.
  std::uint64_t rejected = 0;   ///< Chunks refused (see AddOutcome::kRejected).
};

/// Sum and per-chunk contributor count of one stage's tensor from `contributors` senders.
class Aggregator {
 public:
  /// Accepts chunks of `plan` with tensor id `tensor_id` from contributors 0 .. contributors-1
  /// (1 .. 65535).
  Aggregator(ChunkPlan plan, std::uint32_t contributors, std::uint16_t tensor_id = 0);

  /// Clears sums, counts and masks for a new stage (counters are kept).
  void reset();

  /// Sums one chunk of contributor `contributor` in. The chunk is checked first and either fully
  /// added or not at all.
  AddOutcome add(std::uint32_t contributor, const ChunkView& chunk);

  /// Writes the `zero`-policy average (plan.total_elements() floats): each element's sum divided
  /// by its number of contributors, 0 where there are none. Sums are kept in double in arrival
  /// order, so with every chunk present the result is the exact mean rounded once to float.
  void average(std::span<float> out) const;

  /// Writes the number of contributors of every chunk (plan.size() values).
  void chunk_contributors(std::span<std::uint16_t> out) const;
  /// Number of contributors of chunk i.
  std::uint16_t chunk_contributors(std::size_t chunk) const { return chunk_count_[chunk]; }
  /// True if contributor c's chunk i was summed in.
  bool has(std::uint32_t contributor, std::size_t chunk) const {
    return seen_[static_cast<std::size_t>(contributor) * plan_.size() + chunk] != 0;
  }
  /// Number of distinct chunks summed in from contributor c.
  std::uint32_t received_from(std::uint32_t contributor) const {
    return per_contributor_[contributor];
  }
  /// Number of distinct (contributor, chunk) pairs summed in since reset().
  std::size_t received() const { return received_; }

  /// The plan chunks must follow.
  const ChunkPlan& plan() const { return plan_; }
  /// Number of contributors.
  std::uint32_t contributors() const { return contributors_; }
  /// Counts since construction.
  const AggregatorCounters& counters() const { return counters_; }

 private:
  ChunkPlan plan_;
  std::uint32_t contributors_;
  std::uint16_t tensor_id_;
  std::vector<double> sum_;                 // per element
  std::vector<std::uint16_t> chunk_count_;  // contributors per chunk
  std::vector<std::uint8_t> seen_;          // contributors x chunks
  std::vector<std::uint32_t> per_contributor_;
  std::vector<float> scratch_;  // one chunk's decoded values
  std::size_t received_ = 0;
  AggregatorCounters counters_;
};

/// Worker side: applies `policy` to the chunks of `aggregate` (plan.total_elements() floats)
/// that were not received (`received[i] == 0`, plan.size() entries; e.g. the per-chunk contributor
/// counts a StageCollector reports). kZero sets them to 0; kOwn copies `own` (the worker's own
/// gradient, same length) into them. Returns the number of chunks filled.
std::size_t fill_missing(MissingPolicy policy, const ChunkPlan& plan,
                         std::span<const std::uint16_t> received, std::span<float> aggregate,
                         std::span<const float> own);

}  // namespace predrop::ddl

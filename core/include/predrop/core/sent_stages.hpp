#pragma once
// What a sender-side policy remembers of the stages it planned, until their reports come back:
// each stage's block size, duration, R and the cumulative byte count when it started. From two
// consecutive starts it knows exactly what a stage sent, and from those the queue the stages in
// flight add in front of the bottleneck (the capacity policy's NADA-style plan, docs/design.md
// §2.8). A fixed ring: reports come back within a few stages, and an older one finds no entry.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace predrop::core {

/// One planned stage.
struct SentStage {
  std::uint32_t stage = UINT32_MAX;
  double block_bytes = 0;
  double duration_us = 0;
  std::uint64_t bytes_before = 0;  ///< Cumulative bytes sent before the stage started.
  double rate = 0;                 ///< R it was planned (or last re-planned) with.
  bool drains = false;             ///< Planned (or re-planned) to give back a queue.
  double estimate = 0;             ///< The capacity estimate it was planned with.
};

/// The last kRing planned stages, by stage id.
class SentStages {
 public:
  static constexpr std::size_t kRing = 64;

  /// Starts the entry of `stage` (replacing whatever the ring held in its place).
  SentStage& start(std::uint32_t stage, double block_bytes, double duration_us,
                   std::uint64_t bytes_before);
  /// The entry of `stage`, or nullptr when it was never planned or has left the ring.
  SentStage* find(std::uint32_t stage);
  const SentStage* find(std::uint32_t stage) const;
  /// Bytes sent in `stage`, once the next stage's start told the cumulative count.
  std::optional<double> bytes_sent(std::uint32_t stage) const;
  /// The queue (µs) at the start of `stage`, from `queue_us` at the end of `reported` plus what
  /// each stage sent since adds at `capacity` (link bytes per µs) less its duration, kept within
  /// [0, limit_us]. Stages whose bytes are not known yet add nothing.
  double queue_at_start(std::uint32_t stage, std::uint32_t reported, double queue_us,
                        double capacity, double limit_us) const;

 private:
  std::array<SentStage, kRing> ring_{};
};

}  // namespace predrop::core

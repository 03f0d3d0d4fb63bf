#pragma once
// Receiving the chunks of successive stages (training iterations) and deciding when a stage is
// over. The relay runs one StageCollector for the workers' gradients (N contributors); a worker
// runs one for the relay's aggregate (1 contributor).
//
// Deadline rule (docs/ddl.md "Stage deadline"). A stage closes at the first of:
//   * complete: every contributor delivered every chunk it announced (the stage extension's
//     "number sent in this stage"; a contributor not heard from yet is expected to send the
//     whole plan), or
//   * deadline: now >= base + D, where base is the arrival of the stage's first chunk (if no
//     chunk of it arrived but one of a later stage did, that arrival: the peers have moved on),
//     and D = clamp(multiplier x median(recent reception periods), min_deadline, max_deadline),
//     or initial_deadline while no period has been recorded.
// A reception period is last - first arrival of a complete stage. A stage closed by the deadline
// only gives a lower bound, so it contributes (last - first) x expected / received, the
// completion-ratio extrapolation of OptiReduce's adaptive timeout (Warraich et al., NSDI 2025;
// gloo_uhc.patch: elapsed / completion_ratio); otherwise persistent network loss would leave D
// at its initial value forever. That extrapolation assumes the missing chunks were on their way;
// a contributor not heard from at all in the stage (a rank that always starts later, behind a
// slower path) says nothing about its pace, so such a stage contributes no period at the close.
// Instead the first late chunk of a stage closed by the deadline contributes its arrival - base:
// how long the stage would have had to wait for it. Without that D never grows to include a rank
// that is always late (docs/ddl-torch.md "An adaptive deadline that sees late ranks"). A late
// chunk also holds D at 1.25 x its lateness or more for the next 32 stages: a rank that is late
// only now and then (an evaluation every few stages, a preempted process) would otherwise be left
// out again as soon as the median of the complete stages' short periods took over.
//
// Stage ids are compared with serial-number arithmetic (RFC 1982 style, 32 bit). Chunks of a stage
// older than the current one are `late` and dropped; chunks up to window-1 stages ahead are kept
// in their own slot; chunks further ahead are `too_early` and dropped.
//
// Time is injected (now_us, any monotonic microsecond clock). Threading: one thread. No
// allocation after construction.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/ddl/aggregator.hpp"
#include "predrop/ddl/chunk.hpp"

namespace predrop::ddl {

/// Parameters of the adaptive stage deadline (all times in microseconds).
struct DeadlineConfig {
  std::uint64_t min_deadline_us = 5'000;          ///< Floor of D.
  std::uint64_t max_deadline_us = 2'000'000;      ///< Cap of D.
  std::uint64_t initial_deadline_us = 1'000'000;  ///< D before any period is recorded.
  double multiplier = 2.0;                        ///< D = multiplier x median period.
  std::size_t history = 9;                        ///< Periods kept for the median (1..64).

  /// A fixed deadline: D = `us` always.
  static DeadlineConfig fixed(std::uint64_t us) { return {us, us, us, 1.0, 1}; }
  /// Checks min <= initial <= max, multiplier > 0 and 1 <= history <= 64.
  core::Status validate() const;
};

/// The D of the deadline rule: a bounded median over recent reception periods.
class DeadlineEstimator {
 public:
  /// Largest supported history.
  static constexpr std::size_t kMaxHistory = 64;

  /// `config` must validate().
  explicit DeadlineEstimator(DeadlineConfig config);
  /// Records one reception period (us).
  void record(std::uint64_t period_us);
  /// The current D (us).
  std::uint64_t deadline_us() const { return deadline_us_; }
  /// Periods currently held (<= history).
  std::size_t samples() const { return count_; }
  /// The configuration.
  const DeadlineConfig& config() const { return config_; }

 private:
  DeadlineConfig config_;
  std::array<std::uint64_t, kMaxHistory> ring_{};
  std::size_t next_ = 0;
  std::size_t count_ = 0;
  std::uint64_t deadline_us_;
};

/// What on_chunk() did with a chunk.
enum class ChunkOutcome : std::uint8_t {
  kAccepted,   ///< Summed into its stage.
  kDuplicate,  ///< Already had it.
  kLate,       ///< Its stage is closed.
  kTooEarly,   ///< Its stage is window or more stages ahead of the current one.
  kRejected,   ///< Bad contributor index or not a valid chunk of the plan (see Aggregator::add).
};

/// Why a stage closed.
enum class CloseReason : std::uint8_t {
  kComplete,  ///< All announced chunks arrived.
  kDeadline,  ///< base + D passed.
  kForced,    ///< force_close() was called.
  kEnded,     ///< Past the job's last stage: closed at once, nothing awaited (StagePeer).
  kIdle,      ///< Nothing more arrived for the idle time: the rest was lost (StagePeer).
};

/// Per-contributor view of a closed stage.
struct ContributorReport {
  std::uint32_t received = 0;   ///< Distinct chunks summed in.
  std::uint32_t announced = 0;  ///< Packets it said it sent (0 = never heard from).
  std::uint64_t first_us = 0;   ///< Arrival of its first chunk (0 if none).
  std::uint64_t last_us = 0;    ///< Arrival of its last chunk (0 if none).

  /// Its reception period L (last - first), the L to report back to this sender.
  std::uint64_t period_us() const { return last_us - first_us; }
};

/// A closed stage. `contributors` points into the receiver and stays valid until the next
/// poll()/force_close().
struct ClosedStage {
  std::uint32_t stage = 0;
  CloseReason reason = CloseReason::kComplete;
  std::uint64_t first_us = 0;            ///< First chunk arrival (0 if none).
  std::uint64_t last_us = 0;             ///< Last chunk arrival (0 if none).
  std::uint64_t closed_us = 0;           ///< now_us at closing.
  std::uint64_t deadline_budget_us = 0;  ///< The D that applied.
  std::uint32_t received = 0;            ///< Distinct chunks over all contributors.
  std::uint32_t expected = 0;            ///< Sum of what contributors announced (or the plan).
  std::uint32_t lost = 0;                ///< Announced but not received (network loss, late).
  std::uint32_t missing = 0;             ///< Plan slots without data (incl. pre-discards).
  std::uint32_t chunks_full = 0;         ///< Chunks with every contributor.
  std::uint32_t chunks_partial = 0;      ///< Chunks with some but not all contributors.
  std::uint32_t chunks_empty = 0;        ///< Chunks with no contributor.
  std::span<const ContributorReport> contributors;

  /// Reception period L of the stage over all contributors.
  std::uint64_t period_us() const { return last_us - first_us; }
};

/// Running counts since construction.
struct ReceiverCounters {
  std::uint64_t received = 0;      ///< Chunks accepted.
  std::uint64_t duplicate = 0;     ///< Chunks already held.
  std::uint64_t late = 0;          ///< Chunks of closed stages.
  std::uint64_t late_periods = 0;  ///< Late chunks that fed the deadline (one per closed stage).
  std::uint64_t too_early = 0;     ///< Chunks too far ahead.
  std::uint64_t rejected = 0;      ///< Invalid chunks.
  std::uint64_t missing = 0;       ///< Sum of ClosedStage::missing.
  std::uint64_t lost = 0;          ///< Sum of ClosedStage::lost.
  std::uint64_t stages_complete = 0;
  std::uint64_t stages_deadline = 0;
  std::uint64_t stages_forced = 0;
};

/// Collects the chunks of the current stage and up to window-1 later ones, and closes stages.
class StageCollector {
 public:
  /// `contributors` senders (1..65535) send chunks of `plan` (tensor id `tensor_id`); `window`
  /// (1..8) stages are held at once. `deadline` must validate().
  StageCollector(ChunkPlan plan, std::uint32_t contributors, DeadlineConfig deadline,
                 std::uint32_t window = 2, std::uint16_t tensor_id = 0);

  /// Makes `stage` the current stage (call before the first chunk when the stage is known, e.g.
  /// 0 at start-up). Without it the first accepted chunk's stage becomes current. Drops any
  /// stage held.
  void start(std::uint32_t stage);

  /// The stage being collected, once known.
  std::optional<std::uint32_t> current_stage() const { return current_; }

  /// Offers one parsed chunk of stage `stage` from `contributor`, who announced `announced`
  /// packets in that stage (0 if unknown), arrived at `now_us`. Call poll() after it.
  ChunkOutcome on_chunk(std::uint32_t stage, std::uint32_t contributor, std::uint16_t announced,
                        const ChunkView& chunk, std::uint64_t now_us);

  /// When the current stage's deadline passes (absolute us), or nullopt while nothing has arrived
  /// that starts its clock. Arm the loop's timer with it.
  std::optional<std::uint64_t> deadline_at_us() const;

  /// Closes the current stage if it is complete or past its deadline: writes its `zero`-policy
  /// average (plan.total_elements() floats) and per-chunk contributor counts (plan.size()), makes
  /// the next stage current and returns the report; otherwise returns nullopt and writes nothing.
  /// A later stage may already be complete too: call until it returns nullopt.
  std::optional<ClosedStage> poll(std::uint64_t now_us, std::span<float> average,
                                  std::span<std::uint16_t> chunk_contributors);

  /// Closes the current stage now whatever its state (e.g. the glue's own timeout when nothing
  /// arrives at all); same outputs as poll(). Nullopt only if no stage is current.
  std::optional<ClosedStage> force_close(std::uint64_t now_us, std::span<float> average,
                                         std::span<std::uint16_t> chunk_contributors);

  /// The last chunk arrival of the current stage (us), or nullopt while none has arrived.
  std::optional<std::uint64_t> last_arrival_us() const {
    if (!current_ || !slot_ahead(0).any) return std::nullopt;
    return slot_ahead(0).last_us;
  }

  /// The D that applies to the current stage (us): the estimator's, or more while a late chunk
  /// holds it up (see the file comment).
  std::uint64_t deadline_budget_us() const;
  /// The deadline estimator (its history of periods).
  const DeadlineEstimator& estimator() const { return estimator_; }
  /// Counts since construction.
  const ReceiverCounters& counters() const { return counters_; }
  /// The plan chunks must follow.
  const ChunkPlan& plan() const { return plan_; }

 private:
  /// Closed stages remembered for their late chunks.
  static constexpr std::size_t kClosedRing = 8;
  /// Stages a late chunk holds D up for, and by how much more than its lateness.
  static constexpr std::uint32_t kLateHoldStages = 32;
  static constexpr double kLateHoldMargin = 1.25;

  struct Slot {
    Aggregator agg;
    std::vector<ContributorReport> per;
    std::uint64_t first_us = 0;
    std::uint64_t last_us = 0;
    bool any = false;
  };

  // A stage closed by the deadline, waiting for its first late chunk.
  struct ClosedBase {
    std::uint32_t stage = 0;
    std::uint64_t base_us = 0;
    bool waiting = false;
  };

  // Slot of the stage `ahead` stages after the current one (ahead < window_).
  Slot& slot_ahead(std::uint32_t ahead) { return slots_[(head_ + ahead) % window_]; }
  const Slot& slot_ahead(std::uint32_t ahead) const { return slots_[(head_ + ahead) % window_]; }
  std::uint32_t expected_from(const ContributorReport& c) const;
  bool complete(const Slot& s) const;
  std::optional<std::uint64_t> base_us() const;
  ClosedStage close(CloseReason reason, std::uint64_t now_us, std::span<float> average,
                    std::span<std::uint16_t> chunk_contributors);

  ChunkPlan plan_;
  std::uint32_t contributors_;
  std::uint32_t window_;
  DeadlineEstimator estimator_;
  std::vector<Slot> slots_;
  std::vector<ContributorReport> closed_per_;  // backs ClosedStage::contributors
  std::optional<std::uint32_t> current_;
  std::uint32_t head_ = 0;  // slot of the current stage
  std::array<ClosedBase, kClosedRing> closed_bases_{};
  std::uint64_t late_hold_us_ = 0;     // D is at least this ...
  std::uint32_t late_hold_until_ = 0;  // ... while the current stage is before this one
  ReceiverCounters counters_;
};

}  // namespace predrop::ddl

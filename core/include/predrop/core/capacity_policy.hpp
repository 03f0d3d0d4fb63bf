#pragma once
// "capacity": a model-based policy (issue 12, docs/design.md §2.8). Instead of reacting to each
// report with a step, it keeps a per-session model of the bottleneck — its capacity Ĉ in bytes per
// µs and the queue standing in front of it — and sizes each block from the model and the block's
// real byte count:
//
//   R = (1 - X / B) / beta,   X = margin * Ĉ * T - Ĉ * (q_pred - q_ref) [+ Ĉ * probe_us]
//
// with B the next block's payload bytes, T its duration, q_pred the queue the model expects when
// the block starts and beta the measured byte share of a discarded packet fraction (the priority
// planner drops small packets first, so discarding R of the packets removes less than R of the
// bytes). Without the sender's hook (rate_for_next not called, e.g. DDL) blocks count as one unit
// of bytes each and T is the base reception period.
//
// Ideas taken from the rmcat anchors, and where:
//  - BBR (Cardwell et al., ACM Queue 2016): the delivery rate is the capacity sample; stages that
//    leave the bottleneck idle raise Ĉ by a max filter of D / max(L, T); probing is a gain on top
//    of the estimate rather than a pulse to full rate: a small, loss-free one (probe_step_us) on a
//    first sign of spare capacity, and BBR's startup gain (x2 of Ĉ per block, probe_max_us) once a
//    probe came back with the bottleneck still idle, so a bottleneck that opens is found two
//    blocks after the first report that shows it.
//  - GCC (draft-ietf-rmcat-gcc-02 §5.5, §6): on overuse (network loss above 1 %, or a queueing
//    delay above queue_high / growing by more than queue_grow in one stage, the delay-gradient
//    signal) the estimate becomes the *received* rate at once. For a busy stage that is
//    D / (T + queue growth): between the last packets of two stages the sender sent exactly the
//    stage's bytes over T. GCC multiplies the received rate by 0.85 to drain
//    the queue, this policy drains the modelled queue explicitly (below) and aims at `margin`.
//    The 0.85 is kept for missing reports (no sample to replace the estimate with).
//  - NADA (RFC 8698 §4.3): a queueing-delay reference q_ref; the standing queue above it is
//    drained within one block, and the queue the stages in flight will add (known bytes, modelled
//    capacity, a 100 ms cap like the bed's tbf) is predicted, because the report on block s
//    arrives while s+1 is on the wire and R applies to s+2.
// Probes are sized in queueing time (probe_step_us of the estimated capacity on a sign,
// probe_max_us once confirmed), so a probe on a wrong sign (the end-of-block queue reading is
// noisy: a packet is ~12 ms of queue at 800 kbit/s, and a block often ends in a frame gap with
// the queue drained) only adds that much queue, which the 100 ms queue absorbs and the next
// block gives back. A block "busy" ends with more than busy_queue_us (3 ms, above the bed's
// ~1.5 ms noise on an open path); only a busy block measures Ĉ downwards without overuse.
//
// Network loss is told apart from pre-discard by packets_received vs packets_announced (the
// announced count is after discard). P is only a guard: a report with P below `quality_floor`
// and no network loss forces a probe (more bytes). The policy works with P = 0 throughout.
#include <array>
#include <cstdint>
#include <limits>

#include "predrop/core/rate_controller.hpp"

namespace predrop::core {

/// Parameters of the capacity policy; defaults suit 0.5-2 s blocks of paced media.
struct CapacityParams {
  double rmax = 0.9;              ///< Upper limit of R.
  double initial_rate = 0.0;      ///< R until the first congestion signal.
  double margin = 1.0;            ///< Send this fraction of the estimated capacity per block.
  double queue_ref_us = 10'000;   ///< NADA's reference queueing delay, the queue aimed at.
  double queue_low_us = 15'000;   ///< A stage ending at or below this queue (and no loss) is clean.
  double queue_high_us = 30'000;  ///< A stage ending above this queue is overuse.
  double queue_grow_us = 20'000;  ///< Queue growth within one stage that is overuse (gradient).
  double queue_limit_us = 100'000;  ///< The modelled queue never exceeds this (the tbf's latency).
  /// A stage ending with more queue than this kept the bottleneck busy, so its delivery rate is
  /// the capacity itself; one ending with less may have left capacity unused.
  double busy_queue_us = 3'000;
  double loss_threshold = 0.01;  ///< Network loss above this is overuse.
  double clean_loss = 0.002;     ///< Network loss at or below this counts as clean.
  /// Probe on a first sign of spare capacity: the bytes the estimated capacity carries in this
  /// time, on top of the aim (in time units: a probe into no spare capacity adds only this much
  /// queue, and only one such probe is in flight at a time, so queue_ref + probe_step_us <=
  /// queue_limit keeps a wrong sign loss-free).
  double probe_step_us = 15'000;
  /// Probe once a probe came back with the queue still empty (confirmed spare capacity): every
  /// stage is planned with this much on top until a report shows the bottleneck busy. 1 s at 1 s
  /// blocks = twice the estimate per block, BBR's startup; since the max filter raises Ĉ to what
  /// each such block delivered, an opened bottleneck is found in one or two rounds, and the step
  /// that overshoots costs one or two blocks of loss, after which the received rate is the new
  /// capacity (GCC).
  double probe_max_us = 1'000'000;
  unsigned release_stages = 2;    ///< Clean reports of stages sent at R = 0 that end the episode.
  double missing_backoff = 0.85;  ///< Ĉ factor per missing report after the first (GCC's 0.85).
  double quality_floor = -std::numeric_limits<double>::infinity();  ///< P below this: probe.
};

/// Checks ranges; errors name the parameter as configured (control.<name>).
Status validate(const CapacityParams& params);

/// The capacity policy (see the file comment).
class CapacityPolicy final : public RateController {
 public:
  /// `params` must pass validate().
  explicit CapacityPolicy(const CapacityParams& params);

  std::string_view name() const override { return "capacity"; }
  double rate() const override { return rate_; }
  double rate_for_next(const StageStart& next) override;

  /// Estimated capacity in payload bytes per µs (0 before any sample).
  double capacity_estimate() const { return capacity_; }
  /// True while a bottleneck is known (R is sized from the estimate); false: R = initial rate.
  bool limited() const { return limited_; }
  /// Queue (µs) the model expected at the start of the last stage planned.
  double predicted_queue_us() const { return predicted_queue_us_; }
  /// Byte share of a discarded packet fraction (1 = packets of equal size).
  double beta() const { return beta_; }

 protected:
  Decision decide(const StageReport& report) override;
  Decision decide_missing(std::uint32_t stage) override;

 private:
  struct Slot {
    std::uint32_t stage = UINT32_MAX;
    double block_bytes = 0;
    double duration_us = 0;
    std::uint64_t bytes_before = 0;  ///< Cumulative bytes sent before the stage started.
    double rate = 0;
    double capacity = 0;  ///< Ĉ the stage was planned with.
    bool probe = false;
    bool confirmed = false;  ///< Planned after a probe confirmed spare capacity.
  };
  static constexpr std::size_t kRing = 64;

  const Slot* slot(std::uint32_t stage) const;
  /// Bytes sent in `stage`, when the next stage's start told the cumulative count.
  bool bytes_sent(std::uint32_t stage, double& bytes) const;
  double plan(double block_bytes, double duration_us, bool probe);
  double probe_gain() const;
  void reset_probing();
  void note_congestion(double sample);
  double clamp(double r) const;

  CapacityParams params_;
  double rate_;
  bool limited_ = false;
  double capacity_ = 0.0;     ///< Ĉ, payload bytes per µs.
  double beta_ = 1.0;         ///< (1 - sent bytes / block bytes) / R, learnt from stages.
  double last_queue_us_ = 0;  ///< Queue at the end of the last reported stage.
  std::uint32_t last_report_stage_ = 0;
  bool has_report_ = false;
  double predicted_queue_us_ = 0;
  /// How much spare capacity the reports have shown (see probe_gain()).
  enum class ProbeLevel : std::uint8_t { kNone, kSign, kConfirmed };
  ProbeLevel probe_level_ = ProbeLevel::kNone;
  unsigned release_run_ = 0;
  bool force_probe_ = false;  ///< Quality below the floor: probe at the next stage.
  unsigned missing_run_ = 0;
  double base_period_us_ = 0;  ///< Without the hook: the smallest clean reception period.
  double last_block_bytes_ = 1.0;
  double last_duration_us_ = 0.0;
  std::array<Slot, kRing> ring_{};
};

}  // namespace predrop::core

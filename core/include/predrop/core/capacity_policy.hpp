#pragma once
// "capacity": a model-based policy (issue 12, docs/design.md §2.8). It keeps a per-session model
// of the bottleneck — the rate Ĉ this session can send (link bytes per µs) and the queue in front
// of the bottleneck — and sizes each block from the model and the block's real byte count:
//
//   R = (1 - X / B) / beta,   X = margin * Ĉ * T - Ĉ * (q_pred - q_ref)
//
// with B the next block's link bytes, T its duration, q_pred the queue the model expects when the
// block starts (the last reported queue plus what the blocks in flight add at Ĉ) and beta the
// measured byte share of a discarded packet fraction (the priority planner drops small packets
// first, so discarding R of the packets removes less than R of the bytes). margin < 1 leaves the
// bottleneck idle for the rest of the block, so the queue is empty and a shaper's token bucket
// full when the next block's key frame comes as a burst. Without the sender's hook
// (rate_for_next not called, e.g. DDL) blocks count as one unit of bytes each and T is the base
// reception period.
//
// The receiver's PDFB v1.1 measurements (core::PathMeasurement) make the estimate conclusive:
//  - the dispersion rate d (packet pairs that left the bottleneck back to back) is the
//    bottleneck's own rate, measured in every block whose key frame queued at it; Ĉ never exceeds
//    it, and a session that has the bottleneck to itself takes it as its estimate;
//  - the smallest queueing delay of the block's packets is the queue that stood through it,
//    which other sessions' bursts at the block's end do not move;
//  - a large burst (the key frame) that crossed the path without dispersion proves the path
//    carries its send rate, several times the stream's: the bottleneck is gone and R = r0 from the
//    next block planned, without a probe.
// Without them (PDFB v1.0, RTCP RR from players) the policy probes for spare capacity instead.
//
// Ideas taken from the rmcat anchors, and where:
//  - GCC (draft-ietf-rmcat-gcc-02 §5.5, §6): on overuse (network loss above 1 %, a queueing delay
//    above queue_high, or growing by more than queue_grow in one block: the delay-gradient signal)
//    the estimate becomes the *received* rate D / (T + queue growth). Under tail drop every flow
//    receives in proportion to what it sends, so this is the session's share and keeps several
//    sessions on one bottleneck where they are relative to each other. The 0.85 of GCC is kept
//    for missing reports (no sample to replace the estimate with); the drain it stands for is
//    done explicitly by the queue term of the plan.
//  - BBR (Cardwell et al., ACM Queue 2016): the delivery rate of a block that left the bottleneck
//    idle is a lower bound of the capacity (max filter); probing is a gain on top of the estimate
//    that doubles while probes come back clean and stops at the first busy report, never a pulse
//    to the full rate. With the dispersion rate known, probes never go above it.
//  - NADA (RFC 8698 §4.3): a queueing-delay reference q_ref (default 0: an empty queue at the
//    block's end) and the queue the blocks in flight will add are in the plan.
//  - Packet pair / packet train dispersion (Keshav 1991; Dovrolis et al., IEEE/ACM ToN 2004) for
//    d, measured on the key frame the stream sends anyway.
//
// Network loss is told apart from pre-discard by packets_received vs packets_announced (the
// announced count is after discard). P is only a guard: a report with P below `quality_floor`
// and no network loss forces a probe. The policy works with P = 0 throughout.
#include <array>
#include <cstdint>
#include <limits>

#include "predrop/core/rate_controller.hpp"

namespace predrop::core {

/// Parameters of the capacity policy; defaults suit 0.5-2 s blocks of paced media.
struct CapacityParams {
  double rmax = 0.9;          ///< Upper limit of R.
  double initial_rate = 0.0;  ///< R until the first congestion signal, and once it is over.
  /// Send this fraction of Ĉ * T per block: the rest is idle time at the block's end, where the
  /// queue drains and a shaper's bucket refills before the next key frame.
  double margin = 0.97;
  double queue_ref_us = 0;        ///< NADA's reference queueing delay at a block's end.
  double queue_low_us = 15'000;   ///< A block ending at or below this queue (and no loss) is clean.
  double queue_high_us = 30'000;  ///< A block ending above this queue is overuse.
  double queue_grow_us = 20'000;  ///< Queue growth within one block that is overuse (gradient).
  double queue_limit_us = 100'000;  ///< The modelled queue never exceeds this (the tbf's latency).
  /// A block ending with more queue than this kept the bottleneck busy to its end, so its
  /// delivery rate is the session's share of it.
  double busy_queue_us = 3'000;
  double loss_threshold = 0.01;  ///< Network loss above this is overuse.
  double clean_loss = 0.002;     ///< Network loss at or below this counts as clean.
  /// First probe after a clean block: the bytes Ĉ carries in this time, on top of the estimate;
  /// each further clean block doubles it, up to probe_max_us.
  double probe_step_us = 15'000;
  double probe_max_us = 1'000'000;  ///< Largest probe (1 s at 1 s blocks: x2 of Ĉ, BBR's startup).
  /// Dispersion resting on fewer link bytes than this is ignored (about three full packets).
  double min_dispersion_bytes = 4'000;
  /// A burst of at least this many link bytes that crossed without dispersion proves its rate
  /// (smaller ones may have passed a shaper's token bucket whole: Linux tbf's is 4 kB on the
  /// bed; the bed clip's largest burst is 5.5-7.7 kB).
  double proof_bytes = 5'000;
  /// A received rate at overuse of at least this share of the dispersion rate means the session
  /// had the bottleneck to itself: from then on its estimate is the dispersion rate.
  double alone_share = 0.85;
  /// ... and the bottleneck is gone when the proven rate is this many times the stream's.
  double proof_factor = 1.5;
  /// ... and no packet of the block queued longer than this: a burst up to a shaper's bucket
  /// plus its rate times the burst's send span also crosses undispersed (measured: 5 kB at
  /// 2.46 Mbit/s behind the bed's 4 kB bucket), but then the rest of the key frame queues.
  double proof_queue_us = 15'000;
  /// A burst counts as undispersed when it arrived over at most its send span plus this (on the
  /// open bed the arrival span is within 0.1 ms of the send span; 1 ms is what 1 kB beyond a
  /// 4 kB bucket adds at 8 Mbit/s).
  double burst_jitter_us = 1'000;
  /// Without path measurements: clean reports of blocks sent at R = 0 that end the episode.
  unsigned release_stages = 2;
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
  std::optional<double> rate_for_rest(const StageProgress& progress) override;

  /// Estimated rate this session can send, in link bytes per µs (0 before any sample).
  double capacity_estimate() const { return capacity_; }
  /// The bottleneck's rate from the last dispersion measurement (0 = none yet).
  double bottleneck_rate() const { return dispersion_; }
  /// True while a bottleneck is known (R is sized from the estimate); false: R = initial rate.
  bool limited() const { return limited_; }
  /// Queue (µs) the model expected at the start of the last stage planned.
  double predicted_queue_us() const { return predicted_queue_us_; }
  /// Byte share of a discarded packet fraction (1 = packets of equal size).
  double beta() const { return beta_; }
  /// Smallest change of R that re-plans the rest of a stage in flight, and after a report of
  /// congestion (overuse or a queue standing at the block's end).
  static constexpr double kReplanStep = 0.1;
  static constexpr double kReplanStepCongested = 0.02;

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
  };
  static constexpr std::size_t kRing = 64;

  const Slot* slot(std::uint32_t stage) const;
  /// Bytes sent in `stage`, when the next stage's start told the cumulative count.
  bool bytes_sent(std::uint32_t stage, double& bytes) const;
  double plan(double block_bytes, double duration_us) const;
  /// The same plan with the block's exact discard curve (StageStart::removable).
  double plan(double block_bytes, double duration_us, std::uint32_t packets,
              std::span<const std::uint64_t> removable) const;
  /// R that keeps `keep` of `bytes`: through the discard curve when there is one, else beta.
  double rate_keeping(double keep, double bytes, std::uint32_t packets,
                      std::span<const std::uint64_t> removable) const;
  /// Bytes the probe adds to a plan.
  double probe_bytes() const;
  /// The queue the model expects when `stage` starts (last report + the stages sent since).
  double queue_at_start(std::uint32_t stage) const;
  void raise_to(double estimate);
  double clamp(double r) const;

  CapacityParams params_;
  double rate_;
  bool limited_ = false;
  double capacity_ = 0.0;    ///< Ĉ, link bytes per µs.
  double dispersion_ = 0.0;  ///< d of the last report that had one.
  /// The session had the bottleneck to itself at the last overuse (received rate ~ d): then the
  /// estimate is d itself.
  bool alone_ = false;
  double probe_us_ = 0.0;      ///< The probe on top of Ĉ (0 = none).
  unsigned clean_probes_ = 0;  ///< Probes in a row that came back with the bottleneck idle.
  bool congested_ = false;     ///< The last report showed overuse or a standing queue.
  double beta_ = 1.0;          ///< (1 - sent bytes / block bytes) / R, learnt from stages.
  double last_queue_us_ = 0;   ///< Queue at the end of the last reported stage.
  double last_stand_us_ = 0;   ///< Queue that stood through the last reported stage.
  std::uint32_t last_report_stage_ = 0;
  bool has_report_ = false;
  double predicted_queue_us_ = 0;
  unsigned release_run_ = 0;
  unsigned missing_run_ = 0;
  double base_period_us_ = 0;  ///< Without the hook: the smallest clean reception period.
  double last_block_bytes_ = 1.0;
  double last_duration_us_ = 0.0;
  std::array<Slot, kRing> ring_{};
};

}  // namespace predrop::core

#pragma once
// "adaptive": an improved policy beside the exact rule (DESIGN.md §2 "known weaknesses"). It
// keeps the seed's promise — the time to receive a stage does not grow under congestion and what
// the receiver makes of it does not degrade — where the exact rule, fed with the same reports,
// reads congestion as over-discarding, undoes its own first step and never comes back down.
//
// Signals, in order of precedence:
//  1. Network loss (announced vs received packets) above `loss_threshold`: the path carries only
//     c = (1 - R_used)(1 - loss) of the stream, so R jumps to 1 - c * margin at once (GCC's
//     "0.85 x received rate" idea, draft-ietf-rmcat-gcc-02 §5.5) instead of creeping by Rp1.
//  2. Queueing delay above `queue_high_us` without loss: a queue is building; R is raised from
//     the stretch of L when L grew, else by one step `rp1`.
//  3. Reception period stretched beyond the base L by more than `t2` (burst senders, DDL): the
//     path delivers (1 - R_used) L_base / L of the stream; R jumps to match.
//  4. Quality below `quality_floor` with no network loss: the discards themselves hurt, R goes
//     down by `rp2` (a target, not a stage-to-stage difference, so content changes do not fire).
//  5. Otherwise the path is clean: after `hold_stages` clean stages R is probed down, first by
//     `probe_step`, doubling while probes stay clean; a probe that brings back loss or queueing
//     doubles the hold (up to `max_hold_stages`), so a standing bottleneck is not probed into
//     every few stages.
// Missing reports: the first is ignored; each further consecutive one raises R by `rp1`, as the
// feedback path itself may be congested (TFRC's no-feedback timer, RFC 5348 §4.4, in spirit).
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "predrop/core/rate_controller.hpp"

namespace predrop::core {

/// Parameters of the adaptive policy; defaults suit 0.5-2 s stages.
struct AdaptiveParams {
  double rmax = 0.6;              ///< Upper limit of R.
  double rp1 = 0.05;              ///< Step up when a queue builds without a better estimate.
  double rp2 = 0.05;              ///< Step down when quality is below the floor.
  double loss_threshold = 0.02;   ///< Network loss above this is congestion (GCC: 2 %).
  double clean_loss = 0.005;      ///< Network loss at or below this counts as a clean stage.
  double margin = 0.95;           ///< Aim this fraction of the measured capacity.
  double drain_margin = 0.90;     ///< ... while a queue is standing, to drain it.
  double queue_high_us = 30'000;  ///< Queueing delay that means a queue is building.
  double queue_low_us = 10'000;   ///< Queueing delay below which a stage is clean.
  Threshold t2 = Threshold::fraction(0.10);  ///< L stretch against the base L that counts.
  unsigned base_window = 30;      ///< Stages over which the base (uncongested) L is the minimum.
  unsigned hold_stages = 2;       ///< Clean stages before the first probe down.
  unsigned max_hold_stages = 16;  ///< Cap of the hold after failed probes.
  double probe_step = 0.05;       ///< First probe step; doubles per clean probe.
  double quality_floor = -std::numeric_limits<double>::infinity();  ///< P below this: lower R.
};

/// Checks ranges; errors name the parameter.
Status validate(const AdaptiveParams& params);

/// The adaptive policy (see the file comment for the rule).
class AdaptivePolicy final : public RateController {
 public:
  /// `params` must pass validate(); `initial_rate` is R for the first stage.
  AdaptivePolicy(const AdaptiveParams& params, double initial_rate);

  std::string_view name() const override { return "adaptive"; }
  double rate() const override { return rate_; }
  /// The base (uncongested) reception period in µs, 0 before the first clean stage.
  double base_reception_period_us() const;

 protected:
  Decision decide(const StageReport& report) override;
  Decision decide_missing(std::uint32_t stage) override;

 private:
  Decision congested(double target, std::string_view reason);
  double clamp(double r) const { return std::fmin(params_.rmax, std::fmax(0.0, r)); }
  void remember_base(double reception_period_us);

  AdaptiveParams params_;
  double rate_;
  unsigned clean_run_ = 0;
  unsigned hold_;
  double next_probe_step_;
  bool probing_ = false;  ///< The last change was a probe down.
  unsigned missing_run_ = 0;
  std::vector<double> base_ring_;
  std::size_t base_head_ = 0;
  std::size_t base_count_ = 0;
};

}  // namespace predrop::core

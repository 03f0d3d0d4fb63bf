#pragma once
// "adaptive": an improved policy beside the exact rule (docs/design.md §2 "known weaknesses"). It
// keeps the seed's promise — the time to receive a stage does not grow under congestion and what
// the receiver makes of it does not degrade — where the exact rule, fed with the same reports,
// reads congestion as over-discarding, undoes its own first step and never comes back down.
// Tuned on the namespace test bed (bench/README.md has the figures and why each piece is there).
//
// Signals, in order of precedence:
//  1. Network loss (announced vs received packets) above `loss_threshold`: the path carries only
//     c = (1 - R_used)(1 - loss) of the stream, so R jumps to 1 - c * margin at once (GCC's
//     "0.85 x received rate" idea, draft-ietf-rmcat-gcc-02 §5.5) instead of creeping by Rp1.
//     A quality drop that comes with loss is therefore congestion, never over-discarding.
//     Loss in a stage that ends with the queue below `queue_high_us` (or below half of the
//     previous stage's) right after a stage that left it standing is that old queue draining
//     (the stage's first burst met it): hold.
//  2. Reception period stretched beyond the base L by more than `t2`, in reports without a
//     queueing delay (burst senders, DDL): the path delivers (1 - R_used) L_base / L of the
//     stream; R jumps to match. Paced streams report the queueing delay and skip this signal.
//  3. Queueing delay above `queue_high_us` without loss: a queue is building; R up by `rp1`.
//  4. Quality below `quality_floor` with no network loss: the discards themselves hurt, R goes
//     down by `rp2` (a target, not a stage-to-stage difference, so content changes do not fire).
//  5. A lost packet or two at the current R (loss in (clean_loss, loss_threshold]): in paced
//     video that is the tail of an I-frame burst meeting a standing queue, and it costs the rest
//     of the GOP, so R goes up by `creep_step`.
//  6. Clean stages (no loss, queue below `queue_low_us`) at the current R:
//     - while the queue stays below `creep_queue_us`, R creeps down by `creep_step` per stage that
//       shows the last change, towards the smallest R the path carries (a creep that meets loss
//       is undone and sets a floor for the congestion episode);
//     - after `hold` clean stages, one *capacity pulse*: a single stage at `pulse_rate` (0), then
//       straight back to the settled R while its report is on its way. A clean pulse means the
//       congestion is over: R = pulse_rate at once. A pulse that meets loss keeps the settled R
//       and doubles the hold (up to `max_hold_stages`), so a standing bottleneck is pulsed rarely.
//       Why a pulse to 0 instead of probing down step by step: the reports say nothing about
//       spare capacity while R is high, and with 1 s stages and reports one stage late every step
//       costs two stages; a pulse costs one lossy stage when it fails and ends the episode at once
//       when it succeeds.
// Missing reports: the first is ignored; each further consecutive one raises R by `rp1`, as the
// feedback path itself may be congested (TFRC's no-feedback timer, RFC 5348 §4.4, in spirit).
//
// Reports trail the stages in flight: a report about a stage sent before the last change is used
// for congestion (R is never lowered on a congestion signal) but not as evidence that the new R
// is clean.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "predrop/core/rate_controller.hpp"

namespace predrop::core {

/// Parameters of the adaptive policy; defaults suit 0.5-2 s stages of paced media.
struct AdaptiveParams {
  double rmax = 0.6;              ///< Upper limit of R.
  double rp1 = 0.05;              ///< Step up when a queue builds without loss.
  double rp2 = 0.05;              ///< Step down when quality is below the floor.
  double loss_threshold = 0.02;   ///< Network loss above this is congestion (GCC: 2 %).
  double clean_loss = 0.0;        ///< Network loss at or below this counts as a clean stage.
  double margin = 0.93;           ///< Aim this fraction of the measured capacity.
  double drain_margin = 0.90;     ///< ... while a queue is standing, to drain it.
  double queue_high_us = 30'000;  ///< Queueing delay that means a queue is building.
  double queue_low_us = 10'000;   ///< Queueing delay at or below which a stage is clean.
  Threshold t2 = Threshold::fraction(0.10);  ///< L stretch against the base L that counts.
  /// ... and it must be at least this long too: on a free path L is a few hundred µs and its
  /// scheduling noise alone is 10 % (a DDL relay's peer next to it sat at rmax by that noise).
  double stretch_min_us = 3'000;
  unsigned base_window = 30;      ///< Stages over which the base (uncongested) L is the minimum.
  unsigned hold_stages = 3;       ///< Clean stages before a capacity pulse.
  unsigned max_hold_stages = 5;   ///< Cap of the hold, which grows x2 after each failed pulse.
  double pulse_rate = 0.0;        ///< R of the one-stage capacity pulse.
  double creep_step = 0.02;       ///< Step of the creep down (and of the step up on mild loss).
  double creep_queue_us = 2'000;  ///< Creep down only while the queueing delay is below this.
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
  /// P counts only through quality_floor (off by default): without it a report is not held.
  bool reads_performance() const override { return std::isfinite(params_.quality_floor); }
  double rate() const override { return rate_; }
  /// The base (uncongested) reception period in µs, 0 before the first clean stage.
  double base_reception_period_us() const;
  /// R the policy returns to after a capacity pulse (equals rate() outside a pulse).
  double settled_rate() const { return settled_; }
  /// Clean stages needed before the next capacity pulse.
  unsigned hold() const { return hold_; }

 protected:
  Decision decide(const StageReport& report) override;
  Decision decide_missing(std::uint32_t stage) override;

 private:
  enum class Pulse : std::uint8_t {
    kNone,      ///< No pulse under way.
    kSent,      ///< rate() is the pulse rate: the next stage started is the pulse.
    kAwaiting,  ///< Back at the settled rate; waiting for the pulse stage's report.
  };

  Decision raise(double target, std::string_view reason);
  Decision on_pulse_report(const StageReport& r, double used, double loss, double queue);
  double clamp(double r) const { return std::fmin(params_.rmax, std::fmax(0.0, r)); }
  void remember_base(double reception_period_us);
  void end_episode();

  AdaptiveParams params_;
  double rate_;
  double settled_;
  Pulse pulse_ = Pulse::kNone;
  unsigned awaiting_reports_ = 0;
  unsigned aftermath_ = 0;  ///< Reports still to come about stages right after a failed pulse.
  unsigned clean_run_ = 0;
  unsigned hold_;
  /// Lowest R the creep may reach in this congestion episode (a creep below it met loss).
  double floor_ = 0.0;
  unsigned missing_run_ = 0;
  double last_queue_us_ = 0.0;  ///< Queueing delay of the previous report.
  std::vector<double> base_ring_;
  std::size_t base_head_ = 0;
  std::size_t base_count_ = 0;
};

}  // namespace predrop::core

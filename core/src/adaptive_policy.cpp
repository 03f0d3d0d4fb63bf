#include "predrop/core/adaptive_policy.hpp"

#include <algorithm>
#include <string>

namespace predrop::core {

namespace {
// Rates closer than this are the same rate (R is stored as a double but planned in packets).
constexpr double kSameRate = 1e-6;
// A pulse whose report never shows up (e.g. two reports arrived between two stage starts, so no
// stage was sent at the pulse rate) is given up after this many further reports.
constexpr unsigned kPulseReportsMax = 3;
// Reports after a failed pulse whose queueing and loss are the pulse's: a 100 ms queue drains
// within about two stages at the settled rate.
constexpr unsigned kAftermathReports = 2;

bool same_rate(double a, double b) {
  return std::fabs(a - b) < kSameRate;
}
}  // namespace

Status validate(const AdaptiveParams& p) {
  auto in01 = [](double v) { return std::isfinite(v) && v >= 0.0 && v <= 1.0; };
  if (!in01(p.rmax)) return make_error("adaptive.rmax must be in [0, 1]");
  if (!in01(p.rp1) || !in01(p.rp2)) return make_error("adaptive steps must be in [0, 1]");
  if (!in01(p.loss_threshold) || !in01(p.clean_loss) || p.clean_loss > p.loss_threshold) {
    return make_error("adaptive.clean_loss must be <= adaptive.loss_threshold, both in [0, 1]");
  }
  if (!(p.margin > 0 && p.margin <= 1) || !(p.drain_margin > 0 && p.drain_margin <= 1)) {
    return make_error("adaptive.margin and drain_margin must be in (0, 1]");
  }
  if (!(p.queue_low_us >= 0 && p.queue_low_us <= p.queue_high_us)) {
    return make_error("adaptive.queue_low_us must be in [0, queue_high_us]");
  }
  if (!(p.creep_queue_us >= 0 && p.creep_queue_us <= p.queue_low_us)) {
    return make_error("adaptive.creep_queue_us must be in [0, queue_low_us]");
  }
  if (p.base_window < 1 || p.hold_stages < 1 || p.hold_stages > p.max_hold_stages ||
      p.max_hold_stages > 1024) {
    return make_error("adaptive: base_window >= 1 and 1 <= hold_stages <= max_hold_stages <= 1024");
  }
  if (!in01(p.pulse_rate) || p.pulse_rate > p.rmax) {
    return make_error("adaptive.pulse_rate must be in [0, rmax]");
  }
  if (!in01(p.creep_step)) return make_error("adaptive.creep_step must be in [0, 1]");
  if (std::isnan(p.quality_floor)) return make_error("adaptive.quality_floor is NaN");
  return Ok{};
}

AdaptivePolicy::AdaptivePolicy(const AdaptiveParams& params, double initial_rate)
    : params_(params),
      rate_(initial_rate),
      settled_(initial_rate),
      hold_(params.hold_stages),
      base_ring_(params.base_window, 0.0) {}

double AdaptivePolicy::base_reception_period_us() const {
  if (base_count_ == 0) return 0.0;
  return *std::min_element(base_ring_.begin(),
                           base_ring_.begin() + static_cast<std::ptrdiff_t>(base_count_));
}

void AdaptivePolicy::remember_base(double reception_period_us) {
  base_ring_[base_head_] = reception_period_us;
  base_head_ = (base_head_ + 1) % base_ring_.size();
  base_count_ = std::min(base_count_ + 1, base_ring_.size());
}

void AdaptivePolicy::end_episode() {
  floor_ = 0.0;
  hold_ = params_.hold_stages;
  clean_run_ = 0;
}

Decision AdaptivePolicy::raise(double target, std::string_view reason) {
  clean_run_ = 0;
  // Never lower R on a congestion signal: a target below R means R was right and the signal came
  // from a stage sent before R took effect.
  settled_ = clamp(std::max(settled_, target));
  // A congestion signal cancels a pulse that has not been sent yet.
  if (pulse_ == Pulse::kSent) pulse_ = Pulse::kNone;
  rate_ = settled_;
  return {rate_, DecisionKind::kAdapt, reason};
}

Decision AdaptivePolicy::on_pulse_report(const StageReport& r, double used, double loss,
                                         double queue) {
  pulse_ = Pulse::kNone;
  clean_run_ = 0;
  if (loss <= params_.clean_loss && queue <= params_.queue_low_us) {
    // The path carried the stream at the pulse rate: the congestion is over.
    remember_base(r.reception_period_us);
    end_episode();
    settled_ = rate_ = clamp(params_.pulse_rate);
    return {rate_, DecisionKind::kAdapt, "capacity pulse clean: congestion over, R to pulse rate"};
  }
  hold_ = std::min(params_.max_hold_stages, std::max(1u, hold_ * 2));
  // The stage after the pulse starts on the queue the pulse left; its loss and queueing are the
  // pulse's, not a sign that the settled rate is too low.
  aftermath_ = kAftermathReports;
  if (loss > params_.loss_threshold) {
    // The pulse started on a drained queue, which absorbed part of it, so its loss understates
    // the excess: it may raise the settled R, never lower it. But a target below the creep floor
    // means capacity grew since the floor was set: let the creep look again.
    const double target = 1.0 - (1.0 - used) * (1.0 - loss) * params_.margin;
    if (target < floor_ - params_.creep_step) floor_ = std::max(0.0, target);
    settled_ = clamp(std::max(settled_, target));
  }
  rate_ = settled_;
  return {rate_, DecisionKind::kAdapt, "capacity pulse met congestion: settled R, longer hold"};
}

Decision AdaptivePolicy::decide(const StageReport& r) {
  missing_run_ = 0;
  const double used = r.rate_used.value_or(rate_);
  const double loss = r.network_loss();
  const double queue = r.queue_delay_us.value_or(0.0);
  const double base = base_reception_period_us();
  const bool standing_queue = queue > params_.queue_high_us;

  if (pulse_ == Pulse::kAwaiting && same_rate(used, params_.pulse_rate) &&
      !same_rate(settled_, params_.pulse_rate)) {
    return on_pulse_report(r, used, loss, queue);
  }
  if (pulse_ == Pulse::kSent) {
    // This report is about a stage sent before the pulse; the pulse stage has started (or starts
    // next). Go back to the settled rate so that the pulse lasts one stage.
    pulse_ = Pulse::kAwaiting;
    awaiting_reports_ = 0;
    rate_ = settled_;
  } else if (pulse_ == Pulse::kAwaiting && ++awaiting_reports_ > kPulseReportsMax) {
    pulse_ = Pulse::kNone;
  }
  if (aftermath_ > 0) {
    --aftermath_;
    if (same_rate(used, settled_) && (loss > params_.clean_loss || queue > params_.queue_low_us)) {
      clean_run_ = 0;
      return {rate_, DecisionKind::kAdapt, "draining what the failed pulse left: hold"};
    }
  }

  // The previous stage left a standing queue and this one ends with it clearly lower: the queue
  // is draining at R_used (a queue that R_used cannot drain stays at the tbf limit).
  const bool draining = last_queue_us_ > params_.queue_high_us &&
                        (queue <= params_.queue_high_us || queue < 0.5 * last_queue_us_);
  last_queue_us_ = queue;
  if (loss > params_.loss_threshold && draining) {
    // The previous stage left a full queue and this one ended with it draining: R_used carries
    // the path, and the loss was that old queue's (the stage's first burst met it). Raising R
    // for it would overshoot (seen on the bed: 0.40 instead of 0.35 after onset).
    clean_run_ = 0;
    return {rate_, DecisionKind::kAdapt, "loss while the old queue drained: hold"};
  }
  if (loss > params_.loss_threshold) {
    const double capacity = (1.0 - used) * (1.0 - loss);
    const double margin = standing_queue ? params_.drain_margin : params_.margin;
    // The rate used was too low for this path: the creep must not go back there.
    floor_ = std::max(floor_, std::min(params_.rmax, used + params_.creep_step));
    return raise(1.0 - capacity * margin, "network loss: R sized from the received fraction");
  }
  // L is the delay signal only where the receiver cannot measure queueing (burst senders such as
  // the DDL relay report no one-way delay). In paced streaming L follows the block's frame
  // timing, not the path: on the bed it varies by 10 % between clean blocks (a block whose first
  // packets were lost starts late), and reading that as a stretch ratcheted R up to rmax.
  // The stretch must also be longer than the timing noise of a free path (stretch_min_us).
  const bool stretched = !r.queue_delay_us && base > 0 &&
                         params_.t2.increase_exceeds(r.reception_period_us, base) &&
                         r.reception_period_us - base > params_.stretch_min_us;
  if (stretched) {
    const double capacity = (1.0 - used) * base / r.reception_period_us;
    return raise(1.0 - capacity * params_.margin, "reception period stretched: R sized from L");
  }
  if (standing_queue) {
    floor_ = std::max(floor_, std::min(params_.rmax, used + params_.creep_step));
    return raise(used + params_.rp1, "queue building: R up one step");
  }
  if (r.performance < params_.quality_floor && loss <= params_.clean_loss && settled_ > 0) {
    clean_run_ = 0;
    settled_ = clamp(settled_ - params_.rp2);
    if (pulse_ != Pulse::kSent) rate_ = settled_;
    return {rate_, DecisionKind::kAdapt, "quality below floor without network loss: R down"};
  }
  if (loss > params_.clean_loss) {
    if (same_rate(used, settled_)) {
      // A packet or two lost at the current rate: the tail of a burst met a standing queue.
      floor_ = std::max(floor_, std::min(params_.rmax, used + params_.creep_step));
      return raise(used + params_.creep_step, "mild loss at the current rate: R up a little");
    }
    clean_run_ = 0;
    return {rate_, DecisionKind::kAdapt, "mild loss before the last change: hold"};
  }
  if (queue > params_.queue_low_us) {
    // Between the thresholds: hold R and do not count the stage towards a pulse.
    clean_run_ = 0;
    return {rate_, DecisionKind::kAdapt, "moderate queueing: hold"};
  }
  remember_base(r.reception_period_us);
  if (settled_ <= params_.pulse_rate + kSameRate || pulse_ != Pulse::kNone) {
    return {rate_, DecisionKind::kAdapt, "clean path: hold"};
  }
  // Every clean stage counts towards the next pulse, also one sent before the last creep step
  // (at a higher R): the hold measures how long the path has been calm, and the time to notice
  // the end of congestion is the hold plus the report delay.
  if (++clean_run_ >= hold_) {
    clean_run_ = 0;
    pulse_ = Pulse::kSent;
    rate_ = clamp(params_.pulse_rate);
    return {rate_, DecisionKind::kAdapt, "capacity pulse: one stage at the pulse rate"};
  }
  if (!same_rate(used, settled_)) {
    // The stage was sent before the last change took effect: its cleanness says nothing about
    // the new rate yet.
    return {rate_, DecisionKind::kAdapt, "waiting for the last change to take effect"};
  }
  if (queue <= params_.creep_queue_us && settled_ - params_.creep_step >= floor_ - kSameRate) {
    settled_ = rate_ = clamp(settled_ - params_.creep_step);
    return {rate_, DecisionKind::kAdapt, "clean path, empty queue: creep R down"};
  }
  return {rate_, DecisionKind::kAdapt, "clean path: hold"};
}

Decision AdaptivePolicy::decide_missing(std::uint32_t /*stage*/) {
  ++missing_run_;
  clean_run_ = 0;
  if (missing_run_ >= 2) {
    pulse_ = Pulse::kNone;
    settled_ = rate_ = clamp(settled_ + params_.rp1);
    return {rate_, DecisionKind::kMissing, "reports missing: feedback path congested? R up"};
  }
  return {rate_, DecisionKind::kMissing, "one report missing: hold"};
}

}  // namespace predrop::core

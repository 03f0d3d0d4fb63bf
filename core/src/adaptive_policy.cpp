#include "predrop/core/adaptive_policy.hpp"

#include <algorithm>
#include <string>

namespace predrop::core {

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
  if (p.base_window < 1 || p.hold_stages > p.max_hold_stages || p.max_hold_stages > 1024) {
    return make_error("adaptive: base_window >= 1 and hold_stages <= max_hold_stages <= 1024");
  }
  if (!in01(p.probe_step) || p.probe_step == 0) return make_error("adaptive.probe_step in (0, 1]");
  if (std::isnan(p.quality_floor)) return make_error("adaptive.quality_floor is NaN");
  return Ok{};
}

AdaptivePolicy::AdaptivePolicy(const AdaptiveParams& params, double initial_rate)
    : params_(params),
      rate_(initial_rate),
      hold_(params.hold_stages),
      next_probe_step_(params.probe_step),
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

Decision AdaptivePolicy::congested(double target, std::string_view reason) {
  // A probe that ran into congestion again: the bottleneck is still there, so wait longer
  // before the next one.
  if (probing_) hold_ = std::min(params_.max_hold_stages, std::max(1u, hold_ * 2));
  probing_ = false;
  clean_run_ = 0;
  next_probe_step_ = params_.probe_step;
  // Never lower R on a congestion signal: a target below R means R was right and the loss came
  // from the stage before it took effect.
  rate_ = clamp(std::max(rate_, target));
  return {rate_, DecisionKind::kAdapt, reason};
}

Decision AdaptivePolicy::decide(const StageReport& r) {
  missing_run_ = 0;
  const double used = r.rate_used.value_or(rate_);
  const double loss = r.network_loss();
  const double queue = r.queue_delay_us.value_or(0.0);
  const double base = base_reception_period_us();
  const bool standing_queue = queue > params_.queue_high_us;
  const double margin = standing_queue ? params_.drain_margin : params_.margin;

  if (loss > params_.loss_threshold) {
    const double capacity = (1.0 - used) * (1.0 - loss);
    return congested(1.0 - capacity * margin, "network loss: R sized from the received fraction");
  }
  const bool stretched = base > 0 && params_.t2.increase_exceeds(r.reception_period_us, base);
  if (stretched) {
    const double capacity = (1.0 - used) * base / r.reception_period_us;
    return congested(1.0 - capacity * margin, "reception period stretched: R sized from L");
  }
  if (standing_queue) {
    return congested(rate_ + params_.rp1, "queue building: R up one step");
  }
  if (r.performance < params_.quality_floor && loss <= params_.clean_loss && rate_ > 0) {
    probing_ = false;
    clean_run_ = 0;
    rate_ = clamp(rate_ - params_.rp2);
    return {rate_, DecisionKind::kAdapt, "quality below floor without network loss: R down"};
  }
  const bool clean = loss <= params_.clean_loss && queue <= params_.queue_low_us;
  if (!clean) {
    // Between the thresholds: hold R and do not count the stage towards a probe.
    clean_run_ = 0;
    return {rate_, DecisionKind::kAdapt, "mild loss or queueing: hold"};
  }
  remember_base(r.reception_period_us);
  if (r.rate_used && std::fabs(*r.rate_used - rate_) > 1e-9) {
    // The stage was sent before the last change took effect (reports trail the stages in
    // flight): its cleanness says nothing about the new rate yet.
    return {rate_, DecisionKind::kAdapt, "waiting for the last change to take effect"};
  }
  if (probing_) {
    // The last probe stayed clean: the hold resets and the next step is larger.
    hold_ = params_.hold_stages;
    next_probe_step_ = std::min(1.0, next_probe_step_ * 2);
  }
  ++clean_run_;
  if (rate_ > 0 && (clean_run_ > hold_ || probing_)) {
    rate_ = rate_ - next_probe_step_ < params_.probe_step / 2 ? 0.0 : rate_ - next_probe_step_;
    probing_ = rate_ > 0;
    clean_run_ = 0;
    return {rate_, DecisionKind::kAdapt, "clean path: probing R down"};
  }
  probing_ = false;
  return {rate_, DecisionKind::kAdapt, "clean path: hold"};
}

Decision AdaptivePolicy::decide_missing(std::uint32_t /*stage*/) {
  ++missing_run_;
  clean_run_ = 0;
  if (missing_run_ >= 2) {
    rate_ = clamp(rate_ + params_.rp1);
    return {rate_, DecisionKind::kMissing, "reports missing: feedback path congested? R up"};
  }
  return {rate_, DecisionKind::kMissing, "one report missing: hold"};
}

}  // namespace predrop::core

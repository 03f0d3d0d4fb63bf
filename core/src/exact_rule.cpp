#include "predrop/core/exact_rule.hpp"

#include <algorithm>
#include <cassert>

namespace predrop::core {

ExactRule::ExactRule(const RuleParams& params)
    : params_(params), rate_(params.r0), delays_(params.k, 0.0) {
  assert(validate(params).ok());
}

bool ExactRule::delay_grew(double reception_period_us) const {
  for (std::size_t i = 0; i < count_; ++i) {
    if (params_.t2.increase_exceeds(reception_period_us, delays_[i])) return true;
  }
  return false;
}

void ExactRule::remember(const StageReport& report) {
  last_performance_ = report.performance;
  delays_[head_] = report.reception_period_us;
  head_ = (head_ + 1) % delays_.size();
  count_ = std::min(count_ + 1, delays_.size());
}

Decision ExactRule::decide(const StageReport& report) {
  Decision d;
  if (!has_reports()) {
    // Seed S13/S14: after stage 0 the rate becomes the predetermined Rp.
    rate_ = params_.rp;
    d = {rate_, DecisionKind::kInitial, "first report: R = Rp"};
  } else if (params_.t1.decrease_exceeds(report.performance, last_performance_)) {
    // Seed S20/S22: performance deteriorated by more than T1, so R was too large.
    rate_ = std::max(0.0, rate_ - params_.rp2);
    d = {rate_, DecisionKind::kDecrease, "P worse than previous by more than T1"};
  } else if (delay_grew(report.reception_period_us)) {
    // Seed S21/S23 (k = 1) and S30 (k > 1): the reception period grew, so R was too small.
    rate_ = std::min(params_.rmax, rate_ + params_.rp1);
    d = {rate_, DecisionKind::kIncrease, "L grew by more than T2"};
  } else {
    // Seed S24: the current rate is appropriate.
    d = {rate_, DecisionKind::kKeep, "no significant change"};
  }
  remember(report);
  return d;
}

Decision ExactRule::decide_missing(std::uint32_t /*stage*/) {
  switch (params_.missing) {
    case MissingReportAction::kIncrease:
      rate_ = std::min(params_.rmax, rate_ + params_.rp1);
      return {rate_, DecisionKind::kMissing, "no report: R += Rp1 (configured)"};
    case MissingReportAction::kDecrease:
      rate_ = std::max(0.0, rate_ - params_.rp2);
      return {rate_, DecisionKind::kMissing, "no report: R -= Rp2 (configured)"};
    case MissingReportAction::kHold:
      break;
  }
  return {rate_, DecisionKind::kMissing, "no report: rate kept"};
}

}  // namespace predrop::core

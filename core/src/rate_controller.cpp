#include "predrop/core/rate_controller.hpp"

#include <cmath>
#include <string>

namespace predrop::core {

std::string_view to_string(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::kInitial:
      return "initial";
    case DecisionKind::kDecrease:
      return "decrease";
    case DecisionKind::kIncrease:
      return "increase";
    case DecisionKind::kKeep:
      return "keep";
    case DecisionKind::kFixed:
      return "fixed";
    case DecisionKind::kAdapt:
      return "adapt";
    case DecisionKind::kStale:
      return "stale";
    case DecisionKind::kMissing:
      return "missing";
    case DecisionKind::kPaused:
      return "paused";
  }
  return "unknown";
}

namespace {
bool is_rate(double r) {
  return std::isfinite(r) && r >= 0.0 && r <= 1.0;
}
}  // namespace

Status validate(const RuleParams& p) {
  for (auto [name, v] : {std::pair{"r0", p.r0}, std::pair{"rp", p.rp}, std::pair{"rp1", p.rp1},
                         std::pair{"rp2", p.rp2}, std::pair{"rmax", p.rmax}}) {
    if (!is_rate(v)) {
      return make_error(std::string("control.") + name + " = " + std::to_string(v) +
                        " is outside [0, 1]");
    }
  }
  if (p.r0 > p.rmax) return make_error("control.r0 must not exceed control.rmax");
  if (p.rp > p.rmax) return make_error("control.rp must not exceed control.rmax");
  if (p.k < 1 || p.k > 1024) return make_error("control.k must be in [1, 1024]");
  if (!std::isfinite(p.t1.value) || p.t1.value < 0) return make_error("control.t1 must be >= 0");
  if (!std::isfinite(p.t2.value) || p.t2.value < 0) return make_error("control.t2 must be >= 0");
  return Ok{};
}

Status validate(const StageReport& r) {
  if (!std::isfinite(r.reception_period_us) || r.reception_period_us < 0) {
    return make_error("stage " + std::to_string(r.stage) + ": reception period " +
                      std::to_string(r.reception_period_us) + " us is not a finite value >= 0");
  }
  if (!std::isfinite(r.performance)) {
    return make_error("stage " + std::to_string(r.stage) + ": performance value is not finite");
  }
  if (r.queue_delay_us && !std::isfinite(*r.queue_delay_us)) {
    return make_error("stage " + std::to_string(r.stage) + ": queue delay is not finite");
  }
  if (r.rate_used && !(*r.rate_used >= 0.0 && *r.rate_used <= 1.0)) {
    return make_error("stage " + std::to_string(r.stage) + ": rate used is outside [0, 1]");
  }
  return Ok{};
}

Result<Decision> RateController::on_report(const StageReport& report) {
  if (auto st = validate(report); !st) {
    ++stats_.rejected;
    return st.error();
  }
  // Reports are handled in stage order; a duplicate or late one would compare a stage with a
  // newer one and move R the wrong way, so it is ignored.
  if (has_last_stage_ && report.stage <= last_stage_) {
    ++stats_.stale;
    return Decision{rate(), DecisionKind::kStale, "report older than the last one handled"};
  }
  const double before = rate();
  Decision d = decide(report);
  has_last_stage_ = true;
  last_stage_ = report.stage;
  ++stats_.reports;
  if (d.rate > before) ++stats_.increases;
  if (d.rate < before) ++stats_.decreases;
  return d;
}

Decision RateController::on_report_missing(std::uint32_t stage) {
  ++stats_.missing;
  const double before = rate();
  Decision d = decide_missing(stage);
  if (d.rate > before) ++stats_.increases;
  if (d.rate < before) ++stats_.decreases;
  return d;
}

Decision RateController::decide_missing(std::uint32_t /*stage*/) {
  return Decision{rate(), DecisionKind::kMissing, "no report: rate kept"};
}

}  // namespace predrop::core

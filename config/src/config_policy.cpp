// [control]'s values as the core takes them: the threshold syntax ("0.5dB", "5%", "2ms") and the
// mapping of ControlConfig onto core::PolicyConfig, checked by building one controller.
#include <cmath>

#include "predrop/config/config.hpp"
#include "predrop/core/text_util.hpp"

namespace predrop::config {

core::Result<ThresholdSetting> parse_performance_threshold(std::string_view text) {
  auto t = core::text::trim(text);
  bool relative = false;
  if (t.ends_with('%')) {
    relative = true;
    t.remove_suffix(1);
  } else if (t.size() >= 2 && core::text::iequals(t.substr(t.size() - 2), "dB")) {
    t.remove_suffix(2);
  }
  const auto v = core::text::parse_double(core::text::trim(t));
  if (!v || *v < 0.0) {
    return core::make_error("expected a non-negative number, \"<n>dB\" or \"<n>%\", got " +
                            core::text::quote_for_error(text));
  }
  return ThresholdSetting{relative ? *v / 100.0 : *v, relative};
}

core::Result<ThresholdSetting> parse_delay_threshold(std::string_view text) {
  auto t = core::text::trim(text);
  double scale = 0.0;  // µs per unit; 0 = relative
  bool relative = false;
  if (t.ends_with('%')) {
    relative = true;
    t.remove_suffix(1);
  } else if (t.ends_with("us")) {
    scale = 1.0;
    t.remove_suffix(2);
  } else if (t.ends_with("\xc2\xb5s")) {  // "µs"
    scale = 1.0;
    t.remove_suffix(3);
  } else if (t.ends_with("ms")) {
    scale = 1e3;
    t.remove_suffix(2);
  } else if (t.ends_with('s')) {
    scale = 1e6;
    t.remove_suffix(1);
  }
  const auto v = core::text::parse_double(core::text::trim(t));
  if (!v || *v < 0.0 || (!relative && scale == 0.0)) {
    return core::make_error(
        "expected \"<n>us\", \"<n>ms\", \"<n>s\" or \"<n>%\" (or a bare number of "
        "µs), got " +
        core::text::quote_for_error(text));
  }
  return ThresholdSetting{relative ? *v / 100.0 : *v * scale, relative};
}

namespace {
core::Threshold to_threshold(const ThresholdSetting& t) {
  return t.relative ? core::Threshold::fraction(t.value) : core::Threshold::absolute(t.value);
}
}  // namespace

core::Result<core::PolicyConfig> make_policy_config(const ControlConfig& control) {
  core::PolicyConfig p;
  p.policy = control.policy;
  p.rule.r0 = control.r0;
  p.rule.rp = control.rp;
  p.rule.rp1 = control.rp1;
  p.rule.rp2 = control.rp2;
  p.rule.rmax = control.rmax;
  p.rule.t1 = to_threshold(control.t1);
  p.rule.t2 = to_threshold(control.t2);
  p.rule.k = control.k;
  p.rule.missing = control.missing_report;
  p.fixed_rate = control.fixed_rate;
  p.adaptive.rmax = control.rmax;
  p.adaptive.rp1 = control.rp1;
  p.adaptive.rp2 = control.rp2;
  const AdaptiveTuning& a = control.adaptive;
  p.adaptive.loss_threshold = a.loss_threshold;
  p.adaptive.clean_loss = a.clean_loss;
  p.adaptive.margin = a.margin;
  p.adaptive.drain_margin = a.drain_margin;
  p.adaptive.queue_high_us = a.queue_high_ms * 1000.0;
  p.adaptive.queue_low_us = a.queue_low_ms * 1000.0;
  p.adaptive.stretch_min_us = a.stretch_min_ms * 1000.0;
  p.adaptive.base_window = a.base_window;
  p.adaptive.hold_stages = a.hold_stages;
  p.adaptive.max_hold_stages = a.max_hold_stages;
  p.adaptive.pulse_rate = a.pulse_rate;
  p.adaptive.creep_step = a.creep_step;
  p.adaptive.creep_queue_us = a.creep_queue_ms * 1000.0;
  p.adaptive.quality_floor = a.quality_floor;
  p.capacity.rmax = control.rmax;
  p.capacity.initial_rate = control.r0;
  const CapacityTuning& ct = control.capacity;
  p.capacity.margin = ct.margin;
  p.capacity.queue_ref_us = ct.queue_target_ms * 1000.0;
  // A larger target moves the clean and overuse thresholds with it.
  p.capacity.queue_low_us = std::fmax(p.capacity.queue_low_us, 1.5 * p.capacity.queue_ref_us);
  p.capacity.queue_high_us = std::fmax(p.capacity.queue_high_us, p.capacity.queue_low_us + 10'000);
  p.capacity.increase_step = ct.increase_step;
  p.capacity.probe_gain = ct.probe_gain;
  p.capacity.pacing_gain = ct.pacing_gain;
  p.capacity.repaid_burst_bytes = ct.repaid_burst_bytes;
  p.capacity.quality_floor = ct.quality_floor;
  p.capacity.loss_threshold = ct.loss_threshold;
  p.capacity.decrease_factor = ct.decrease_factor;
  p.capacity.compete_blocks = ct.compete_blocks;
  p.capacity.compete_loss_high = ct.compete_loss_high;
  p.capacity.compete_loss_low = ct.compete_loss_low;
  p.capacity.compete_gain = ct.compete_gain;
  p.capacity.missing_backoff = ct.missing_backoff;
  // Validate by building one controller now, so a bad combination fails at start-up.
  auto probe = core::make_rate_controller(p);
  if (!probe) return probe.error();
  return p;
}

}  // namespace predrop::config

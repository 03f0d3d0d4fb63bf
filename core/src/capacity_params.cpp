#include "predrop/core/capacity_params.hpp"

#include <cmath>
#include <string>

namespace predrop::core {

namespace {
bool finite_in(double v, double lo, double hi) {
  return std::isfinite(v) && v >= lo && v <= hi;
}
}  // namespace

Status validate(const CapacityParams& p) {
  const auto bad = [](const char* name, double v, const char* range) {
    return make_error(std::string("control.capacity.") + name + " = " + std::to_string(v) +
                      " must be " + range);
  };
  // rmax and r0 are [control]'s (every policy has them); the rest is [control.capacity]'s.
  if (!finite_in(p.rmax, 0.0, 1.0)) {
    return make_error("control.rmax = " + std::to_string(p.rmax) + " must be in [0, 1]");
  }
  if (!finite_in(p.initial_rate, 0.0, p.rmax)) {
    return make_error("control.r0 = " + std::to_string(p.initial_rate) + " must be in [0, rmax]");
  }
  if (p.start_rate && !finite_in(*p.start_rate, 0.0, p.rmax)) {
    return make_error("the start rate " + std::to_string(*p.start_rate) + " must be in [0, rmax]");
  }
  if (!(std::isfinite(p.margin) && p.margin > 0.0 && p.margin <= 1.0)) {
    return bad("margin", p.margin, "in (0, 1]");
  }
  if (!finite_in(p.queue_ref_us, 0.0, p.queue_limit_us)) {
    return bad("queue_target_ms", p.queue_ref_us / 1000.0, "in [0, queue_limit]");
  }
  if (p.queue_ref_us >= p.queue_high_us) {
    return bad("queue_target_ms", p.queue_ref_us / 1000.0, "below the overuse queue");
  }
  if (!finite_in(p.queue_low_us, 0.0, p.queue_limit_us)) {
    return bad("queue_low_us", p.queue_low_us, "in [0, queue_limit]");
  }
  if (!(std::isfinite(p.queue_high_us) && p.queue_high_us >= p.queue_low_us)) {
    return bad("queue_high_us", p.queue_high_us, ">= queue_low_us");
  }
  if (!(std::isfinite(p.queue_grow_us) && p.queue_grow_us > 0.0)) {
    return bad("queue_grow_us", p.queue_grow_us, "> 0");
  }
  if (!(std::isfinite(p.queue_limit_us) && p.queue_limit_us > 0.0)) {
    return bad("queue_limit_us", p.queue_limit_us, "> 0");
  }
  if (!finite_in(p.loss_threshold, 0.0, 1.0)) {
    return bad("loss_threshold", p.loss_threshold, "in [0, 1]");
  }
  if (!finite_in(p.clean_loss, 0.0, p.loss_threshold)) {
    return bad("clean_loss", p.clean_loss, "in [0, loss_threshold]");
  }
  if (!(std::isfinite(p.increase_step) && p.increase_step > 0.0 && p.increase_step <= 1.0)) {
    return bad("increase_step", p.increase_step, "in (0, 1]");
  }
  if (!(std::isfinite(p.probe_gain) && p.probe_gain > 1.0 && p.probe_gain <= 4.0)) {
    return bad("probe_gain", p.probe_gain, "in (1, 4]");
  }
  if (p.compete_blocks < 1 || p.compete_blocks > 1000) {
    return bad("compete_blocks", p.compete_blocks, "in [1, 1000]");
  }
  if (!(std::isfinite(p.decrease_factor) && p.decrease_factor >= 0.5 && p.decrease_factor <= 1.0)) {
    return bad("decrease_factor", p.decrease_factor, "in [0.5, 1]");
  }
  if (!finite_in(p.compete_loss_high, 0.0, 1.0)) {
    return bad("compete_loss_high", p.compete_loss_high, "in [0, 1]");
  }
  if (!finite_in(p.compete_loss_low, 0.0, p.compete_loss_high)) {
    return bad("compete_loss_low", p.compete_loss_low, "in [0, compete_loss_high]");
  }
  if (!(std::isfinite(p.compete_gain) && p.compete_gain >= 1.0 && p.compete_gain <= 2.0)) {
    return bad("compete_gain", p.compete_gain, "in [1, 2]");
  }
  if (!(std::isfinite(p.pacing_gain) &&
        (p.pacing_gain == 0.0 || (p.pacing_gain >= 1.0 && p.pacing_gain <= 10.0)))) {
    return bad("pacing_gain", p.pacing_gain, "0 (off) or in [1, 10]");
  }
  if (!(std::isfinite(p.pacing_burst_bytes) && p.pacing_burst_bytes >= 0.0 &&
        p.pacing_burst_bytes <= CapacityParams::kMaxBurstBytes)) {
    return bad("pacing_burst_bytes", p.pacing_burst_bytes, "in [0, 1e6]");
  }
  if (!(std::isfinite(p.repaid_burst_bytes) && p.repaid_burst_bytes >= 0.0 &&
        p.repaid_burst_bytes <= CapacityParams::kMaxBurstBytes)) {
    return bad("repaid_burst_bytes", p.repaid_burst_bytes, "0 (off) or in (0, 1e6]");
  }
  if (!finite_in(p.alone_share, 0.0, 1.0)) return bad("alone_share", p.alone_share, "in [0, 1]");
  if (!finite_in(p.busy_queue_us, 0.0, p.queue_low_us)) {
    return bad("busy_queue_us", p.busy_queue_us, "in [0, queue_low_us]");
  }
  if (!(std::isfinite(p.min_dispersion_bytes) && p.min_dispersion_bytes >= 0.0)) {
    return bad("min_dispersion_bytes", p.min_dispersion_bytes, ">= 0");
  }
  if (!(std::isfinite(p.proof_bytes) && p.proof_bytes > 0.0)) {
    return bad("proof_bytes", p.proof_bytes, "> 0");
  }
  if (!(std::isfinite(p.proof_factor) && p.proof_factor >= 1.0)) {
    return bad("proof_factor", p.proof_factor, ">= 1");
  }
  if (!(std::isfinite(p.proof_queue_us) && p.proof_queue_us >= 0.0)) {
    return bad("proof_queue_us", p.proof_queue_us, ">= 0");
  }
  if (!(std::isfinite(p.burst_jitter_us) && p.burst_jitter_us >= 0.0)) {
    return bad("burst_jitter_us", p.burst_jitter_us, ">= 0");
  }
  if (p.release_stages < 1 || p.release_stages > 1000) {
    return bad("release_stages", p.release_stages, "in [1, 1000]");
  }
  if (!(std::isfinite(p.missing_backoff) && p.missing_backoff > 0.0 && p.missing_backoff <= 1.0)) {
    return bad("missing_backoff", p.missing_backoff, "in (0, 1]");
  }
  if (std::isnan(p.quality_floor)) {
    return make_error("control.capacity.quality_floor must be a number");
  }
  return Ok{};
}

}  // namespace predrop::core

#include "predrop/core/capacity_policy.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace predrop::core {

namespace {
// Below this R a stage counts as sent whole (the planner's rounding leaves a few packets).
constexpr double kWholeRate = 0.005;
// R must be at least this for a stage to tell how bytes and packets relate (beta).
constexpr double kBetaMinRate = 0.05;
// beta is kept in this range: a planner cannot remove more than 2x R's share of the bytes, and
// less than 0.2x would mean the discards are nearly empty packets.
constexpr double kBetaMin = 0.2;
constexpr double kBetaMax = 2.0;
constexpr double kBetaWeight = 0.5;

bool finite_in(double v, double lo, double hi) {
  return std::isfinite(v) && v >= lo && v <= hi;
}
}  // namespace

Status validate(const CapacityParams& p) {
  const auto bad = [](const char* name, double v, const char* range) {
    return make_error(std::string("control.") + name + " = " + std::to_string(v) + " must be " +
                      range);
  };
  if (!finite_in(p.rmax, 0.0, 1.0)) return bad("rmax", p.rmax, "in [0, 1]");
  if (!finite_in(p.initial_rate, 0.0, p.rmax)) return bad("r0", p.initial_rate, "in [0, rmax]");
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
  if (!(std::isfinite(p.probe_step_us) && p.probe_step_us >= 0.0)) {
    return bad("probe_step_ms", p.probe_step_us / 1000.0, ">= 0");
  }
  if (p.queue_ref_us + p.probe_step_us > p.queue_limit_us) {
    return bad("probe_step_ms", p.probe_step_us / 1000.0,
               "at most the queue limit minus queue_target_ms (a probe on a wrong sign must not "
               "lose)");
  }
  if (!(std::isfinite(p.probe_max_us) && p.probe_max_us >= p.probe_step_us &&
        p.probe_max_us <= 1e7)) {
    return bad("probe_max_ms", p.probe_max_us / 1000.0, "in [probe_step_ms, 10000]");
  }
  if (!finite_in(p.busy_queue_us, 0.0, p.queue_low_us)) {
    return bad("busy_queue_us", p.busy_queue_us, "in [0, queue_low_us]");
  }
  if (p.release_stages < 1 || p.release_stages > 1000) {
    return bad("release_stages", p.release_stages, "in [1, 1000]");
  }
  if (!(std::isfinite(p.missing_backoff) && p.missing_backoff > 0.0 && p.missing_backoff <= 1.0)) {
    return bad("missing_backoff", p.missing_backoff, "in (0, 1]");
  }
  if (std::isnan(p.quality_floor)) return make_error("control.quality_floor must be a number");
  return Ok{};
}

CapacityPolicy::CapacityPolicy(const CapacityParams& params)
    : params_(params), rate_(params.initial_rate) {}

double CapacityPolicy::clamp(double r) const {
  if (!std::isfinite(r)) return params_.rmax;
  return std::clamp(r, 0.0, params_.rmax);
}

const CapacityPolicy::Slot* CapacityPolicy::slot(std::uint32_t stage) const {
  const Slot& s = ring_[stage % kRing];
  return s.stage == stage ? &s : nullptr;
}

bool CapacityPolicy::bytes_sent(std::uint32_t stage, double& bytes) const {
  const Slot* s = slot(stage);
  const Slot* n = stage == UINT32_MAX ? nullptr : slot(stage + 1);
  if (s == nullptr || n == nullptr || n->bytes_before < s->bytes_before) return false;
  bytes = static_cast<double>(n->bytes_before - s->bytes_before);
  return true;
}

double CapacityPolicy::probe_gain() const {
  // Two levels. A first sign of spare capacity (an idle bottleneck where the model expected a
  // queue: one noisy reading can look like that) buys probes of probe_step_us, which the queue
  // absorbs without loss if the sign was wrong. A probe that comes back with the queue still empty
  // confirms it: from then on every stage is planned at up to probe_max_us on top (BBR's startup,
  // x2 of the estimate per block at 1 s blocks), until a report shows the bottleneck busy.
  switch (probe_level_) {
    case ProbeLevel::kNone:
      return force_probe_ ? params_.probe_step_us : 0.0;
    case ProbeLevel::kSign:
      return params_.probe_step_us;
    case ProbeLevel::kConfirmed:
      return params_.probe_max_us;
  }
  return 0.0;
}

void CapacityPolicy::reset_probing() {
  probe_level_ = ProbeLevel::kNone;
  release_run_ = 0;
}

double CapacityPolicy::plan(double block_bytes, double duration_us, bool probe) {
  if (!limited_ || capacity_ <= 0.0 || block_bytes <= 0.0 || duration_us <= 0.0) {
    return clamp(params_.initial_rate);
  }
  // NADA-style: send the capacity and steer the modelled queue to the reference within this
  // block (give back what stands above it, fill up to it when below: a standing queue keeps
  // every stage a measurement of the capacity).
  double x = params_.margin * capacity_ * duration_us -
             capacity_ * (predicted_queue_us_ - params_.queue_ref_us);
  if (probe) x += probe_gain() * capacity_;
  const double keep = x / block_bytes;  // byte share of the block to send
  return clamp((1.0 - keep) / beta_);
}

double CapacityPolicy::rate_for_next(const StageStart& next) {
  Slot& s = ring_[next.stage % kRing];
  s = Slot{next.stage,
           static_cast<double>(next.block_bytes),
           next.block_duration_us,
           next.bytes_before,
           0.0,
           capacity_,
           false};
  last_block_bytes_ = s.block_bytes;
  last_duration_us_ = s.duration_us;

  // The queue the model expects when this stage starts: the last reported one, plus what the
  // stages sent since then add at the estimated capacity (their bytes are known exactly).
  // Once a probe confirmed spare capacity the probes in flight are expected to be carried, so
  // they are not counted as queue (counting them would give back every other probe); on a mere
  // sign they are (if the sign was wrong, the next stage must not fill up on top of the probe).
  double q = has_report_ ? last_queue_us_ : 0.0;
  if (has_report_ && capacity_ > 0.0 && probe_level_ != ProbeLevel::kConfirmed &&
      next.stage > last_report_stage_ + 1) {
    for (std::uint32_t j = last_report_stage_ + 1; j < next.stage; ++j) {
      double b = 0.0;
      const Slot* sj = slot(j);
      if (sj == nullptr || !bytes_sent(j, b)) continue;
      q = std::clamp(q + b / capacity_ - sj->duration_us, 0.0, params_.queue_limit_us);
    }
  }
  predicted_queue_us_ = q;

  const double normal = plan(s.block_bytes, s.duration_us, false);
  // On a mere sign, one probe at a time: the stage before must not be an unreported probe, so a
  // wrong sign adds probe_step_us of queue once, not once per stage in flight.
  const Slot* prev = next.stage == 0 ? nullptr : slot(next.stage - 1);
  const bool one_in_flight = probe_level_ == ProbeLevel::kSign && prev != nullptr && prev->probe &&
                             (!has_report_ || last_report_stage_ < next.stage - 1);
  const bool probe = limited_ && capacity_ > 0.0 && probe_gain() > 0.0 && !one_in_flight &&
                     plan(s.block_bytes, s.duration_us, true) < normal;
  rate_ = probe ? plan(s.block_bytes, s.duration_us, true) : normal;
  if (probe) force_probe_ = false;
  s.rate = rate_;
  s.probe = probe;
  s.confirmed = probe_level_ == ProbeLevel::kConfirmed;
  return rate_;
}

void CapacityPolicy::note_congestion(double sample) {
  limited_ = true;
  capacity_ = sample > 0.0 ? sample : capacity_ * params_.missing_backoff;
  reset_probing();
}

Decision CapacityPolicy::decide(const StageReport& report) {
  missing_run_ = 0;
  const Slot* s = slot(report.stage);
  const bool hook = s != nullptr && s->block_bytes > 0.0 && s->duration_us > 0.0;
  const double used = report.rate_used ? *report.rate_used : (s != nullptr ? s->rate : rate_);
  double loss = report.network_loss();
  if (report.packets_announced > 0 && report.packets_received == 0) loss = 1.0;
  const double period = report.reception_period_us;

  // Without the sender's hook a block is one unit of bytes and T the base reception period.
  const double block = hook ? s->block_bytes : 1.0;
  const double t = hook ? s->duration_us : (base_period_us_ > 0.0 ? base_period_us_ : period);
  double sent = 0.0;
  const bool known = hook && bytes_sent(report.stage, sent);
  if (known) {
    if (used >= kBetaMinRate && block > 0.0) {
      const double sample = std::clamp((1.0 - sent / block) / used, kBetaMin, kBetaMax);
      beta_ = kBetaWeight * beta_ + (1.0 - kBetaWeight) * sample;
    }
  } else {
    sent = block * std::fmax(0.0, 1.0 - beta_ * used);
  }

  // Queueing delay: the receiver's, or (no timestamps) the stretch of L over the base period.
  double q = 0.0;
  if (report.queue_delay_us) {
    q = std::fmax(0.0, *report.queue_delay_us);
  } else if (base_period_us_ > 0.0) {
    q = std::fmax(0.0, period - base_period_us_);
  }
  const double q_before = has_report_ ? last_queue_us_ : 0.0;
  const double growth = q - q_before;
  // The queue the model expected this stage to leave, from the previous stage's (when that was
  // the last report) and this one's bytes at the estimated capacity.
  const bool follows = has_report_ && report.stage == last_report_stage_ + 1;

  const bool overuse =
      loss > params_.loss_threshold || q > params_.queue_high_us || growth > params_.queue_grow_us;
  const bool clean = loss <= params_.clean_loss && q <= params_.queue_low_us;
  if (!report.queue_delay_us && clean && period > 0.0 && !hook) {
    base_period_us_ = base_period_us_ > 0.0 ? std::fmin(base_period_us_, period) : period;
  }
  const double delivered = sent * (1.0 - loss);
  std::string_view reason;
  // The queue the next plans start from: the reading, except below the model's expectation after
  // an idle non-probe stage (see the clean branch).
  double queue_state = q;

  const bool busy = q > params_.busy_queue_us;
  // Capacity sample of a busy stage. Between the last packets of two consecutive stages the
  // sender sent exactly this stage's bytes over T, and the queue changed by `growth`, so the
  // bottleneck carried them in T + growth (the two queue readings share the receiver's base, so
  // its error cancels). D / L would overestimate by the gap between a block's last packet and
  // its end (a frame interval, ~3 % at 1 s blocks: 30 ms of queue per block).
  double sample = period > 0.0 ? delivered / period : 0.0;
  if (follows && t + growth > 0.5 * t) sample = delivered / (t + growth);
  // Against the estimate the stage was planned with: a later raise by the max filter must not
  // hide that the stage carried more than that.
  const double planned_with = s != nullptr && s->capacity > 0.0 ? s->capacity : capacity_;
  const double expected =
      follows && planned_with > 0.0
          ? std::clamp(q_before + sent / planned_with - t, 0.0, params_.queue_limit_us)
          : 0.0;

  if (overuse) {
    // GCC: on overuse the estimate becomes the received rate (while the queue stays busy it is
    // the capacity itself).
    note_congestion(sample);
    reason = loss > params_.loss_threshold ? "network loss: capacity = received rate"
                                           : "queue building: capacity = received rate";
  } else if (busy && probe_level_ == ProbeLevel::kConfirmed && s != nullptr && !s->confirmed) {
    // Confirmed spare capacity, and this stage was planned before the confirmation, at the old
    // estimate: a few ms of queue at its end (one packet is 6-15 ms at 0.8-1.6 Mbit/s) is no news
    // about the capacity the startup probes are finding, and must not stop them. Only a stage
    // planned with the startup gain can (by a standing queue or overuse).
    reason = "queue standing in a stage planned before the confirmation: probing goes on";
  } else if (busy) {
    // A queue at the stage's end without overuse: the bottleneck was busy, and the sample
    // measures the capacity (up or down).
    if (limited_ && sample > 0.0) capacity_ = sample;
    reset_probing();
    reason = "queue standing: capacity = delivery rate";
  } else if (clean) {
    // The bottleneck went idle: capacity is at least what was delivered (BBR's max filter; paced
    // stages are spread over T, so max(L, T) keeps the sample a lower bound).
    const double span = std::fmax(period, t);
    if (span > 0.0) capacity_ = std::fmax(capacity_, delivered / span);
    const bool probed = s != nullptr && s->probe;
    // An idle end is only a sign of spare capacity: on the bed a block often ends in a frame gap
    // with the queue drained (the reading is the delay of the block's last packets, and a packet
    // is ~12 ms of queue at 800 kbit/s), and the model's own expectation is no better (1 % of
    // error in Ĉ is 10 ms of queue per block). So the next plans start from the expectation when
    // it is higher (such a reading must not make them fill the queue twice), and the sign buys
    // one small probe. A probe's idle end is believed: its extra bytes would have stood in the
    // queue had the capacity been Ĉ; that is the evidence.
    if (!probed && known) queue_state = std::fmax(q, expected);
    if (probed && limited_) {
      probe_level_ = ProbeLevel::kConfirmed;
      reason = "probe carried with the queue empty: capacity higher, probe x2";
    } else if (limited_) {
      if (probe_level_ == ProbeLevel::kNone) probe_level_ = ProbeLevel::kSign;
      reason = "bottleneck idle: sign of spare capacity, probe";
    } else {
      reason = "clean: no bottleneck";
    }
    if (limited_ && used <= kWholeRate) {
      if (++release_run_ >= params_.release_stages) {
        limited_ = false;
        reset_probing();
        reason = "whole stages delivered clean: bottleneck gone, R = r0";
      }
    }
  } else {
    reset_probing();
    reason = "small loss: estimate held";
  }
  if (loss <= params_.clean_loss && report.performance < params_.quality_floor && limited_) {
    force_probe_ = true;
    reason = "quality below the floor: probe next";
  }

  last_queue_us_ = queue_state;
  last_report_stage_ = report.stage;
  has_report_ = true;
  // The rate for the next stage as far as this report goes (the hook re-plans with the real
  // block size when the stage starts).
  const double t_next = last_duration_us_ > 0.0 ? last_duration_us_ : t;
  const double b_next = last_duration_us_ > 0.0 ? last_block_bytes_ : 1.0;
  predicted_queue_us_ = queue_state;
  rate_ = plan(b_next, t_next, false);
  return Decision{rate_, DecisionKind::kAdapt, reason, capacity_};
}

Decision CapacityPolicy::decide_missing(std::uint32_t /*stage*/) {
  // The first missing report is ignored; each further one in a row is read as congestion on the
  // way back (GCC's 0.85 without a sample to replace the estimate with).
  if (++missing_run_ < 2 || capacity_ <= 0.0) {
    return Decision{rate_, DecisionKind::kMissing, "no report: estimate kept", capacity_};
  }
  limited_ = true;
  capacity_ *= params_.missing_backoff;
  reset_probing();
  const double t_next = last_duration_us_ > 0.0 ? last_duration_us_ : base_period_us_;
  const double b_next = last_duration_us_ > 0.0 ? last_block_bytes_ : 1.0;
  rate_ = plan(b_next, t_next, false);
  return Decision{rate_, DecisionKind::kMissing, "reports missing: capacity x backoff", capacity_};
}

}  // namespace predrop::core

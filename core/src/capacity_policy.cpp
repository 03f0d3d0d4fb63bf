#include "predrop/core/capacity_policy.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace predrop::core {

namespace {
// Below this R a stage counts as sent whole (the planner's rounding leaves a few packets).
constexpr double kWholeRate = 0.005;
// The estimate after a clean block sent whole: this times its delivery rate.
constexpr double kWholeGain = 1.25;
// R must be at least this for a stage to tell how bytes and packets relate (beta).
constexpr double kBetaMinRate = 0.05;
// beta is kept in this range: a planner cannot remove more than 2x R's share of the bytes, and
// less than 0.2x would mean the discards are nearly empty packets.
constexpr double kBetaMin = 0.2;
constexpr double kBetaMax = 2.0;
constexpr double kBetaWeight = 0.5;
// A block whose packet pairs dispersed at less than this multiple of the stream's rate has a
// bottleneck, whatever its largest burst did (on the open bed the only dispersed pairs are a
// forwarding stall's, at 100+ Mbit/s; behind 2460 kbit/s shared by three sessions a 5 kB burst
// crossed undispersed while the block's pairs dispersed at 2460 kbit/s).
constexpr double kNoiseDispersion = 10.0;
// Probes capped (a tenth of the queue) for this many rounds before they may double.
constexpr unsigned kCappedProbes = 4;

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
               "at most the queue limit minus queue_target_ms (a first probe into a full path "
               "must not lose)");
  }
  if (!(std::isfinite(p.probe_max_us) && p.probe_max_us >= p.probe_step_us &&
        p.probe_max_us <= 1e7)) {
    return bad("probe_max_ms", p.probe_max_us / 1000.0, "in [probe_step_ms, 10000]");
  }
  if (!finite_in(p.busy_queue_us, 0.0, p.queue_low_us)) {
    return bad("busy_queue_us", p.busy_queue_us, "in [0, queue_low_us]");
  }
  if (!(std::isfinite(p.min_dispersion_bytes) && p.min_dispersion_bytes >= 0.0)) {
    return bad("min_dispersion_bytes", p.min_dispersion_bytes, ">= 0");
  }
  if (!(std::isfinite(p.proof_bytes) && p.proof_bytes > 0.0)) {
    return bad("proof_bytes", p.proof_bytes, "> 0");
  }
  if (!finite_in(p.alone_share, 0.0, 1.0)) return bad("alone_share", p.alone_share, "in [0, 1]");
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

double CapacityPolicy::plan(double block_bytes, double duration_us) const {
  return plan(block_bytes, duration_us, 0, {});
}

double CapacityPolicy::plan(double block_bytes, double duration_us, std::uint32_t packets,
                            std::span<const std::uint64_t> removable) const {
  if (!limited_ || capacity_ <= 0.0 || block_bytes <= 0.0 || duration_us <= 0.0) {
    return clamp(params_.initial_rate);
  }
  // NADA-style: send what the estimate carries in the block's time (less the idle margin) and
  // give back the queue the model expects above the reference when the block starts. A probe
  // rides on top of the estimate.
  const double x = params_.margin * capacity_ * duration_us -
                   capacity_ * (predicted_queue_us_ - params_.queue_ref_us) + probe_bytes();
  return rate_keeping(x, block_bytes, packets, removable);
}

double CapacityPolicy::rate_keeping(double keep, double bytes, std::uint32_t packets,
                                    std::span<const std::uint64_t> removable) const {
  if (packets > 0 && removable.size() > 1) {
    // The sender's discard order: the fewest packets whose discard removes what must go.
    const double remove = bytes - keep;
    if (remove <= 0.0) return clamp(0.0);
    // More than the whole curve removes (also a budget below zero from absurd readings, which
    // would not fit the cast below): every droppable packet.
    if (!(remove <= static_cast<double>(removable.back()))) {
      return clamp(static_cast<double>(removable.size() - 1) / static_cast<double>(packets));
    }
    const auto it = std::lower_bound(removable.begin(), removable.end(),
                                     static_cast<std::uint64_t>(std::ceil(remove)));
    const auto k = static_cast<double>(std::min<std::ptrdiff_t>(
        it - removable.begin(), static_cast<std::ptrdiff_t>(removable.size()) - 1));
    return clamp(k / static_cast<double>(packets));
  }
  return clamp((1.0 - keep / bytes) / beta_);
}

double CapacityPolicy::probe_bytes() const {
  // With the bottleneck's rate known (dispersion), a probe is probe_us_ of the part of it this
  // session does not use: a session with a smaller share probes more, so that sessions that
  // probe and are cut back in proportion (the received rate) drift toward equal shares (the
  // restoring force that proportional cuts alone lack); else probe_us_ of the estimate.
  if (dispersion_ <= 0.0) return probe_us_ * capacity_;
  return probe_us_ * std::fmax(0.0, dispersion_ - capacity_);
}

double CapacityPolicy::queue_at_start(std::uint32_t stage) const {
  // The last reported end-of-stage queue, plus what the stages sent since then add at the
  // estimated capacity (their bytes are known exactly once the next one started).
  double q = has_report_ ? last_queue_us_ : 0.0;
  if (has_report_ && capacity_ > 0.0 && stage > last_report_stage_ + 1) {
    for (std::uint32_t j = last_report_stage_ + 1; j < stage; ++j) {
      double b = 0.0;
      const Slot* sj = slot(j);
      if (sj == nullptr || !bytes_sent(j, b)) continue;
      q = std::clamp(q + b / capacity_ - sj->duration_us, 0.0, params_.queue_limit_us);
    }
  }
  return q;
}

double CapacityPolicy::rate_for_next(const StageStart& next) {
  Slot& s = ring_[next.stage % kRing];
  s = Slot{next.stage, static_cast<double>(next.block_bytes), next.block_duration_us,
           next.bytes_before, 0.0};
  last_block_bytes_ = s.block_bytes;
  last_duration_us_ = s.duration_us;
  predicted_queue_us_ = queue_at_start(next.stage);
  rate_ = plan(s.block_bytes, s.duration_us, next.packets, next.removable);
  s.rate = rate_;
  return rate_;
}

std::optional<double> CapacityPolicy::rate_for_rest(const StageProgress& p) {
  const Slot* s = slot(p.stage);
  if (s == nullptr || p.rest_bytes == 0 || p.duration_us <= 0.0 || p.elapsed_us >= p.duration_us) {
    return std::nullopt;
  }
  double r = clamp(params_.initial_rate);
  if (limited_ && capacity_ > 0.0) {
    // The same plan for what is left: the time left at the estimate (less the margin), less the
    // queue the model expects now (at the stage's start, plus its bytes so far at Ĉ, minus the
    // time gone). The report that triggers this usually is the previous stage's, whose end queue
    // is this stage's start queue.
    const double left = p.duration_us - p.elapsed_us;
    const double q_now = std::clamp(
        queue_at_start(p.stage) + static_cast<double>(p.sent_bytes) / capacity_ - p.elapsed_us, 0.0,
        params_.queue_limit_us);
    const double x = params_.margin * capacity_ * left -
                     capacity_ * (q_now - params_.queue_ref_us) + probe_bytes();
    r = rate_keeping(x, static_cast<double>(p.rest_bytes), p.rest_packets, p.removable);
  }
  // Only a change the model is sure of: after a report of congestion (a queue or loss to give
  // back) any change, else only a large one: the rest's packets have no key frame, so its byte
  // share per discarded packet is not the block's beta, and small corrections would only move R
  // around (measured on the bed: every block re-planned upward by 0.03-0.05, R 0.06 too high).
  const double step = congested_ ? kReplanStepCongested : kReplanStep;
  if (std::fabs(r - p.rate) < step) return std::nullopt;
  return r;
}

void CapacityPolicy::raise_to(double estimate) {
  // Never above the bottleneck's own rate when it is known.
  if (dispersion_ > 0.0) estimate = std::fmin(estimate, dispersion_);
  capacity_ = std::fmax(capacity_, estimate);
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

  // Queueing delay at the stage's end: the receiver's reading, or (no timestamps) the stretch of
  // L over the base period. It is what the next stage starts on, and with its growth it turns
  // the delivered bytes into the received rate.
  const PathMeasurement* path = report.path ? &*report.path : nullptr;
  double q = 0.0;
  if (report.queue_delay_us) {
    q = std::fmax(0.0, *report.queue_delay_us);
  } else if (base_period_us_ > 0.0) {
    q = std::fmax(0.0, period - base_period_us_);
  }
  const double growth = q - (has_report_ ? last_queue_us_ : 0.0);
  // The queue that stood through the whole stage (PDFB v1.1: the smallest per-packet delay),
  // for the congestion signals: with several sessions the end-of-stage reading often lands on
  // another one's key frame (measured on the bed: one session of three read a growing queue at
  // every block's end and its estimate fell to a third of its share), the standing queue does
  // not. Without v1.1, the end-of-stage reading.
  const double stand =
      path != nullptr && hook && report.queue_delay_us ? std::fmax(0.0, path->queue_min_us) : q;
  const double stand_growth = stand - (has_report_ ? last_stand_us_ : 0.0);
  last_stand_us_ = stand;
  const bool follows = has_report_ && report.stage == last_report_stage_ + 1;
  const bool overuse = loss > params_.loss_threshold || stand > params_.queue_high_us ||
                       stand_growth > params_.queue_grow_us;
  const bool clean = loss <= params_.clean_loss && stand <= params_.queue_low_us;
  const bool busy = stand > params_.busy_queue_us;
  // The bottleneck was still busy when the stage's last packets left it.
  const bool busy_end = busy || q > params_.busy_queue_us;
  if (!report.queue_delay_us && clean && period > 0.0 && !hook) {
    base_period_us_ = base_period_us_ > 0.0 ? std::fmin(base_period_us_, period) : period;
  }

  // Delivered bytes: counted by the receiver (v1.1) in the sender's unit when the hook gave
  // link bytes, else what was sent less the loss.
  const double delivered =
      path != nullptr && hook ? static_cast<double>(path->bytes_received) : sent * (1.0 - loss);
  // The bottleneck's rate by dispersion, and whether the stage's largest burst crossed at its
  // send rate (see the file comment).
  double fresh_dispersion = 0.0;  // this report's, if any
  if (path != nullptr && hook &&
      static_cast<double>(path->dispersion_bytes) >= params_.min_dispersion_bytes &&
      path->dispersion_us > 0) {
    fresh_dispersion =
        static_cast<double>(path->dispersion_bytes) / static_cast<double>(path->dispersion_us);
    dispersion_ = fresh_dispersion;
  }
  double proven = 0.0;
  if (path != nullptr && hook && static_cast<double>(path->burst_bytes) >= params_.proof_bytes &&
      path->queue_max_us <= params_.proof_queue_us &&
      static_cast<double>(path->burst_arrival_us) <=
          static_cast<double>(path->burst_send_us) + params_.burst_jitter_us) {
    proven = static_cast<double>(path->burst_bytes) /
             std::fmax(static_cast<double>(path->burst_send_us), params_.burst_jitter_us);
  }

  // The received rate: between the last packets of two consecutive stages the sender sent
  // exactly this stage's bytes over T and the queue changed by `growth`, so the bottleneck
  // carried them in T + growth (the two queue readings share the receiver's base). D / L would
  // be a few % high: L ends a frame interval before the block does.
  double received = period > 0.0 ? delivered / period : 0.0;
  if (follows && hook && t + growth > 0.5 * t) received = delivered / (t + growth);
  if (dispersion_ > 0.0) received = std::fmin(received, dispersion_);

  std::string_view reason;
  congested_ = overuse || busy;
  if (overuse && (busy_end || stand_growth > params_.queue_grow_us)) {
    // GCC: the estimate becomes the received rate (the session's share under tail drop, the
    // bottleneck being busy to the block's end). Alone on it (the share is nearly all of the
    // dispersion rate) the estimate is the dispersion rate itself; a clearly smaller share means
    // other traffic (hysteresis: entered at alone_share, left below alone_share - 0.15).
    limited_ = true;
    if (received > 0.0) capacity_ = received;
    if (dispersion_ > 0.0 && received > 0.0) {
      if (received >= params_.alone_share * dispersion_) alone_ = true;
      if (received < (params_.alone_share - 0.15) * dispersion_) alone_ = false;
    }
    if (alone_ && dispersion_ > 0.0) capacity_ = dispersion_;
    probe_us_ = 0.0;
    clean_probes_ = 0;
    release_run_ = 0;
    reason = loss > params_.loss_threshold ? "network loss: capacity = received rate"
                                           : "queue building: capacity = received rate";
  } else if (overuse) {
    // Loss in a block that ended with the queue empty: the bottleneck was not busy to the end,
    // so the received rate is only a lower bound (e.g. a block planned to drain the queue whose
    // key frame met the old one). GCC's loss controller instead: x (1 - loss / 2).
    limited_ = true;
    if (alone_ && dispersion_ > 0.0) {
      capacity_ = dispersion_;
    } else {
      if (dispersion_ > 0.0) capacity_ = std::fmin(capacity_, dispersion_);
      if (capacity_ <= 0.0) capacity_ = received;
      capacity_ *= 1.0 - 0.5 * loss;
    }
    probe_us_ = 0.0;
    clean_probes_ = 0;
    release_run_ = 0;
    reason = "loss, queue empty at the end: capacity x (1 - loss / 2)";
  } else if (clean && proven > 0.0 && proven >= params_.proof_factor * block / std::fmax(t, 1.0) &&
             !(fresh_dispersion > 0.0 &&
               fresh_dispersion < kNoiseDispersion * block / std::fmax(t, 1.0))) {
    // The key frame crossed at its send rate, well above the stream's, and no pair of the block
    // dispersed at a rate a bottleneck would have: no bottleneck.
    limited_ = false;
    alone_ = false;
    capacity_ = std::fmax(capacity_, proven);
    probe_us_ = 0.0;
    release_run_ = 0;
    reason = "burst crossed undispersed: bottleneck gone, R = r0";
  } else if (busy && limited_) {
    // A queue at the block's end: the bottleneck was busy to the end, and the received rate is
    // the session's share of it (up or down).
    capacity_ = alone_ && dispersion_ > 0.0 ? dispersion_ : (received > 0.0 ? received : capacity_);
    probe_us_ = 0.0;
    clean_probes_ = 0;
    reason = alone_ ? "queue standing, alone: capacity = dispersion rate"
                    : "queue standing: capacity = received rate";
  } else if (clean && limited_) {
    // The bottleneck went idle before the block's end: capacity is at least what was delivered
    // (BBR's max filter; paced stages are spread over T, so max(L, T) keeps it a lower bound),
    // and the estimate is what the plan sends margin of.
    const double span = std::fmax(period, t);
    if (span > 0.0) raise_to(delivered / (params_.margin * span));
    // A block sent whole went through with the bottleneck idle at its end: the stream's next
    // blocks, up to 25 % larger (BBR's probing gain), will too, so they go whole as well.
    if (span > 0.0 && used <= kWholeRate) raise_to(kWholeGain * delivered / span);
    if (alone_ && dispersion_ > 0.0) {
      // Alone on the bottleneck: its rate, up or down, is the estimate.
      capacity_ = dispersion_;
      probe_us_ = 0.0;
      reason = "bottleneck idle, alone: capacity = dispersion rate";
    } else if (dispersion_ > 0.0 && capacity_ >= dispersion_) {
      reason = "bottleneck idle at the estimate = its rate: no probe";
    } else {
      // Spare capacity is possible: probe, doubling while probes come back clean (BBR).
      // Spare capacity may be there because other traffic left (an unresponsive burst ended), or
      // it may be other sessions' share, which they are about to use again: a probe that finds
      // them must show as a standing queue before it loses, also when several sessions probe in
      // the same block, so the first kCappedProbes probes take at most a tenth of the queue
      // each. Once that many came back clean, nobody is claiming the room: double (BBR).
      ++clean_probes_;
      probe_us_ = probe_us_ <= 0.0 ? params_.probe_step_us
                                   : std::fmin(2.0 * probe_us_, params_.probe_max_us);
      if (clean_probes_ <= kCappedProbes) {
        probe_us_ = std::fmin(probe_us_, 0.1 * params_.queue_limit_us);
      }
      if (dispersion_ > 0.0 && capacity_ > 0.0) {
        // Never above the bottleneck's own rate.
        probe_us_ = std::fmin(probe_us_, t * (1.0 - params_.margin * capacity_ / dispersion_));
      }
      reason = "bottleneck idle: probe";
    }
    if (used <= kWholeRate && path == nullptr && ++release_run_ >= params_.release_stages) {
      // Without path measurements: whole blocks delivered clean end the episode.
      limited_ = false;
      probe_us_ = 0.0;
      reason = "whole stages delivered clean: bottleneck gone, R = r0";
    }
  } else if (!limited_) {
    reason = "clean: no bottleneck";
  } else {
    probe_us_ = 0.0;
    clean_probes_ = 0;
    reason = "small loss: estimate held";
  }
  if (loss <= params_.clean_loss && report.performance < params_.quality_floor && limited_) {
    probe_us_ = std::fmax(probe_us_, params_.probe_step_us);
    reason = "quality below the floor: probe next";
  }

  last_queue_us_ = q;
  last_report_stage_ = report.stage;
  has_report_ = true;
  // The rate for the next stage as far as this report goes (the hook re-plans with the real
  // block size when the stage starts).
  predicted_queue_us_ = q;
  const double t_next = last_duration_us_ > 0.0 ? last_duration_us_ : t;
  const double b_next = last_duration_us_ > 0.0 ? last_block_bytes_ : 1.0;
  rate_ = plan(b_next, t_next);
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
  probe_us_ = 0.0;
  const double t_next = last_duration_us_ > 0.0 ? last_duration_us_ : base_period_us_;
  const double b_next = last_duration_us_ > 0.0 ? last_block_bytes_ : 1.0;
  rate_ = plan(b_next, t_next);
  return Decision{rate_, DecisionKind::kMissing, "reports missing: capacity x backoff", capacity_};
}

}  // namespace predrop::core

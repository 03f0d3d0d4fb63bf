#include "predrop/core/capacity_policy.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace predrop::core {

namespace {
// A dispersion rate this much above the one at the last overuse: the bottleneck grew.
constexpr double kGrownDispersion = 1.2;
// Dispersion readings count as steady (the session alone on the bottleneck) when at least this
// many recent ones all lie within this fraction of the largest.
constexpr unsigned kSteadyReadings = 2;
constexpr double kSteadySpread = 0.85;
// The zone above the rate of the last overuse that is probed slowly before it counts as passed.
constexpr double kLimitZone = 1.25;
// Clean blocks in a row after which the rate of the last overuse no longer holds the estimate
// to additive steps (an AIMD cycle between overuses of sessions sharing a bottleneck is 3-4
// blocks): from any state, a clean path brings the estimate up geometrically after this.
constexpr unsigned kStaleLimitBlocks = 5;
// Clean blocks in a row without a dispersion reading after which the old readings are dropped.
constexpr unsigned kStaleDispersionBlocks = 3;
// An estimate at this share of the bottleneck's measured rate is at it.
constexpr double kAtBottleneck = 0.9;
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
        p.pacing_burst_bytes <= 1e6)) {
    return bad("pacing_burst_bytes", p.pacing_burst_bytes, "in [0, 1e6]");
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
  if (std::isnan(p.quality_floor)) return make_error("control.quality_floor must be a number");
  return Ok{};
}

CapacityPolicy::CapacityPolicy(const CapacityParams& params)
    : params_(params), rate_(params.initial_rate) {}

double CapacityPolicy::clamp(double r) const {
  if (!std::isfinite(r)) return params_.rmax;
  return std::clamp(r, 0.0, params_.rmax);
}

CapacityPolicy::Slot* CapacityPolicy::slot(std::uint32_t stage) {
  Slot& s = ring_[stage % kRing];
  return s.stage == stage ? &s : nullptr;
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

double CapacityPolicy::queue_to_drain(double q) const {
  // In compete mode the standing queue is another flow's: giving it back only cedes the link.
  return mode_ == Mode::kCompete ? 0.0 : q - params_.queue_ref_us;
}

double CapacityPolicy::plan(double block_bytes, double duration_us) const {
  return plan(block_bytes, duration_us, 0, {});
}

double CapacityPolicy::plan(double block_bytes, double duration_us, std::uint32_t packets,
                            std::span<const std::uint64_t> removable) const {
  if (mode_ == Mode::kOpen || capacity_ <= 0.0 || block_bytes <= 0.0 || duration_us <= 0.0) {
    return clamp(params_.initial_rate);
  }
  // NADA-style: send what the estimate carries in the block's time (less the idle margin) and
  // give back the queue the model expects above the reference when the block starts.
  const double x =
      params_.margin * capacity_ * duration_us - capacity_ * queue_to_drain(predicted_queue_us_);
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
  s = Slot{next.stage,
           static_cast<double>(next.block_bytes),
           next.block_duration_us,
           next.bytes_before,
           0.0,
           false};
  last_block_bytes_ = s.block_bytes;
  last_duration_us_ = s.duration_us;
  if (s.duration_us > 0.0) {
    const double r = s.block_bytes / s.duration_us;
    stream_rate_ = stream_rate_ > 0.0 ? 0.9 * stream_rate_ + 0.1 * r : r;
  }
  predicted_queue_us_ = queue_at_start(next.stage);
  rate_ = plan(s.block_bytes, s.duration_us, next.packets, next.removable);
  s.rate = rate_;
  // What the block keeps at that R (its least sendable part may be above the estimate: key
  // frames and audio are never discarded): the pacing must carry it within the block.
  block_floor_rate_ = 0.0;
  if (next.packets > 0 && next.removable.size() > 1 && s.duration_us > 0.0) {
    const auto k = std::min<std::size_t>(
        static_cast<std::size_t>(std::lround(rate_ * next.packets)), next.removable.size() - 1);
    block_floor_rate_ =
        (s.block_bytes - static_cast<double>(next.removable[k])) / (0.9 * s.duration_us);
  }
  s.drains = mode_ == Mode::kDelay && congested_;
  s.estimate = capacity_;
  return rate_;
}

std::optional<double> CapacityPolicy::rate_for_rest(const StageProgress& p) {
  Slot* s = slot(p.stage);
  if (s == nullptr || p.rest_bytes == 0 || p.duration_us <= 0.0 || p.elapsed_us >= p.duration_us) {
    return std::nullopt;
  }
  double r = clamp(params_.initial_rate);
  if (mode_ != Mode::kOpen && capacity_ > 0.0) {
    // The same plan for what is left: the time left at the estimate (less the margin), less the
    // queue the model expects now (at the stage's start, plus its bytes so far at Ĉ, minus the
    // time gone). The report that triggers this usually is the previous stage's, whose end queue
    // is this stage's start queue.
    const double left = p.duration_us - p.elapsed_us;
    const double q_now = std::clamp(
        queue_at_start(p.stage) + static_cast<double>(p.sent_bytes) / capacity_ - p.elapsed_us, 0.0,
        params_.queue_limit_us);
    const double x = params_.margin * capacity_ * left - capacity_ * queue_to_drain(q_now);
    r = rate_keeping(x, static_cast<double>(p.rest_bytes), p.rest_packets, p.removable);
  }
  // Only a change the model is sure of: after a report of congestion (a queue or loss to give
  // back) any change, else only a large one: the rest's packets have no key frame, so its byte
  // share per discarded packet is not the block's beta, and small corrections would only move R
  // around (measured on the bed: every block re-planned upward by 0.03-0.05, R 0.06 too high).
  const double step = congested_ ? kReplanStepCongested : kReplanStep;
  if (std::fabs(r - p.rate) < step) return std::nullopt;
  if (mode_ == Mode::kDelay && congested_) s->drains = true;
  return r;
}

std::optional<PacingLimit> CapacityPolicy::pacing() const {
  if (mode_ == Mode::kOpen || capacity_ <= 0.0 || params_.pacing_gain <= 0.0) return std::nullopt;
  return PacingLimit{params_.pacing_gain * std::fmax(capacity_, block_floor_rate_),
                     params_.pacing_burst_bytes};
}

void CapacityPolicy::raise_to(double estimate) {
  // Never above the bottleneck's own rate when it is known.
  if (dispersion_ > 0.0) estimate = std::fmin(estimate, dispersion_);
  capacity_ = std::fmax(capacity_, estimate);
}

struct CapacityPolicy::Reading {
  const Slot* slot = nullptr;
  bool hook = false;      ///< The sender told the block's size (rate_for_next).
  bool has_path = false;  ///< PDFB v1.1 path measurements, with the hook.
  double used = 0;        ///< R the block went with.
  bool whole = false;     ///< Sent whole (R ~ 0): the estimate did not limit it.
  double loss = 0;
  double period = 0;
  double block = 0;  ///< Its bytes (1 without the hook).
  double t = 0;      ///< Its duration (the base period without the hook).
  double sent = 0;
  double delivered = 0;
  double q = 0;           ///< Queue at its end.
  double stand = 0;       ///< Queue that stood through it.
  double prev_stand = 0;  ///< ... through the stage reported before.
  double stand_growth = 0;
  bool overuse = false;
  bool clean = false;
  bool busy = false;
  bool busy_end = false;
  double received = 0;
  double fresh_dispersion = 0;
  double proven = 0;
};

CapacityPolicy::Reading CapacityPolicy::read(const StageReport& report) {
  Reading x;
  x.slot = slot(report.stage);
  const Slot* s = x.slot;
  x.hook = s != nullptr && s->block_bytes > 0.0 && s->duration_us > 0.0;
  x.used = report.rate_used ? *report.rate_used : (s != nullptr ? s->rate : rate_);
  x.whole = x.used <= kWholeRate;
  x.loss = report.network_loss();
  if (report.packets_announced > 0 && report.packets_received == 0) x.loss = 1.0;
  x.period = report.reception_period_us;

  // Without the sender's hook a block is one unit of bytes and T the base reception period.
  x.block = x.hook ? s->block_bytes : 1.0;
  x.t = x.hook ? s->duration_us : (base_period_us_ > 0.0 ? base_period_us_ : x.period);
  const bool known = x.hook && bytes_sent(report.stage, x.sent);
  if (known) {
    if (x.used >= kBetaMinRate && x.block > 0.0) {
      const double sample = std::clamp((1.0 - x.sent / x.block) / x.used, kBetaMin, kBetaMax);
      beta_ = kBetaWeight * beta_ + (1.0 - kBetaWeight) * sample;
    }
  } else {
    x.sent = x.block * std::fmax(0.0, 1.0 - beta_ * x.used);
  }

  // Queueing delay at the stage's end: the receiver's reading, or (no timestamps) the stretch of
  // L over the base period. It is what the next stage starts on, and with its growth it turns
  // the delivered bytes into the received rate.
  const PathMeasurement* path = report.path ? &*report.path : nullptr;
  x.has_path = path != nullptr && x.hook;
  if (report.queue_delay_us) {
    x.q = std::fmax(0.0, *report.queue_delay_us);
  } else if (base_period_us_ > 0.0) {
    x.q = std::fmax(0.0, x.period - base_period_us_);
  }
  const double growth = x.q - (has_report_ ? last_queue_us_ : 0.0);
  // The queue that stood through the whole stage (PDFB v1.1: the smallest per-packet delay),
  // for the congestion signals: with several sessions the end-of-stage reading often lands on
  // another one's key frame, the standing queue does not. Without v1.1, the end-of-stage reading.
  x.stand = x.has_path && report.queue_delay_us ? std::fmax(0.0, path->queue_min_us) : x.q;
  x.prev_stand = has_report_ ? last_stand_us_ : 0.0;
  x.stand_growth = x.stand - x.prev_stand;
  last_stand_us_ = x.stand;
  const bool follows = has_report_ && report.stage == last_report_stage_ + 1;
  // Overuse: loss, a queue that stood through the block or grew under it, or one the block
  // ended on (built within the block: the standing queue does not show that yet).
  // A queue the block ended on but that did not stand through it was built within the block:
  // by this session if the block went faster than the one before (a probe), else by someone
  // else's burst (a short TCP transfer's slow start), which counts only if it stays.
  const Slot* prev = s != nullptr && report.stage > 0 ? slot(report.stage - 1) : nullptr;
  const bool probed = s != nullptr && prev != nullptr && s->estimate > prev->estimate * 1.001;
  const bool end_queue = x.q > params_.queue_high_us && (probed || last_end_high_ || !x.hook);
  last_end_high_ = x.q > params_.queue_high_us;
  x.overuse = x.loss > params_.loss_threshold || x.stand > params_.queue_high_us ||
              x.stand_growth > params_.queue_grow_us || end_queue;
  x.clean = x.loss <= params_.clean_loss && x.stand <= params_.queue_low_us &&
            x.q <= params_.queue_low_us;
  x.busy = x.stand > params_.busy_queue_us;
  // The bottleneck was still busy when the stage's last packets left it.
  x.busy_end = x.busy || x.q > params_.busy_queue_us;
  if (!report.queue_delay_us && x.clean && x.period > 0.0 && !x.hook) {
    base_period_us_ = base_period_us_ > 0.0 ? std::fmin(base_period_us_, x.period) : x.period;
  }

  // Delivered bytes: counted by the receiver (v1.1) in the sender's unit when the hook gave
  // link bytes, else what was sent less the loss.
  x.delivered = x.has_path ? static_cast<double>(path->bytes_received) : x.sent * (1.0 - x.loss);
  // The bottleneck's rate by dispersion, and whether the stage's largest burst crossed at its
  // send rate (see the file comment).
  if (x.has_path && static_cast<double>(path->dispersion_bytes) >= params_.min_dispersion_bytes &&
      path->dispersion_us > 0) {
    x.fresh_dispersion =
        static_cast<double>(path->dispersion_bytes) / static_cast<double>(path->dispersion_us);
    note_dispersion(x.fresh_dispersion);
  }
  if (x.has_path && static_cast<double>(path->burst_bytes) >= params_.proof_bytes &&
      path->queue_max_us <= params_.proof_queue_us &&
      static_cast<double>(path->burst_arrival_us) <=
          static_cast<double>(path->burst_send_us) + params_.burst_jitter_us) {
    x.proven = static_cast<double>(path->burst_bytes) /
               std::fmax(static_cast<double>(path->burst_send_us), params_.burst_jitter_us);
  }

  // The received rate: between the last packets of two consecutive stages the sender sent
  // exactly this stage's bytes over T and the queue changed by `growth`, so the bottleneck
  // carried them in T + growth (the two queue readings share the receiver's base). D / L would
  // be a few % high: L ends a frame interval before the block does.
  x.received = x.period > 0.0 ? x.delivered / x.period : 0.0;
  if (follows && x.hook && x.t + growth > 0.5 * x.t) x.received = x.delivered / (x.t + growth);
  if (dispersion_ > 0.0) x.received = std::fmin(x.received, dispersion_);
  return x;
}

std::string_view CapacityPolicy::on_overuse(const Reading& x) {
  if (!congested_) {
    // The first overuse of an episode: what the session sent before it (the whole stream
    // while no bottleneck was known).
    onset_capacity_ = mode_ == Mode::kOpen && x.t > 0.0 ? x.sent / x.t : capacity_;
  }
  if (!(x.busy_end || x.stand_growth > params_.queue_grow_us)) {
    // Loss in a block that ended with the queue empty: the bottleneck was not busy to the end,
    // so the received rate is only a lower bound (e.g. a block planned to drain the queue whose
    // key frame met the old one). GCC's loss controller instead: x (1 - loss / 2).
    stuck_run_ = 0;
    clean_run_ = 0;
    if (mode_ == Mode::kOpen) {
      // The onset: nothing is known but this block's share.
      mode_ = Mode::kDelay;
      capacity_ = x.received * (1.0 - 0.5 * x.loss);
      limit_rate_ = x.received;
      return "loss at the onset: capacity = received rate x (1 - loss / 2)";
    }
    if (alone_ && dispersion_ > 0.0) {
      capacity_ = dispersion_;
    } else {
      if (dispersion_ > 0.0) capacity_ = std::fmin(capacity_, dispersion_);
      if (capacity_ <= 0.0) capacity_ = x.received;
      capacity_ *= 1.0 - 0.5 * x.loss;
    }
    return "loss, queue empty at the end: capacity x (1 - loss / 2)";
  }
  // A queue that still stands above queue_high in a block planned to give it back is not this
  // session's: after compete_blocks such blocks another flow holds it (a loss-based one: TCP).
  // Sessions that share a bottleneck drain it together within a block or two, so a queue of
  // theirs shrinks from one drain block to the next; a loss-based flow refills it.
  const bool stuck = mode_ == Mode::kDelay && x.slot != nullptr && x.slot->drains &&
                     x.stand > params_.queue_high_us && x.stand > 0.8 * x.prev_stand;
  stuck_run_ = stuck ? stuck_run_ + 1 : 0;
  if (stuck_run_ >= params_.compete_blocks) {
    mode_ = Mode::kCompete;
    stuck_run_ = 0;
    quiet_run_ = 0;
    // The cuts that led here read the other flow's queue as this session's: undo them. Loss
    // may take back at most half of it (TCP's own multiplicative decrease): a loss-based flow
    // at a short round-trip time grabs every slot the queue frees, so the loss this session
    // sees grows as its rate falls, and a rule that only cut on it would end at nothing.
    capacity_ = std::max({capacity_, x.received, onset_capacity_});
    compete_floor_ = 0.5 * capacity_;
    return "queue stands while the plan drains it: another flow holds it (compete mode)";
  }
  // GCC: the estimate becomes the received rate (the session's share under tail drop, the
  // bottleneck being busy to the block's end), times decrease_factor; alone on the bottleneck,
  // its dispersion rate.
  mode_ = Mode::kDelay;
  clean_run_ = 0;
  // decrease_factor below 1 leaves the bottleneck room after the cut (GCC's 0.85): the blocks
  // after an overuse come back clean, and only clean blocks grow the estimate additively, by
  // the same step for every session: without that room sessions cut in proportion keep the
  // shares they had at the onset, however unequal.
  // The rate the block went with is where the path said "too much" (BIC's W_max): clean
  // blocks search back toward it, and beyond it only slowly.
  limit_rate_ = capacity_ > 0.0 ? capacity_ : x.received;
  limit_dispersion_ = dispersion_;
  if (x.received > 0.0) capacity_ = params_.decrease_factor * x.received;
  // Alone on it (the share is nearly all of the dispersion rate, which the block's leading
  // packet pair measures whatever else crosses the bottleneck), the estimate is the dispersion
  // rate itself; a clearly smaller share means other traffic (hysteresis: entered at
  // alone_share, left below alone_share - 0.15).
  if (dispersion_ > 0.0 && x.received > 0.0) {
    if (x.received >= params_.alone_share * dispersion_ && dispersion_steady()) alone_ = true;
    if (x.received < (params_.alone_share - 0.15) * dispersion_) alone_ = false;
  }
  if (alone_ && x.fresh_dispersion > 0.0 && x.fresh_dispersion < dispersion_) {
    // Alone and over the path: the bottleneck may have slowed; its fresh reading is its rate.
    recent_dispersion_.fill(0.0);
    note_dispersion(x.fresh_dispersion);
  }
  if (alone_ && dispersion_ > 0.0) capacity_ = dispersion_;
  return x.loss > params_.loss_threshold ? "network loss: capacity = received rate"
                                         : "queue building: capacity = received rate";
}

std::string_view CapacityPolicy::on_clean(const Reading& x) {
  stuck_run_ = 0;
  forget_stale_dispersion(x);
  // The bottleneck went idle before the block's end: capacity is at least what was delivered
  // (BBR's max filter; paced stages are spread over T, so max(L, T) keeps it a lower bound).
  const double span = std::fmax(x.period, x.t);
  if (span > 0.0) raise_to(x.delivered / (params_.margin * span));
  // A block sent whole went through with the bottleneck idle at its end: the stream's next
  // blocks, up to 25 % larger (BBR's probing gain), will too, so they go whole as well.
  if (span > 0.0 && x.whole) raise_to(kWholeGain * x.delivered / span);
  undispersed_run_ = x.fresh_dispersion > 0.0 ? 0 : undispersed_run_ + 1;
  if (dispersion_ > 0.0 && undispersed_run_ == 1 && (alone_ || dispersion_steady())) {
    // The first clean block whose leading burst did not queue (see below): a reading may just
    // have failed (a shaper's bucket as large as the burst after an idle end of the block
    // before), so the estimate holds; a second in a row is the bottleneck.
    return "clean, no burst queued once: estimate held";
  }
  if (dispersion_ > 0.0 && undispersed_run_ >= 2 && (alone_ || dispersion_steady())) {
    // Every block's leading burst queued at the bottleneck and read its rate, until two clean
    // blocks in a row where none did: the bottleneck's own bucket refills between the paced
    // packets, it has grown past the pacing. The old reading says nothing any more; the
    // estimate grows until a burst queues again (the readings stay: a new one above them
    // replaces them as the largest, and until then they are what the bottleneck was). Below
    // the bottleneck's last rate, the room is up to it; at it, the bottleneck has grown.
    limit_rate_ = 0.0;
    if (capacity_ < kAtBottleneck * dispersion_) {
      capacity_ = dispersion_;
      return "clean, no burst queued twice below the bottleneck's rate: capacity = its rate";
    }
    capacity_ *= params_.probe_gain;
    return "clean, no burst queued twice: bottleneck grew, x probe_gain";
  }
  if (dispersion_ > 0.0 && undispersed_run_ >= kStaleDispersionBlocks) {
    // No reading for this long on a clean path: whatever the readings were, they are stale.
    recent_dispersion_.fill(0.0);
    dispersion_ = 0.0;
    alone_ = false;
  }
  if (alone_ && dispersion_ > 0.0) {
    // Alone on the bottleneck: its rate (the blocks' leading bursts measure it, whatever the
    // estimate) is the estimate, up or down.
    capacity_ = dispersion_;
    clean_run_ = 0;
    return "bottleneck idle, alone: capacity = dispersion rate";
  }
  if (x.whole) {
    if (!x.has_path && ++release_run_ >= params_.release_stages) {
      // Without path measurements: whole blocks delivered clean end the episode.
      mode_ = Mode::kOpen;
      return "whole stages delivered clean: bottleneck gone, R = r0";
    }
    return "bottleneck idle, stream below the estimate";
  }
  // The plan cut this block and the path carried it clean: more fits. Near the rate of the
  // last overuse additively, by the same step for every session (increase_step of the
  // bottleneck's rate, or of that rate when it is unknown); below it, or with evidence of room
  // (no pair queued), or well past it, multiplicatively.
  ++clean_run_;
  if (x.fresh_dispersion > 0.0 && limit_dispersion_ > 0.0 &&
      x.fresh_dispersion > kGrownDispersion * limit_dispersion_) {
    // The bottleneck itself is faster than at the last overuse: that overuse's rate says
    // nothing any more.
    limit_rate_ = 0.0;
    limit_dispersion_ = 0.0;
  }
  const double step = params_.increase_step * step_reference();
  if (limit_rate_ > 0.0 && capacity_ < kLimitZone * limit_rate_ &&
      clean_run_ <= kStaleLimitBlocks) {
    // Near the rate of the last overuse (below it after the cut, or a little above): the same
    // additive step for every session (AIMD: after each overuse every session is cut by the
    // same factor, so equal steps even out their shares, Chiu & Jain 1989). A limit that
    // kStaleLimitBlocks clean blocks in a row did not meet again is stale: the path changed.
    capacity_ += step;
    return "clean, near the last overuse rate: + increase_step";
  }
  if (dispersion_ > 0.0 && capacity_ >= kAtBottleneck * dispersion_) {
    // At the bottleneck's measured rate: more would only queue (it grows by the readings).
    return "clean, at the bottleneck's rate: estimate held";
  }
  // Well past the rate of the last overuse without a new one (or none known): the path
  // changed; that rate is forgotten and the estimate grows multiplicatively until it finds
  // the new one.
  limit_rate_ = 0.0;
  capacity_ *= params_.probe_gain;
  forget_stale_dispersion(x);
  return "clean, past the last overuse rate: x probe_gain";
}

double CapacityPolicy::step_reference() const {
  // The additive step must be the same for every session on the bottleneck, or the shares
  // they had at the onset never even out (AIMD converges to equal shares only with equal
  // increments). What sessions of one stream share is the stream's own rate; a session's
  // dispersion rate or overuse rate is its own share (its pairs interleave with the others').
  // Without the sender's hook: the rate of the last overuse.
  return stream_rate_ > 0.0 ? stream_rate_ : std::fmax(limit_rate_, capacity_);
}

void CapacityPolicy::note_dispersion(double rate) {
  // The bottleneck's rate is the largest of the recent readings: a reading can only come out
  // low (another flow's packets between the pair: sessions whose blocks start together send
  // their pairs together), never above the rate the bottleneck serves at.
  recent_dispersion_[recent_next_++ % recent_dispersion_.size()] = rate;
  dispersion_ = *std::max_element(recent_dispersion_.begin(), recent_dispersion_.end());
}

bool CapacityPolicy::dispersion_steady() const {
  // Alone, every leading pair reads the bottleneck's rate; shared, another session's packets
  // sometimes sit between the pair and the readings scatter (by 1/2, 1/3 ...).
  double lo = 0.0;
  unsigned n = 0;
  for (double r : recent_dispersion_) {
    if (r <= 0.0) continue;
    lo = n == 0 ? r : std::fmin(lo, r);
    ++n;
  }
  return n >= kSteadyReadings && lo >= kSteadySpread * dispersion_;
}

void CapacityPolicy::forget_stale_dispersion(const Reading& x) {
  // A clean block that went through above the last dispersion rate proves that reading stale
  // (the bottleneck grew or went away): it no longer caps the estimate or marks it alone.
  if (dispersion_ > 0.0 && x.fresh_dispersion <= 0.0 && x.sent > 0.0 && x.t > 0.0 &&
      x.delivered / x.t > dispersion_) {
    dispersion_ = 0.0;
    recent_dispersion_.fill(0.0);
    alone_ = false;
  }
}

std::string_view CapacityPolicy::in_compete(const Reading& x) {
  quiet_run_ = x.stand <= params_.queue_low_us && x.q <= params_.queue_low_us ? quiet_run_ + 1 : 0;
  if (quiet_run_ >= 2) {
    // The other flow's queue is gone (it ended, or backed off for good): the queue is a
    // signal again, and the rate of the last overuse belongs to the competition.
    mode_ = Mode::kDelay;
    limit_rate_ = 0.0;
    clean_run_ = 0;
    stuck_run_ = 0;
    return "standing queue gone: delay mode";
  }
  if (x.loss > params_.compete_loss_high) {
    capacity_ = std::fmax(compete_floor_, capacity_ * (1.0 - 0.5 * x.loss));
    return "compete: loss above compete_loss_high: x (1 - loss / 2), not below half the entry";
  }
  if (x.loss < params_.compete_loss_low) {
    if (!x.whole) capacity_ *= params_.compete_gain;
    return "compete: loss below compete_loss_low: x compete_gain";
  }
  return "compete: loss between the marks: estimate held";
}

Decision CapacityPolicy::decide(const StageReport& report) {
  missing_run_ = 0;
  const Reading x = read(report);
  std::string_view reason;
  if (mode_ == Mode::kCompete) {
    reason = in_compete(x);
  } else if (x.overuse) {
    reason = on_overuse(x);
    release_run_ = 0;
  } else if (x.clean && x.proven > 0.0 &&
             x.proven >= params_.proof_factor * x.block / std::fmax(x.t, 1.0) &&
             !(x.fresh_dispersion > 0.0 &&
               x.fresh_dispersion < kNoiseDispersion * x.block / std::fmax(x.t, 1.0))) {
    // The key frame crossed at its send rate, well above the stream's, and no pair of the block
    // dispersed at a rate a bottleneck would have: no bottleneck.
    mode_ = Mode::kOpen;
    alone_ = false;
    limit_rate_ = 0.0;
    capacity_ = 0.0;
    release_run_ = 0;
    reason = "burst crossed undispersed: bottleneck gone, R = r0";
  } else if (x.busy && mode_ != Mode::kOpen) {
    // A queue at the block's end: the bottleneck was busy to the end, and the received rate is
    // the session's share of it (up or down).
    capacity_ =
        alone_ && dispersion_ > 0.0 ? dispersion_ : (x.received > 0.0 ? x.received : capacity_);
    clean_run_ = 0;
    reason = alone_ ? "queue standing, alone: capacity = dispersion rate"
                    : "queue standing: capacity = received rate";
  } else if (x.clean && mode_ != Mode::kOpen) {
    reason = on_clean(x);
    // Whoever else is there, no session can use more than the bottleneck serves: with its
    // rate known (steady readings), the estimate stops there.
    if (x.fresh_dispersion > 0.0 && dispersion_steady()) {
      capacity_ = std::fmin(capacity_, dispersion_);
    }
  } else if (mode_ == Mode::kOpen) {
    reason = "clean: no bottleneck";
  } else {
    clean_run_ = 0;
    reason = "small loss: estimate held";
  }
  congested_ = x.overuse || x.busy;
  if (x.loss <= params_.clean_loss && report.performance < params_.quality_floor &&
      mode_ != Mode::kOpen) {
    capacity_ *= 1.0 + params_.increase_step;
    reason = "quality below the floor: estimate raised";
  }

  last_queue_us_ = x.q;
  last_report_stage_ = report.stage;
  has_report_ = true;
  // The rate for the next stage as far as this report goes (the hook re-plans with the real
  // block size when the stage starts).
  predicted_queue_us_ = x.q;
  const double t_next = last_duration_us_ > 0.0 ? last_duration_us_ : x.t;
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
  if (mode_ == Mode::kOpen) mode_ = Mode::kDelay;
  capacity_ *= params_.missing_backoff;
  clean_run_ = 0;
  const double t_next = last_duration_us_ > 0.0 ? last_duration_us_ : base_period_us_;
  const double b_next = last_duration_us_ > 0.0 ? last_block_bytes_ : 1.0;
  rate_ = plan(b_next, t_next);
  return Decision{rate_, DecisionKind::kMissing, "reports missing: capacity x backoff", capacity_};
}

}  // namespace predrop::core

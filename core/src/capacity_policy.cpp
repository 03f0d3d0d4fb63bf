#include "predrop/core/capacity_policy.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "capacity_model.hpp"
#include "predrop/core/discard_curve.hpp"

namespace predrop::core {

using namespace capacity_model;  // NOLINT(google-build-using-namespace): the model's constants

CapacityPolicy::CapacityPolicy(const CapacityParams& params)
    : params_(params), rate_(params.initial_rate) {}

CapacityPolicy::~CapacityPolicy() {
  if (group_) group_->leave(member_);
}

bool CapacityPolicy::couple(const std::shared_ptr<SharedBottleneck>& group) {
  if (group_) group_->leave(member_);
  group_ = group;
  if (group_) member_ = group_->join();
  return group_ != nullptr;
}

void CapacityPolicy::share_estimate() {
  if (!group_) return;
  if (mode_ == Mode::kOpen || capacity_ <= 0.0) {
    (void)group_->update(member_, 0.0);
    return;
  }
  capacity_ = group_->update(member_, capacity_);
}

double CapacityPolicy::open_rate() const {
  // Before the first report nothing is known of the path: the start rate if one is set and the
  // block in flight has frames to thin out.
  const bool start = !has_report_ && params_.start_rate && start_thins_;
  return clamp(start ? *params_.start_rate : params_.initial_rate);
}

double CapacityPolicy::clamp(double r) const {
  if (!std::isfinite(r)) return params_.rmax;
  return std::clamp(r, 0.0, params_.rmax);
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
    return open_rate();
  }
  // NADA-style: send what the estimate carries in the block's time (less the idle margin) and
  // give back the queue the model expects above the reference when the block starts.
  const double x =
      params_.margin * capacity_ * duration_us - capacity_ * queue_to_drain(predicted_queue_us_);
  return clamp(rate_keeping(x, block_bytes, packets, removable, beta_));
}

double CapacityPolicy::queue_at_start(std::uint32_t stage) const {
  // The last reported end-of-stage queue, plus what the stages sent since then add at the
  // estimated capacity (their bytes are known exactly once the next one started).
  if (!has_report_) return 0.0;
  return stages_.queue_at_start(stage, last_report_stage_, last_queue_us_, capacity_,
                                params_.queue_limit_us);
}

double CapacityPolicy::rate_for_next(const StageStart& next) {
  SentStage& s = stages_.start(next.stage, static_cast<double>(next.block_bytes),
                               next.block_duration_us, next.bytes_before);
  last_block_bytes_ = s.block_bytes;
  last_duration_us_ = s.duration_us;
  if (s.duration_us > 0.0) {
    const double r = s.block_bytes / s.duration_us;
    stream_rate_ = stream_rate_ > 0.0 ? 0.9 * stream_rate_ + 0.1 * r : r;
  }
  // Coupled: the other members' reports since this one's last moved the group's aggregate.
  if (group_ && mode_ != Mode::kOpen) {
    if (const double share = group_->share(member_); share > 0.0) capacity_ = share;
  }
  predicted_queue_us_ = queue_at_start(next.stage);
  start_thins_ = next.disposable_packets > 0;
  rate_ = plan(s.block_bytes, s.duration_us, next.packets, next.removable);
  s.rate = rate_;
  // What the block keeps at that R (its least sendable part may be above the estimate: key
  // frames and audio are never discarded): the pacing must carry it within the block. Over
  // 0.9 T as a rule, which paces a block planned at margin x Ĉ x T at 1.08 Ĉ: beside a
  // loss-based flow the faster pace is what holds the share (simulated §5.6 with the burst
  // free, over margin x T: 2.4-5.5 dB less). With the leading burst repaid the queue is this
  // session's own, and 1.08 Ĉ would build 8 % of every block on it (bed, Chromium: 38 -> 86 ms
  // through each block): over margin x T, the pace is Ĉ.
  block_floor_rate_ = 0.0;
  if (next.packets > 0 && next.removable.size() > 1 && s.duration_us > 0.0) {
    const auto k = std::min<std::size_t>(
        static_cast<std::size_t>(std::lround(rate_ * next.packets)), next.removable.size() - 1);
    const double span = repays_burst() ? params_.margin : kFloorSpan;
    block_floor_rate_ =
        (s.block_bytes - static_cast<double>(next.removable[k])) / (span * s.duration_us);
  }
  s.drains = mode_ == Mode::kDelay && congested_;
  s.estimate = capacity_;
  return rate_;
}

std::optional<double> CapacityPolicy::rate_for_rest(const StageProgress& p) {
  SentStage* s = stages_.find(p.stage);
  if (s == nullptr || p.rest_bytes == 0 || p.duration_us <= 0.0 || p.elapsed_us >= p.duration_us) {
    return std::nullopt;
  }
  double r = open_rate();
  if (mode_ != Mode::kOpen && capacity_ > 0.0) {
    // The same plan for what is left: the time left at the estimate (less the margin), less the
    // queue the model expects now (at the stage's start, plus its bytes so far at Ĉ, minus the
    // time gone). The report that triggers this usually is the previous stage's, whose end queue
    // is this stage's start queue.
    const double left = p.duration_us - p.elapsed_us;
    double q_now = std::clamp(
        queue_at_start(p.stage) + static_cast<double>(p.sent_bytes) / capacity_ - p.elapsed_us, 0.0,
        params_.queue_limit_us);
    // An alert on this stage measured the queue: at least that much is there to give back.
    if (p.stage == alert_stage_) q_now = std::fmax(q_now, alert_queue_us_);
    const double x = params_.margin * capacity_ * left - capacity_ * queue_to_drain(q_now);
    r = clamp(
        rate_keeping(x, static_cast<double>(p.rest_bytes), p.rest_packets, p.removable, beta_));
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

bool CapacityPolicy::on_alert(const StageAlert& a) {
  // Compete mode: the queue is another flow's (it stands whatever we send). One alert per stage.
  if (mode_ == Mode::kCompete || a.rate <= 0.0 || a.stage == alert_stage_) return false;
  // Before the first report: a session that starts above a slower bottleneck (a player's or a
  // browser's starts at R = 0) would queue and lose through its first two stages, until the
  // first report a block later. The queue is its own when its packets leave the bottleneck at
  // the bottleneck's own rate (the rate its back-to-back pairs left it at): it is alone there.
  // If they arrive well below that rate, another flow (a download that was there first) takes
  // the rest, and the reports will tell how to share with it.
  if (!has_report_ && !(a.pair_rate > 0.0 && a.rate >= kAtBottleneck * a.pair_rate)) return false;
  // After the first report, a queue that already stood through the last reported stage is not
  // an onset: the reports read it (another flow's, or one being drained).
  if (has_report_ && last_stand_us_ > params_.queue_high_us) return false;
  // A loss-based flow shared the path recently (compete mode): its queue comes and goes with
  // its own cycle, and an alert would cut this session's share each time it refills.
  if (reports_since_compete_ < kAlertQuietReports) return false;
  // The bottleneck still serves at its known rate (the stage's back-to-back pairs left it at
  // that rate, or none has come yet): the queue is other traffic's (a loss-based flow's rises
  // exactly as an onset's does), not a capacity drop; the reports will tell whose. A FIFO keeps
  // a pair sent back to back together whatever queues behind it, so only a slower bottleneck
  // spreads it.
  if (dispersion_.rate() > 0.0 &&
      !(a.pair_rate > 0.0 && a.pair_rate < kAtBottleneck * dispersion_.rate())) {
    return false;
  }
  alert_stage_ = a.stage;
  alert_queue_us_ = a.queue_us;
  // The stage's last packets arrived back to back out of a busy bottleneck: their rate is this
  // session's share of it, measured now instead of a block later. The estimate takes it as an
  // overuse does (GCC: the received rate times decrease_factor); the stage's own report will
  // read the same rate again, so the two do not compound.
  const double cut = params_.decrease_factor * a.rate;
  if (mode_ == Mode::kOpen) {
    onset_capacity_ = cut;
    mode_ = Mode::kDelay;
  } else if (capacity_ > 0.0 && cut >= capacity_) {
    return false;
  }
  limit_rate_ = capacity_ > 0.0 ? capacity_ : a.rate;
  capacity_ = cut;
  share_estimate();
  congested_ = true;
  clean_run_ = 0;
  return true;
}

void CapacityPolicy::on_pause() {
  // A paused session sends nothing: its share would sit idle while the others stay below it.
  // It keeps its own estimate and brings it back to the group with its first report after the
  // resume (share_estimate).
  if (group_) (void)group_->update(member_, 0.0);
}

void CapacityPolicy::on_resume(double idle_us) {
  (void)idle_us;
  // Nothing was sent while paused: whatever queue the last reports read has drained, and the
  // stages planned before the pause were congested or not on a path that has moved on. The
  // estimate itself stays (the share the session had is the best guess of the share it will get
  // back); the first blocks after the resume read the path as it is now, overuse or clean, as
  // at an onset. Kept on purpose: the mode (a TCP flow that was there is most likely still
  // there) and the dispersion rate (the bottleneck's own rate does not depend on who uses it).
  last_queue_us_ = 0.0;
  last_stand_us_ = 0.0;
  last_end_high_ = false;
  predicted_queue_us_ = 0.0;
  congested_ = false;
  clean_run_ = 0;
  stuck_run_ = 0;
  missing_run_ = 0;
  alert_stage_ = UINT32_MAX;
  alert_queue_us_ = 0.0;
  if (last_duration_us_ > 0.0) rate_ = plan(last_block_bytes_, last_duration_us_);
}

bool CapacityPolicy::repays_burst() const {
  return mode_ == Mode::kDelay && params_.repaid_burst_bytes > 0.0;
}

std::optional<PacingLimit> CapacityPolicy::pacing() const {
  if (mode_ == Mode::kOpen || capacity_ <= 0.0 || params_.pacing_gain <= 0.0) return std::nullopt;
  // In compete mode the standing queue is another flow's: a pause after the burst would only
  // hand it the slot, and a larger burst into its full queue loses the key frame's packets.
  const bool repay = repays_burst();
  return PacingLimit{params_.pacing_gain * std::fmax(capacity_, block_floor_rate_),
                     repay ? params_.repaid_burst_bytes : params_.pacing_burst_bytes, repay};
}

void CapacityPolicy::raise_to(double estimate) {
  // Never above the bottleneck's own rate when it is known.
  if (dispersion_.rate() > 0.0) estimate = std::fmin(estimate, dispersion_.rate());
  capacity_ = std::fmax(capacity_, estimate);
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
    capacity_ = alone_ && dispersion_.rate() > 0.0 ? dispersion_.rate()
                                                   : (x.received > 0.0 ? x.received : capacity_);
    clean_run_ = 0;
    reason = alone_ ? "queue standing, alone: capacity = dispersion rate"
                    : "queue standing: capacity = received rate";
  } else if (x.clean && mode_ != Mode::kOpen) {
    reason = on_clean(x);
    // Whoever else is there, no session can use more than the bottleneck serves: with its
    // rate known (steady readings), the estimate stops there.
    if (x.fresh_dispersion > 0.0 && !x.rising_dispersion && dispersion_steady()) {
      capacity_ = std::fmin(capacity_, dispersion_.rate());
    }
  } else if (mode_ == Mode::kOpen && !has_report_ && x.clean && x.fresh_dispersion > 0.0 &&
             x.fresh_dispersion < stream_rate_) {
    // The first report of a start below the stream (start_rate): clean, but its pairs left a
    // bottleneck slower than the stream. At r0 the next block would queue there for a block
    // before a report said so. The estimate starts at the rate its pairs measured.
    mode_ = Mode::kDelay;
    capacity_ = x.fresh_dispersion;
    limit_rate_ = capacity_;
    clean_run_ = 0;
    reason = "first report: a bottleneck below the stream's rate, capacity = dispersion rate";
  } else if (mode_ == Mode::kOpen) {
    reason = "clean: no bottleneck";
  } else {
    clean_run_ = 0;
    reason = "small loss: estimate held";
  }
  congested_ = x.overuse || x.busy;
  reports_since_compete_ = mode_ == Mode::kCompete ? 0 : reports_since_compete_ + 1;
  if (x.loss <= params_.clean_loss && report.performance < params_.quality_floor &&
      mode_ != Mode::kOpen) {
    capacity_ *= 1.0 + params_.increase_step;
    reason = "quality below the floor: estimate raised";
  }
  share_estimate();

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
  share_estimate();
  clean_run_ = 0;
  const double t_next = last_duration_us_ > 0.0 ? last_duration_us_ : base_period_us_;
  const double b_next = last_duration_us_ > 0.0 ? last_block_bytes_ : 1.0;
  rate_ = plan(b_next, t_next);
  return Decision{rate_, DecisionKind::kMissing, "reports missing: capacity x backoff", capacity_};
}

}  // namespace predrop::core

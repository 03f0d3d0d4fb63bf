// What one report says about the path: the capacity policy's reading of a StageReport against
// the stages it planned (docs/design.md §2.8). The reading also keeps what the next reading
// compares with (the standing queue, beta, the dispersion readings).
#include <algorithm>
#include <cmath>
#include <optional>

#include "capacity_model.hpp"

namespace predrop::core {

using namespace capacity_model;  // NOLINT(google-build-using-namespace): the model's constants

CapacityPolicy::Reading CapacityPolicy::read(const StageReport& report) {
  Reading x;
  x.slot = stages_.find(report.stage);
  const SentStage* s = x.slot;
  x.hook = s != nullptr && s->block_bytes > 0.0 && s->duration_us > 0.0;
  x.used = report.rate_used ? *report.rate_used : (s != nullptr ? s->rate : rate_);
  x.whole = x.used <= kWholeRate;
  x.loss = report.network_loss();
  if (report.packets_announced > 0 && report.packets_received == 0) x.loss = 1.0;
  x.period = report.reception_period_us;

  // Without the sender's hook a block is one unit of bytes and T the base reception period.
  x.block = x.hook ? s->block_bytes : 1.0;
  x.t = x.hook ? s->duration_us : (base_period_us_ > 0.0 ? base_period_us_ : x.period);
  const std::optional<double> sent = x.hook ? stages_.bytes_sent(report.stage) : std::nullopt;
  if (sent) {
    x.sent = *sent;
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
  const SentStage* prev =
      s != nullptr && report.stage > 0 ? stages_.find(report.stage - 1) : nullptr;
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
    dispersion_.note(x.fresh_dispersion);
    x.rising_dispersion = x.fresh_dispersion > kGrownDispersion * dispersion_.rate();
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
  if (dispersion_.rate() > 0.0) x.received = std::fmin(x.received, dispersion_.rate());
  return x;
}

}  // namespace predrop::core

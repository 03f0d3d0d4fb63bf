// How the capacity policy's estimate moves on one reading, per mode (docs/design.md §2.8 and the
// file comment of capacity_policy.hpp): overuse and clean blocks in delay mode, loss alone in
// compete mode, and the dispersion readings that cap and steer both.
#include <algorithm>
#include <cmath>

#include "capacity_model.hpp"

namespace predrop::core {

using namespace capacity_model;  // NOLINT(google-build-using-namespace): the model's constants

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
    if (alone_ && dispersion_.rate() > 0.0) {
      capacity_ = dispersion_.rate();
    } else {
      if (dispersion_.rate() > 0.0) capacity_ = std::fmin(capacity_, dispersion_.rate());
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
  stuck_dispersion_ =
      stuck_run_ <= 1 ? x.fresh_dispersion : std::fmax(stuck_dispersion_, x.fresh_dispersion);
  if (stuck_run_ >= params_.compete_blocks) {
    mode_ = Mode::kCompete;
    stuck_run_ = 0;
    quiet_run_ = 0;
    // The cuts that led here read the other flow's queue as this session's: undo them. Loss
    // may take back at most half of it (TCP's own multiplicative decrease): a loss-based flow
    // at a short round-trip time grabs every slot the queue frees, so the loss this session
    // sees grows as its rate falls, and a rule that only cut on it would end at nothing.
    // ... but never above what the bottleneck serves now: what the pairs read while the queue
    // stood (the stuck blocks). A rate from before a capacity drop is one the path has since
    // refused (a browser behind §5.1's 492 kbit/s phase was given back its open phase's 1.8
    // Mbit/s here, and a floor of half of it). Pairs read while the queue stood beside TCP (one
    // TCP packet rarely lands inside a back-to-back pair); readings that stopped with the queue
    // (heavy loss breaks the pair) say the path changed, and nothing read since says it carries
    // the rate of before: the cuts stand. Without any reading (no path measurements: a player's
    // RRs) nothing can tell, and the cuts are undone.
    capacity_ = std::max(capacity_, x.received);
    if (stuck_dispersion_ > 0.0) {
      capacity_ = std::fmin(std::max(capacity_, onset_capacity_), stuck_dispersion_);
    } else if (dispersion_.rate() <= 0.0) {
      capacity_ = std::max(capacity_, onset_capacity_);
    }
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
  limit_dispersion_ = dispersion_.rate();
  if (x.received > 0.0) capacity_ = params_.decrease_factor * x.received;
  // Alone on it (the share is nearly all of the dispersion rate, which the block's leading
  // packet pair measures whatever else crosses the bottleneck), the estimate is the dispersion
  // rate itself; a clearly smaller share means other traffic (hysteresis: entered at
  // alone_share, left below alone_share - 0.15).
  if (const double d = dispersion_.rate(); d > 0.0 && x.received > 0.0) {
    if (x.received >= params_.alone_share * d && dispersion_steady()) alone_ = true;
    if (x.received < (params_.alone_share - 0.15) * d) alone_ = false;
  }
  if (alone_ && x.fresh_dispersion > 0.0 && x.fresh_dispersion < dispersion_.rate()) {
    // Alone and over the path: the bottleneck may have slowed; its fresh reading is its rate.
    dispersion_.restart(x.fresh_dispersion);
  }
  if (alone_ && dispersion_.rate() > 0.0) capacity_ = dispersion_.rate();
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
  if (dispersion_.rate() > 0.0 && undispersed_run_ == 1 && (alone_ || dispersion_steady())) {
    // The first clean block whose leading burst did not queue (see below): a reading may just
    // have failed (a shaper's bucket as large as the burst after an idle end of the block
    // before), so the estimate holds; a second in a row is the bottleneck.
    return "clean, no burst queued once: estimate held";
  }
  if (dispersion_.rate() > 0.0 && undispersed_run_ >= 2 && (alone_ || dispersion_steady())) {
    // Every block's leading burst queued at the bottleneck and read its rate, until two clean
    // blocks in a row where none did: the bottleneck's own bucket refills between the paced
    // packets, it has grown past the pacing. The old reading says nothing any more; the
    // estimate grows until a burst queues again (the readings stay: a new one above them
    // replaces them as the largest, and until then they are what the bottleneck was). Below
    // the bottleneck's last rate, the room is up to it; at it, the bottleneck has grown.
    limit_rate_ = 0.0;
    if (capacity_ < kAtBottleneck * dispersion_.rate()) {
      capacity_ = dispersion_.rate();
      return "clean, no burst queued twice below the bottleneck's rate: capacity = its rate";
    }
    capacity_ *= params_.probe_gain;
    return "clean, no burst queued twice: bottleneck grew, x probe_gain";
  }
  if (dispersion_.rate() > 0.0 && undispersed_run_ >= kStaleDispersionBlocks) {
    // No reading for this long on a clean path: whatever the readings were, they are stale.
    dispersion_.clear();
    alone_ = false;
  }
  if (alone_ && dispersion_.rate() > 0.0) {
    // Alone on the bottleneck: its rate (the blocks' leading bursts measure it, whatever the
    // estimate) is the estimate, up or down.
    capacity_ = dispersion_.rate();
    clean_run_ = 0;
    if (x.rising_dispersion) {
      // A fresh reading well above it that none confirms yet: the bottleneck grew, or the pair
      // was compressed after it. Towards the reading by probe_gain at most, for this block
      // only: the next reading confirms it or puts the estimate back at the rate. (The bed's
      // §5.1 rise to 2.5x: R 0.03 on the third block after it and 0 on the fourth, where the
      // maximum took the reading at once and had 0 on the third; a compressed pair now costs
      // one block at 1.5x instead of eight at its reading.)
      capacity_ = std::fmin(x.fresh_dispersion, params_.probe_gain * capacity_);
      return "bottleneck idle, alone, a rising reading: capacity towards it (x probe_gain)";
    }
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
  if (dispersion_.rate() > 0.0 && capacity_ >= kAtBottleneck * dispersion_.rate() &&
      !x.rising_dispersion) {
    // At the bottleneck's measured rate: more would only queue (it grows by the readings). A
    // fresh reading well above it, not yet confirmed, is probed once: a grown bottleneck takes
    // it as the max filter would have, a compressed pair costs one block above the rate.
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

bool CapacityPolicy::dispersion_steady() const {
  return dispersion_.steady(kSteadyReadings, kSteadySpread);
}

void CapacityPolicy::forget_stale_dispersion(const Reading& x) {
  // A clean block that went through above the last dispersion rate proves that reading stale
  // (the bottleneck grew or went away): it no longer caps the estimate or marks it alone.
  if (dispersion_.rate() > 0.0 && x.fresh_dispersion <= 0.0 && x.sent > 0.0 && x.t > 0.0 &&
      x.delivered / x.t > dispersion_.rate()) {
    dispersion_.clear();
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
  if (const double d = dispersion_.rate(); d > 0.0 && x.fresh_dispersion > 0.0 &&
                                           x.loss > params_.compete_loss_high &&
                                           x.received >= params_.alone_share * d) {
    // Heavy loss while the session receives nearly all the bottleneck serves (its pairs read d
    // this block): no other flow holds the queue, it is this session's own (a loss-based flow
    // beside it would have a share; one that backed off after its loss leaves loss low). Compete
    // mode was entered on a queue that outlived the drain blocks (a capacity drop deeper than the
    // cuts: §5.1's step to 0.6 Mbit/s behind a 300 ms queue), and its floor would hold the estimate
    // above the bottleneck at any loss (a browser over transport-cc lost 39-58 % per block for 35 s
    // on the bed). Delay mode again, from the rate the bottleneck gives.
    mode_ = Mode::kDelay;
    capacity_ = params_.decrease_factor * x.received;
    limit_rate_ = x.received;
    clean_run_ = 0;
    stuck_run_ = 0;
    return "compete: the session gets the whole bottleneck: its own queue, delay mode";
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

}  // namespace predrop::core

// A worker's view of the relay's stages (stage_peer.hpp).
#include "predrop/ddl/stage_peer.hpp"

#include <algorithm>
#include <stdexcept>

namespace predrop::ddl {

StagePeer::StagePeer(const ChunkPlan& plan, StagePeerConfig config)
    : config_(config),
      rx_(plan, 1, stage_deadline_config(config.stage_deadline_ms), config.window),
      aggregate_(plan.total_elements(), 0.0F),
      received_(plan.size(), 0) {
  if (config.window < 2) throw std::invalid_argument("stage peer: the window must be 2 or more");
}

std::uint32_t StagePeer::begin(std::uint32_t s, std::uint64_t now_us) {
  // The relay is no barrier: the aggregates of stages it closed without this peer wait in the
  // collector's window and are applied at once. Further behind than that they came and went, and
  // waiting for them would end in the silence failure: skip to the relay's current stage.
  skipped_ = 0;
  if (relay_closed_) {
    const auto behind = static_cast<std::int32_t>(*relay_closed_ - s);
    if (behind >= static_cast<std::int32_t>(config_.window) - 1) {
      skipped_ = static_cast<std::uint32_t>(behind) + 1;
      s = *relay_closed_ + 1;
    }
  }
  // Past the job's end (skipped there, or an earlier skip shifted this peer's stage ids beyond
  // it): nobody will run the stage, so it closes at the next poll instead of waiting for the
  // relay's silence.
  ended_ = last_stage_ && static_cast<std::int32_t>(s - *last_stage_) > 0;
  stage_ = s;
  open_ = true;
  started_us_ = now_us;
  // Silence counts from here: between stages the trainer computes and the relay has nothing to
  // say.
  progress_us_ = now_us;
  heard_us_ = std::max(heard_us_, now_us);
  closed_info_.reset();
  closed_info_at_us_ = 0;
  partial_ = 0;
  grace_ = false;
  // After a stage closes the collector already collects the next ones; start() would drop them.
  if (rx_.current_stage() != s) rx_.start(s);
  return s;
}

void StagePeer::heard(std::uint64_t now_us) {
  heard_us_ = std::max(heard_us_, now_us);
}

ChunkOutcome StagePeer::on_chunk(std::uint32_t stage, std::uint16_t announced,
                                 const ChunkView& chunk, std::uint64_t arrival_us) {
  heard(arrival_us);
  const ChunkOutcome outcome = rx_.on_chunk(stage, 0, announced, chunk, arrival_us);
  if (outcome == ChunkOutcome::kAccepted && open_ && stage == stage_) {
    progress_us_ = std::max(progress_us_, arrival_us);
    if ((chunk.header.flags & kChunkFlagPartial) != 0) ++partial_;
  }
  return outcome;
}

std::optional<ClosedStage> StagePeer::on_stage_closed(const StageClosed& c, std::uint64_t now_us) {
  heard(now_us);
  if (!relay_closed_ || static_cast<std::int32_t>(c.stage - *relay_closed_) > 0) {
    relay_closed_ = c.stage;
  }
  if (!open_ || c.stage != stage_) return std::nullopt;
  closed_info_ = c;
  closed_info_at_us_ = now_us;
  progress_us_ = std::max(progress_us_, now_us);
  // Nothing will come (the relay discarded it all, or no worker contributed): close now.
  if (c.downlink_packets == 0) return closed(rx_.force_close(now_us, aggregate_, received_));
  return std::nullopt;
}

std::optional<ClosedStage> StagePeer::poll_io(std::uint64_t now_us) {
  if (!open_) return std::nullopt;
  if (ended_) return close_ended(now_us);
  std::uint64_t now = now_us;
  if (const auto at = rx_.deadline_at_us(); at && now >= *at) now = *at - 1;
  while (auto r = rx_.poll(now, aggregate_, received_)) {
    if (r->stage == stage_) return closed(r);
    // An older stage (cannot happen after begin()).
  }
  return std::nullopt;
}

StageCheck StagePeer::on_timer(std::uint64_t now_us, bool allow_grace) {
  StageCheck out;
  if (!open_) return out;
  if (ended_) {
    out.closed = close_ended(now_us);
    return out;
  }
  const auto at = rx_.deadline_at_us();
  const auto idle = idle_at_us();
  const bool over = (at && now_us >= *at) || (idle && now_us >= *idle);
  if (allow_grace && over && !grace_) {
    grace_ = true;
    grace_due_us_ = now_us + kGraceUs;
    return out;
  }
  grace_ = false;
  while (auto r = rx_.poll(now_us, aggregate_, received_)) {
    if (r->stage == stage_) {
      out.closed = closed(r);
      return out;
    }
  }
  if (idle && now_us >= *idle) {
    auto r = rx_.force_close(now_us, aggregate_, received_);
    if (r) r->reason = CloseReason::kIdle;
    out.closed = closed(r);
    return out;
  }
  if (!rx_.deadline_at_us() && closed_info_ &&
      now_us >= closed_info_at_us_ + rx_.deadline_budget_us() + kNoChunkSlackUs) {
    // The relay closed the stage and sent its aggregate, but nothing of it arrived.
    out.closed = closed(rx_.force_close(now_us, aggregate_, received_));
    return out;
  }
  // Judged per stage, not on any packet: a peer that fell behind gets packets of later stages
  // only, and must not wait for ever either.
  if (now_us >= progress_us_ + config_.relay_silence_us) {
    out.silent = true;
    out.heard_other_stages = heard_us_ > progress_us_;
  }
  return out;
}

std::optional<std::uint64_t> StagePeer::timer_due_us() const {
  if (!open_) return std::nullopt;
  if (ended_) return started_us_;
  if (grace_) return grace_due_us_;
  std::uint64_t at = progress_us_ + config_.relay_silence_us;
  if (const auto idle = idle_at_us()) at = std::min(at, *idle);
  if (const auto d = rx_.deadline_at_us()) {
    at = std::min(at, *d);
  } else if (closed_info_) {
    at = std::min(at, closed_info_at_us_ + rx_.deadline_budget_us() + kNoChunkSlackUs);
  }
  return at;
}

std::optional<std::uint64_t> StagePeer::idle_at_us() const {
  if (config_.idle_close_us == 0 || !open_) return std::nullopt;
  const auto last = rx_.last_arrival_us();
  if (!last) return std::nullopt;
  // From the later of the last chunk and the stage's start: chunks that waited in the window
  // before begin() say nothing about whether the rest is still on its way.
  return std::max(*last, started_us_) + config_.idle_close_us;
}

std::optional<ClosedStage> StagePeer::close_ended(std::uint64_t now_us) {
  auto r = rx_.force_close(now_us, aggregate_, received_);
  if (r) r->reason = CloseReason::kEnded;
  return closed(r);
}

std::optional<ClosedStage> StagePeer::closed(const std::optional<ClosedStage>& r) {
  if (r) {
    open_ = false;
    grace_ = false;
  }
  return r;
}

}  // namespace predrop::ddl

// Stage collection and the adaptive deadline (rule in stage_collector.hpp and docs/ddl.md).
#include "predrop/ddl/stage_collector.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace predrop::ddl {

core::Status DeadlineConfig::validate() const {
  if (min_deadline_us > max_deadline_us) {
    return core::make_error("deadline: min_deadline_us " + std::to_string(min_deadline_us) +
                            " > max_deadline_us " + std::to_string(max_deadline_us));
  }
  if (initial_deadline_us < min_deadline_us || initial_deadline_us > max_deadline_us) {
    return core::make_error("deadline: initial_deadline_us " + std::to_string(initial_deadline_us) +
                            " not within [min, max]");
  }
  if (!(multiplier > 0.0) || !std::isfinite(multiplier)) {
    return core::make_error("deadline: multiplier must be a positive number");
  }
  if (history < 1 || history > DeadlineEstimator::kMaxHistory) {
    return core::make_error("deadline: history " + std::to_string(history) + " not in 1 .. " +
                            std::to_string(DeadlineEstimator::kMaxHistory));
  }
  return core::Ok{};
}

DeadlineEstimator::DeadlineEstimator(DeadlineConfig config)
    : config_(config), deadline_us_(config.initial_deadline_us) {
  if (auto s = config_.validate(); !s) throw std::invalid_argument(s.error().message);
}

void DeadlineEstimator::record(std::uint64_t period_us) {
  ring_[next_] = period_us;
  next_ = (next_ + 1) % config_.history;
  count_ = std::min(count_ + 1, config_.history);
  std::array<std::uint64_t, kMaxHistory> sorted{};
  std::copy_n(ring_.begin(), count_, sorted.begin());
  // Upper median: with an even count the larger middle value, the conservative choice.
  const auto mid = sorted.begin() + static_cast<std::ptrdiff_t>(count_ / 2);
  std::nth_element(sorted.begin(), mid, sorted.begin() + static_cast<std::ptrdiff_t>(count_));
  const double d = config_.multiplier * static_cast<double>(*mid);
  const double cap = static_cast<double>(config_.max_deadline_us);
  deadline_us_ = d >= cap ? config_.max_deadline_us
                          : std::max(config_.min_deadline_us, static_cast<std::uint64_t>(d));
}

StageCollector::StageCollector(ChunkPlan plan, std::uint32_t contributors, DeadlineConfig deadline,
                               std::uint32_t window, std::uint16_t tensor_id)
    : plan_(plan), contributors_(contributors), window_(window), estimator_(deadline) {
  if (contributors < 1 || contributors > 65535) {
    throw std::invalid_argument("stage receiver: contributors must be 1 .. 65535");
  }
  if (window < 1 || window > 8) {
    throw std::invalid_argument("stage receiver: window must be 1 .. 8");
  }
  if (plan.size() == 0) throw std::invalid_argument("stage receiver: empty chunk plan");
  slots_.reserve(window);
  for (std::uint32_t i = 0; i < window; ++i) {
    slots_.push_back(Slot{Aggregator(plan, contributors, tensor_id),
                          std::vector<ContributorReport>(contributors), 0, 0, false});
  }
  closed_per_.resize(contributors);
}

void StageCollector::start(std::uint32_t stage) {
  for (auto& s : slots_) {
    s.agg.reset();
    std::fill(s.per.begin(), s.per.end(), ContributorReport{});
    s.first_us = s.last_us = 0;
    s.any = false;
  }
  current_ = stage;
  head_ = 0;
}

ChunkOutcome StageCollector::on_chunk(std::uint32_t stage, std::uint32_t contributor,
                                      std::uint16_t announced, const ChunkView& chunk,
                                      std::uint64_t now_us) {
  if (!current_) start(stage);
  // Serial-number distance: correct across the 2^32 wrap for stages within 2^31 of each other.
  const auto ahead = static_cast<std::int32_t>(stage - *current_);
  if (ahead < 0) {
    ++counters_.late;
    // The first late chunk of a stage the deadline closed: how long that stage would have had to
    // wait for it (see the header).
    ClosedBase& b = closed_bases_[stage % kClosedRing];
    if (b.waiting && b.stage == stage && now_us >= b.base_us) {
      b.waiting = false;
      const std::uint64_t late = now_us - b.base_us;
      estimator_.record(late);
      ++counters_.late_periods;
      const bool holding =
          late_hold_us_ != 0 && static_cast<std::int32_t>(*current_ - late_hold_until_) < 0;
      const double held = std::min(static_cast<double>(estimator_.config().max_deadline_us),
                                   kLateHoldMargin * static_cast<double>(late));
      late_hold_us_ = std::max(holding ? late_hold_us_ : 0, static_cast<std::uint64_t>(held));
      late_hold_until_ = *current_ + kLateHoldStages;
    }
    return ChunkOutcome::kLate;
  }
  if (static_cast<std::uint32_t>(ahead) >= window_) {
    ++counters_.too_early;
    return ChunkOutcome::kTooEarly;
  }
  Slot& slot = slot_ahead(static_cast<std::uint32_t>(ahead));
  if (contributor < contributors_) {
    auto& a = slot.per[contributor].announced;
    a = std::max<std::uint32_t>(a, announced);
  }
  switch (slot.agg.add(contributor, chunk)) {
    case AddOutcome::kRejected:
      ++counters_.rejected;
      return ChunkOutcome::kRejected;
    case AddOutcome::kDuplicate:
      ++counters_.duplicate;
      return ChunkOutcome::kDuplicate;
    case AddOutcome::kAccepted:
      break;
  }
  ++counters_.received;
  ContributorReport& c = slot.per[contributor];
  if (c.received == 0) c.first_us = now_us;
  c.last_us = std::max(c.last_us, now_us);
  ++c.received;
  if (!slot.any) {
    slot.first_us = now_us;
    slot.any = true;
  }
  slot.first_us = std::min(slot.first_us, now_us);
  slot.last_us = std::max(slot.last_us, now_us);
  return ChunkOutcome::kAccepted;
}

std::uint32_t StageCollector::expected_from(const ContributorReport& c) const {
  // A contributor cannot send more distinct chunks than the plan has; unheard-of ones are
  // expected to send them all.
  const auto all = static_cast<std::uint32_t>(plan_.size());
  return c.announced != 0 ? std::min(c.announced, all) : all;
}

bool StageCollector::complete(const Slot& s) const {
  for (const ContributorReport& c : s.per) {
    if (c.received < expected_from(c)) return false;
  }
  return true;
}

std::optional<std::uint64_t> StageCollector::base_us() const {
  if (!current_) return std::nullopt;
  std::optional<std::uint64_t> base;
  for (std::uint32_t a = 0; a < window_; ++a) {
    const Slot& s = slot_ahead(a);
    if (!s.any) continue;
    // The current stage's own first arrival wins; without one, a later stage's first arrival
    // shows the peers have moved on, so the current stage's clock starts then.
    if (a == 0) return s.first_us;
    base = base ? std::min(*base, s.first_us) : s.first_us;
  }
  return base;
}

std::optional<std::uint64_t> StageCollector::deadline_at_us() const {
  const auto base = base_us();
  if (!base) return std::nullopt;
  const std::uint64_t d = deadline_budget_us();
  return *base > std::numeric_limits<std::uint64_t>::max() - d
             ? std::numeric_limits<std::uint64_t>::max()
             : *base + d;
}

std::uint64_t StageCollector::deadline_budget_us() const {
  const std::uint64_t d = estimator_.deadline_us();
  if (late_hold_us_ == 0 || !current_ ||
      static_cast<std::int32_t>(*current_ - late_hold_until_) >= 0) {
    return d;
  }
  return std::max(d, late_hold_us_);
}

std::optional<ClosedStage> StageCollector::poll(std::uint64_t now_us, std::span<float> average,
                                                std::span<std::uint16_t> chunk_contributors) {
  if (!current_) return std::nullopt;
  if (complete(slot_ahead(0))) {
    return close(CloseReason::kComplete, now_us, average, chunk_contributors);
  }
  if (const auto at = deadline_at_us(); at && now_us >= *at) {
    return close(CloseReason::kDeadline, now_us, average, chunk_contributors);
  }
  return std::nullopt;
}

std::optional<ClosedStage> StageCollector::force_close(
    std::uint64_t now_us, std::span<float> average, std::span<std::uint16_t> chunk_contributors) {
  if (!current_) return std::nullopt;
  return close(CloseReason::kForced, now_us, average, chunk_contributors);
}

ClosedStage StageCollector::close(CloseReason reason, std::uint64_t now_us,
                                  std::span<float> average,
                                  std::span<std::uint16_t> chunk_contributors) {
  assert(average.size() == plan_.total_elements() && chunk_contributors.size() == plan_.size());
  Slot& slot = slot_ahead(0);
  slot.agg.average(average);
  slot.agg.chunk_contributors(chunk_contributors);

  ClosedStage r;
  r.stage = *current_;
  r.reason = reason;
  r.first_us = slot.any ? slot.first_us : 0;
  r.last_us = slot.any ? slot.last_us : 0;
  r.closed_us = now_us;
  r.deadline_budget_us = deadline_budget_us();
  r.received = static_cast<std::uint32_t>(slot.agg.received());
  for (const ContributorReport& c : slot.per) {
    const std::uint32_t expected = expected_from(c);
    r.expected += expected;
    if (c.announced != 0 && expected > c.received) r.lost += expected - c.received;
  }
  r.missing = static_cast<std::uint32_t>(contributors_ * plan_.size()) - r.received;
  for (const std::uint16_t n : chunk_contributors) {
    if (n == 0) {
      ++r.chunks_empty;
    } else if (n < contributors_) {
      ++r.chunks_partial;
    } else {
      ++r.chunks_full;
    }
  }
  std::copy(slot.per.begin(), slot.per.end(), closed_per_.begin());
  r.contributors = closed_per_;

  // Feed the deadline estimator (see the header for why a deadline-closed stage extrapolates).
  if (reason == CloseReason::kComplete && slot.any) {
    estimator_.record(r.period_us());
  } else if (reason == CloseReason::kDeadline && r.received > 0) {
    closed_bases_[r.stage % kClosedRing] = ClosedBase{r.stage, r.first_us, true};
  }
  // A contributor that sent nothing says nothing about its pace: only its late chunks will.
  const bool someone_absent = std::any_of(
      slot.per.begin(), slot.per.end(), [](const ContributorReport& c) { return c.received == 0; });
  if (reason == CloseReason::kDeadline && r.received > 0 && !someone_absent) {
    const double scaled = static_cast<double>(r.period_us()) * static_cast<double>(r.expected) /
                          static_cast<double>(r.received);
    // Half the range, computed in integers on purpose (no precision is wanted here).
    constexpr std::uint64_t kCap = std::numeric_limits<std::uint64_t>::max() / 2;
    const auto cap = static_cast<double>(kCap);
    estimator_.record(static_cast<std::uint64_t>(std::min(scaled, cap)));
  }

  counters_.missing += r.missing;
  counters_.lost += r.lost;
  switch (reason) {
    case CloseReason::kComplete:
      ++counters_.stages_complete;
      break;
    case CloseReason::kDeadline:
    case CloseReason::kIdle:
      ++counters_.stages_deadline;
      break;
    case CloseReason::kForced:
    case CloseReason::kEnded:
      ++counters_.stages_forced;
      break;
  }

  slot.agg.reset();
  std::fill(slot.per.begin(), slot.per.end(), ContributorReport{});
  slot.first_us = slot.last_us = 0;
  slot.any = false;
  current_ = *current_ + 1;
  head_ = (head_ + 1) % window_;
  return r;
}

}  // namespace predrop::ddl

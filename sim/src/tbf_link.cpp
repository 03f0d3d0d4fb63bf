#include "predrop/sim/tbf_link.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace predrop::sim {

TbfLink::TbfLink(EventQueue& events, TbfConfig config, OnDeparture on_departure, OnDrop on_drop)
    : events_(events),
      config_(config),
      on_departure_(std::move(on_departure)),
      on_drop_(std::move(on_drop)),
      tokens_(config.burst_bytes),
      filled_at_(events.now()) {}

std::uint64_t TbfLink::limit_bytes() const {
  return static_cast<std::uint64_t>(config_.rate_bps / 8.0 *
                                    static_cast<double>(config_.latency_us) / 1e6) +
         config_.burst_bytes;
}

SimTime TbfLink::backlog_us() const {
  return static_cast<SimTime>(static_cast<double>(backlog_) * 8e6 / config_.rate_bps);
}

void TbfLink::refill(SimTime now) {
  tokens_ =
      std::min<double>(config_.burst_bytes,
                       tokens_ + config_.rate_bps / 8e6 * static_cast<double>(now - filled_at_));
  filled_at_ = now;
}

void TbfLink::enqueue(Packet p) {
  const SimTime now = events_.now();
  if (backlog_ + p.bytes > limit_bytes()) {
    on_drop_(p, now);
    return;
  }
  p.enqueued_us = now;
  backlog_ += p.bytes;
  queue_.push_back(p);
  if (!scheduled_) schedule();
}

void TbfLink::set_rate(double rate_bps) {
  refill(events_.now());
  config_.rate_bps = rate_bps;
  // A departure planned at the old rate is void; plan the head again.
  ++generation_;
  scheduled_ = false;
  if (!queue_.empty()) schedule();
}

void TbfLink::schedule() {
  const SimTime now = events_.now();
  refill(now);
  const double need = static_cast<double>(queue_.front().bytes) - tokens_;
  const SimTime wait =
      need <= 0.0 ? 0 : static_cast<SimTime>(std::ceil(need * 8e6 / config_.rate_bps));
  scheduled_ = true;
  const std::uint64_t gen = generation_;
  events_.at(now + wait, [this, gen] { depart(gen); });
}

void TbfLink::depart(std::uint64_t generation) {
  if (generation != generation_) return;
  scheduled_ = false;
  const SimTime now = events_.now();
  refill(now);
  Packet p = queue_.front();
  queue_.pop_front();
  backlog_ -= p.bytes;
  tokens_ -= p.bytes;  // may go a rounding step below 0
  on_departure_(p, now);
  if (!queue_.empty()) schedule();
}

}  // namespace predrop::sim

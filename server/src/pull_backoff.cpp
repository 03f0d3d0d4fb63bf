// The back-off schedule of a pulled stream (predrop/server/pull_backoff.hpp).
#include "predrop/server/pull_backoff.hpp"

#include <algorithm>
#include <cmath>

namespace predrop::server {

PullBackoff::PullBackoff(BackoffOptions options) : options_(options) {
  options_.initial_us = std::max<std::uint64_t>(options_.initial_us, 1);
  options_.cap_us = std::max(options_.cap_us, options_.initial_us);
  options_.jitter = std::clamp(options_.jitter, 0.0, 0.5);
}

void PullBackoff::on_playing(std::uint64_t now_us) {
  playing_ = true;
  playing_since_us_ = now_us;
}

std::uint64_t PullBackoff::step_us(std::uint32_t n) const {
  std::uint64_t d = options_.initial_us;
  for (std::uint32_t i = 1; i < n && d < options_.cap_us; ++i) {
    d *= 2;
  }
  return std::min(d, options_.cap_us);
}

std::uint64_t PullBackoff::on_failure(std::uint64_t now_us, double u) {
  const bool stable = playing_ && now_us >= playing_since_us_ + options_.stable_us;
  playing_ = false;
  failures_ = stable ? 1 : failures_ + 1;
  const double spread = 1.0 - options_.jitter + 2.0 * options_.jitter * std::clamp(u, 0.0, 1.0);
  return static_cast<std::uint64_t>(std::llround(static_cast<double>(step_us(failures_)) * spread));
}

}  // namespace predrop::server

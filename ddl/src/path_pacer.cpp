// Token-bucket pacing of one DDL path at its estimated rate (path_pacer.hpp).
#include "predrop/ddl/path_pacer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace predrop::ddl {

PathPacer::PathPacer(PathPacerConfig config) : config_(config) {
  if (!(config_.gain >= 1.0)) throw std::invalid_argument("path pacer: gain below 1");
  if (config_.window < 1 || config_.window > window_.size()) {
    throw std::invalid_argument("path pacer: window must be 1..32");
  }
  if (config_.burst_packets == 0) throw std::invalid_argument("path pacer: no burst packets");
}

bool PathPacer::on_report(std::uint32_t received, std::size_t packet_bytes, double period_us) {
  if (received < std::max<std::uint32_t>(config_.min_packets, 2) || packet_bytes == 0 ||
      !std::isfinite(period_us) || period_us < config_.min_period_us) {
    return false;
  }
  // received - 1 packets' worth of bytes arrived after the first one did.
  const double sample =
      static_cast<double>(received - 1) * static_cast<double>(packet_bytes) / period_us;
  window_[samples_ % config_.window] = sample;
  ++samples_;
  return true;
}

std::optional<double> PathPacer::estimate() const {
  if (samples_ == 0) return std::nullopt;
  const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(samples_, config_.window));
  return *std::max_element(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(n));
}

std::optional<double> PathPacer::rate() const {
  const auto e = estimate();
  if (!e || *e > config_.unlimited_above) return std::nullopt;
  return *e * config_.gain;
}

double PathPacer::depth(std::size_t packet_bytes) const {
  const double r = rate().value_or(0.0);
  return std::max(static_cast<double>(config_.burst_packets) * static_cast<double>(packet_bytes),
                  r * static_cast<double>(config_.burst_us));
}

void PathPacer::refill(std::uint64_t now_us, std::size_t packet_bytes) {
  const double d = depth(packet_bytes);
  if (!primed_) {
    primed_ = true;
    tokens_ = d;
  } else if (now_us > last_us_) {
    tokens_ = std::min(d, tokens_ + *rate() * static_cast<double>(now_us - last_us_));
  }
  last_us_ = std::max(last_us_, now_us);
}

std::size_t PathPacer::allowance(std::uint64_t now_us, std::size_t packet_bytes, std::size_t want) {
  if (!rate() || packet_bytes == 0) {
    last_us_ = std::max(last_us_, now_us);
    return want;
  }
  refill(now_us, packet_bytes);
  if (tokens_ <= 0.0) return 0;
  // A packet may go while any tokens are left: the deficit (less than one packet) is paid back
  // before the next one, so the mean rate holds and a packet never waits for a whole one.
  const auto whole =
      static_cast<std::size_t>(std::ceil(tokens_ / static_cast<double>(packet_bytes)));
  return std::min(want, whole);
}

void PathPacer::sent(std::size_t packets, std::size_t packet_bytes) {
  if (!rate()) return;
  tokens_ -= static_cast<double>(packets) * static_cast<double>(packet_bytes);
}

std::uint64_t PathPacer::next_due_us(std::uint64_t now_us, std::size_t /*packet_bytes*/) const {
  const auto r = rate();
  if (!r || !primed_) return now_us;
  // Tokens at now: the refill since last_us_ (the bucket's depth does not matter below zero).
  const double at_now =
      tokens_ + (now_us > last_us_ ? *r * static_cast<double>(now_us - last_us_) : 0.0);
  if (at_now > 0.0) return now_us;
  return now_us + static_cast<std::uint64_t>(std::ceil(-at_now / *r)) + 1;
}

}  // namespace predrop::ddl

#pragma once
// When a pulled stream (docs/live.md "Pull") tries its upstream again after a failure:
// exponential back-off with jitter, reset after a stable run. A pure schedule of (now, random):
// no clock, no timer, no socket (the puller, live_pull.hpp, owns those).
//
//   delay(n) = min(cap, initial * 2^(n-1)) * (1 - jitter + 2 * jitter * u),  u in [0, 1)
//
// for the n-th failure in a row. The jitter (±25 % by default) keeps many edges that lost the
// same origin at the same moment from coming back in lock-step (AWS Architecture Blog,
// "Exponential Backoff And Jitter", 2015: "equal jitter"-like spread, but never below 75 % of
// the step, so the schedule stays readable in logs). A connection that played for at least
// `stable_us` before it failed counts as a fresh start: the next delay is `initial` again, so an
// upstream that restarts once a day is retried in half a second, while one that accepts and
// drops every connection backs off to the cap.
#include <cstdint>

namespace predrop::server {

/// Settings of the schedule.
struct BackoffOptions {
  std::uint64_t initial_us = 500'000;    ///< First delay after a failure.
  std::uint64_t cap_us = 30'000'000;     ///< Largest delay.
  double jitter = 0.25;                  ///< Relative spread, 0 .. 0.5.
  std::uint64_t stable_us = 10'000'000;  ///< A run this long resets the schedule.
};

/// The back-off schedule of one pulled stream.
class PullBackoff {
 public:
  explicit PullBackoff(BackoffOptions options = {});

  /// The connection attempt that just began playing, at `now_us`.
  void on_playing(std::uint64_t now_us);
  /// An attempt failed at `now_us` (never played, or played and then broke); `u` in [0, 1) is a
  /// uniform random draw. Returns the delay before the next attempt, µs.
  std::uint64_t on_failure(std::uint64_t now_us, double u);
  /// Failures in a row since the last stable run (the attempt count logs and metrics show).
  std::uint32_t failures() const { return failures_; }
  /// The delay without jitter for the `n`-th failure in a row (n >= 1).
  std::uint64_t step_us(std::uint32_t n) const;
  const BackoffOptions& options() const { return options_; }

 private:
  BackoffOptions options_;
  std::uint32_t failures_ = 0;
  bool playing_ = false;
  std::uint64_t playing_since_us_ = 0;
};

}  // namespace predrop::server

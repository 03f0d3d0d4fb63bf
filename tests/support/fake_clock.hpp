#pragma once
// A hand-driven Clock for tests (pion's internal/test/mock_time.go): time moves only when the test
// says so, so nothing ever sleeps.
#include <cstdint>

#include "predrop/net/clock.hpp"

namespace predrop::test {

/// Clock whose time the test sets and advances explicitly.
class FakeClock final : public net::Clock {
 public:
  /// Starts at `start_us` (non-zero by default so "0 = unset" bugs show up).
  explicit FakeClock(std::uint64_t start_us = 1'000'000) : now_us_(start_us) {}

  /// The time last set or advanced to (then moved on by the step per read, if one is set).
  std::uint64_t now_us() const override {
    const std::uint64_t now = now_us_;
    now_us_ += step_per_read_us_;
    return now;
  }
  /// Every later now_us() moves time forward by `step_us` after answering (0: off), for code
  /// that checks how long it has been running.
  void set_step_per_read_us(std::uint64_t step_us) { step_per_read_us_ = step_us; }
  /// Moves time forward by `delta_us`.
  void advance_us(std::uint64_t delta_us) { now_us_ += delta_us; }
  /// Moves time forward by `delta_ms` milliseconds.
  void advance_ms(std::uint64_t delta_ms) { now_us_ += delta_ms * 1000u; }
  /// Sets the time; callers keep it monotonic.
  void set_us(std::uint64_t now_us) { now_us_ = now_us; }

 private:
  mutable std::uint64_t now_us_;
  std::uint64_t step_per_read_us_ = 0;
};

}  // namespace predrop::test

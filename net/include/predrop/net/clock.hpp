#pragma once
// Injected time (STYLE.md "Inject time"): code that needs "now" takes a Clock, so tests can drive
// it with tests/support/fake_clock.hpp instead of sleeping.
#include <cstdint>

namespace predrop::net {

/// Source of monotonic time in microseconds. Implementations must be cheap to call per packet.
class Clock {
 public:
  Clock() = default;
  Clock(const Clock&) = default;
  Clock& operator=(const Clock&) = default;
  Clock(Clock&&) = default;
  Clock& operator=(Clock&&) = default;
  virtual ~Clock() = default;

  /// Microseconds since an unspecified, fixed origin; never goes backwards.
  virtual std::uint64_t now_us() const = 0;
};

/// CLOCK_MONOTONIC in microseconds. This is the clock uv_hrtime() reads on Linux, and network
/// namespaces share it, so send and receive stamps from two namespaces compare directly.
std::uint64_t monotonic_now_us();

/// The real clock: CLOCK_MONOTONIC (see monotonic_now_us()).
class MonotonicClock final : public Clock {
 public:
  /// Current CLOCK_MONOTONIC time in microseconds.
  std::uint64_t now_us() const override { return monotonic_now_us(); }
};

}  // namespace predrop::net

#include "predrop/net/clock.hpp"

#include <time.h>

namespace predrop::net {

std::uint64_t monotonic_now_us() {
  timespec ts{};
  // CLOCK_MONOTONIC cannot fail with a valid timespec pointer; it is served from the vDSO, so the
  // call costs tens of nanoseconds and may run per datagram.
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1'000u;
}

}  // namespace predrop::net

#pragma once
// Driving a libuv loop on a FakeClock for the DDL tests: settle() runs the loop until no datagram
// is in flight, drive() alternates that with steps of fake time. Peers that read the injected
// clock for every decision (DdlRelay, DdlWorker) then behave exactly the same on every run.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>

#include "fake_clock.hpp"
#include "predrop/net/event_loop.hpp"

namespace predrop::test {

/// Runs `loop` without blocking until three passes in a row handled no datagram (`handled`
/// counts them over every peer). On loopback a datagram is in the receiver's queue when the
/// sender's call returns, so then nothing is in flight: every peer is done or waits for time.
inline void settle(net::EventLoop& loop, const std::function<std::uint64_t()>& handled) {
  std::uint64_t last = handled();
  for (int idle = 0; idle < 3;) {
    loop.run_nowait();
    const std::uint64_t now = handled();
    idle = now == last ? idle + 1 : 0;
    last = now;
  }
}

/// Settles the loop, and while `done` is false moves `clock` on by `step_ms` and lets every peer
/// judge the new time (`poll_all`). Returns the number of steps; fails the test after `max_steps`.
/// Ends with loop.run(), which returns once the peers' handles are closed.
inline std::uint32_t drive(net::EventLoop& loop, FakeClock& clock, std::uint64_t step_ms,
                           std::uint32_t max_steps, const std::function<std::uint64_t()>& handled,
                           const std::function<void()>& poll_all,
                           const std::function<bool()>& done) {
  std::uint32_t steps = 0;
  for (;;) {
    settle(loop, handled);
    if (done()) break;
    if (steps == max_steps) {
      ADD_FAILURE() << "not done after " << steps << " steps of " << step_ms << " ms";
      break;
    }
    clock.advance_ms(step_ms);
    poll_all();
    ++steps;
  }
  loop.run();
  return steps;
}

}  // namespace predrop::test

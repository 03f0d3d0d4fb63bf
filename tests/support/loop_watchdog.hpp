#pragma once
// A safety net for tests that run a real loop, not a timing assertion: if an expected event never
// comes, the test fails and the loop stops instead of hanging until ctest's timeout. The timer is
// unreferenced, so it never keeps run() alive by itself.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "predrop/net/event_loop.hpp"

namespace predrop::test {

/// Fails the test with `what` and stops `loop` if still running after `timeout_ms`.
inline std::unique_ptr<net::Timer> loop_watchdog(net::EventLoop& loop, std::string what,
                                                 std::uint64_t timeout_ms = 10'000) {
  auto t = std::make_unique<net::Timer>(loop, [&loop, what = std::move(what)] {
    ADD_FAILURE() << "watchdog fired: " << what;
    loop.stop();
  });
  t->start(timeout_ms);
  t->keep_loop_alive(false);
  return t;
}

}  // namespace predrop::test

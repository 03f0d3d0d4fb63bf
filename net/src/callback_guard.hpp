#pragma once
// Private: the try/catch every libuv trampoline in net/src wraps its owner's callback in
// (predrop/net/callback_faults.hpp says what is caught and what happens then).
#include <exception>
#include <utility>

#include "predrop/net/callback_faults.hpp"

namespace predrop::net::detail {

/// Counts and logs one caught exception; never throws.
void note_callback_fault(CallbackKind kind, const char* what) noexcept;

/// Runs `fn`; returns false (after counting and logging) if it threw.
template <typename Fn>
bool guarded(CallbackKind kind, Fn&& fn) noexcept {
  try {
    std::forward<Fn>(fn)();
    return true;
  } catch (const std::exception& e) {
    note_callback_fault(kind, e.what());
  } catch (...) {
    note_callback_fault(kind, "exception not derived from std::exception");
  }
  return false;
}

}  // namespace predrop::net::detail

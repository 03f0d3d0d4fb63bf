#pragma once
// The exception boundary of a loop callback (docs/design.md §5 "Errors": none may leave a loop
// callback). The relay and the worker run each of their UDP and timer callbacks through one
// boundary per callback kind: an exception is caught there, counted, logged (the first ones and
// then every power of two, so that a flood cannot flood the log) and handed to the owner's
// recovery, which drops only what the failure concerns (the offending packet or peer). Nothing
// is allocated unless something throws.
//
// Threading: the owner's loop thread.
#include <cstdint>
#include <exception>
#include <utility>

namespace predrop::ddl {

/// Counts and logs exceptions caught at loop-callback boundaries of one object.
class CallbackBoundary {
 public:
  /// `component` names the owner in log lines ("ddl-relay").
  explicit CallbackBoundary(const char* component) : component_(component) {}

  /// Runs `fn()`. If it throws, counts and logs the exception as one of callback kind `kind` and
  /// calls `recover(what)`; whatever `recover` throws is swallowed. Returns false if `fn` threw.
  template <class Fn, class Recover>
  bool run(const char* kind, Fn&& fn, Recover&& recover) noexcept {
    try {
      std::forward<Fn>(fn)();
      return true;
    } catch (const std::exception& e) {
      caught(kind, e.what(), recover);
    } catch (...) {
      caught(kind, "unknown exception", recover);
    }
    return false;
  }

  /// Exceptions caught so far.
  std::uint64_t caught() const { return count_; }

 private:
  template <class Recover>
  void caught(const char* kind, const char* what, Recover& recover) noexcept {
    ++count_;
    log(kind, what);
    try {
      recover(what);
    } catch (...) {  // NOLINT(bugprone-empty-catch): the recovery is best effort
    }
  }
  void log(const char* kind, const char* what) noexcept;

  const char* component_;
  std::uint64_t count_ = 0;
};

}  // namespace predrop::ddl

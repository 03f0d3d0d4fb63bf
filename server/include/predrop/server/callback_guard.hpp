#pragma once
// The one exception boundary of the server's loop callbacks (docs/design.md §5 "Errors": no
// exception may leave a loop callback, since libuv's C frames would end the process). Each
// callback kind runs its handler through CallbackGuard::run(); an exception is caught there,
// counted per kind (predrop_callback_exceptions_total{kind=...}), logged (the first ones of each
// kind, then every power of two), and reported to the caller, which closes only the offending
// connection or session and lets the process go on.
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>
#include <utility>

namespace predrop::server {

/// The kinds of loop callback the server runs.
enum class CallbackKind : std::uint8_t {
  kRtsp,     ///< An RTSP connection's data, close or accept callback.
  kRtcp,     ///< A datagram on the RTCP port.
  kTimer,    ///< The pacing and housekeeping timers (and the program's own timers, signals).
  kMetrics,  ///< A metrics HTTP request.
};
inline constexpr std::size_t kCallbackKinds = 4;

/// "rtsp", "rtcp", "timer", "metrics".
std::string_view to_string(CallbackKind kind);

/// Catches, counts and logs what a callback throws.
class CallbackGuard {
 public:
  /// Runs `handler()`; returns false if it threw (the exception is counted and logged, never
  /// rethrown).
  template <typename Handler>
  bool run(CallbackKind kind, Handler&& handler) noexcept {
    try {
      std::forward<Handler>(handler)();
      return true;
    } catch (const std::exception& e) {
      caught(kind, e.what());
    } catch (...) {
      caught(kind, "an exception not derived from std::exception");
    }
    return false;
  }
  /// Exceptions caught in callbacks of `kind`.
  std::uint64_t count(CallbackKind kind) const { return counts_[static_cast<std::size_t>(kind)]; }

 private:
  void caught(CallbackKind kind, const char* what) noexcept;
  std::array<std::uint64_t, kCallbackKinds> counts_{};
};

}  // namespace predrop::server

#pragma once
// The exception boundary of loop callbacks (docs/design.md §5 "Errors"): no exception may leave a
// libuv callback, whose C frames would end the process. The rule is kept here once. A callback's
// work runs through CallbackGuard::run(); an exception is caught there, counted per kind, logged
// (the first 8 of a kind, then every power of two, each with its running count, so that a peer
// that triggers it on every packet cannot flood the log) and handed to the owner's recovery,
// which drops only what the failure concerns. Nothing is allocated unless something throws.
//
// Its owners, each with its own recovery:
//   net/ itself, in every libuv trampoline (loop_guard(): the last line) -- a timer, signal or
//     wake-up simply returns, a UDP handler loses that datagram, a TCP connection whose data or
//     connect handler threw is closed (its close handler is told why);
//   the stream server per connection and session (it closes only the offending one; the counts
//     are the metric predrop_callback_exceptions_total{kind});
//   the DDL relay (it evicts the peer being worked on) and the relay client (it leaves the job).
//
// Threading: run() on the owner's loop thread; the counts are relaxed atomics, readable from any
// thread (metrics, the process-wide loop_guard()).
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <utility>

namespace predrop::net {

/// The kinds of loop callback; also the labels of the counts.
enum class CallbackKind : std::uint8_t {
  kTimer,       ///< A timer (the pacer, housekeeping, deadlines, keep-alives).
  kSignal,      ///< A signal watcher.
  kAsync,       ///< A cross-thread wake-up.
  kTcpConnect,  ///< A TCP connect completion.
  kTcpAccept,   ///< A TCP listener's new connection.
  kTcpData,     ///< Data on a TCP connection.
  kTcpClose,    ///< A TCP connection's close.
  kUdpReceive,  ///< A UDP datagram.
  kRtsp,        ///< An RTSP connection's request, accept or close (the server).
  kRtcp,        ///< A datagram on the server's RTCP port.
  kMetrics,     ///< A metrics HTTP request.
  kCall,        ///< An owner's call into the object (submit, report, stop, poll).
  kCount,       ///< Number of kinds, not a kind.
};

/// Number of kinds.
inline constexpr std::size_t kCallbackKinds = static_cast<std::size_t>(CallbackKind::kCount);

/// Stable lower-case name of a kind ("timer", "udp_receive", "rtsp", ...), for logs and labels.
const char* to_string(CallbackKind kind);

/// Catches, counts and logs what a loop callback throws (see the file comment).
class CallbackGuard {
 public:
  /// `component` names the owner in log lines ("net", "server", "ddl-relay"); a literal.
  explicit CallbackGuard(const char* component) noexcept : component_(component) {}
  CallbackGuard(const CallbackGuard&) = delete;
  CallbackGuard& operator=(const CallbackGuard&) = delete;
  CallbackGuard(CallbackGuard&&) = delete;
  CallbackGuard& operator=(CallbackGuard&&) = delete;
  ~CallbackGuard() = default;

  /// Runs `fn()`. If it throws, counts and logs the exception as one of `kind` and returns false.
  template <class Fn>
  bool run(CallbackKind kind, Fn&& fn) noexcept {
    return run(kind, std::forward<Fn>(fn), [](const char*) {});
  }

  /// As run(kind, fn), then calls `recover(what)`; whatever `recover` throws is swallowed.
  template <class Fn, class Recover>
  bool run(CallbackKind kind, Fn&& fn, Recover&& recover) noexcept {
    try {
      std::forward<Fn>(fn)();
      return true;
    } catch (const std::exception& e) {
      caught(kind, e.what(), recover);
    } catch (...) {
      caught(kind, "an exception not derived from std::exception", recover);
    }
    return false;
  }

  /// Exceptions caught in callbacks of `kind`.
  std::uint64_t count(CallbackKind kind) const;
  /// Exceptions caught, all kinds.
  std::uint64_t total() const;

 private:
  template <class Recover>
  void caught(CallbackKind kind, const char* what, Recover& recover) noexcept {
    note(kind, what);
    try {
      recover(what);
    } catch (...) {  // NOLINT(bugprone-empty-catch): the recovery is best effort
    }
  }
  // Counts and logs one caught exception; never throws.
  void note(CallbackKind kind, const char* what) noexcept;

  const char* component_;
  std::array<std::atomic<std::uint64_t>, kCallbackKinds> counts_{};
};

/// The guard of net/'s own libuv trampolines, process-wide (every loop, every thread).
CallbackGuard& loop_guard();

}  // namespace predrop::net

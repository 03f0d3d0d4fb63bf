#pragma once
// libuv loop and handle wrappers (mediasoup's handles/ pattern): each wrapper owns one libuv
// handle, sets `handle->data = this`, and static callbacks forward to members. The handle's memory
// is freed in libuv's close callback, not in the destructor, because libuv may still touch a
// closing handle until then.
//
// Threading: a loop and every handle on it are used from the thread that runs the loop. The only
// exception is AsyncWake::send(), which any thread may call. <uv.h> stays out of this header; the
// libuv types appear only as opaque forward declarations.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "predrop/core/result.hpp"

struct uv_loop_s;
struct uv_handle_s;

namespace predrop::net {

class EventLoop;

namespace detail {

/// Base of every wrapper that owns one libuv handle. It lets EventLoop::close() close handles
/// whose wrappers are still alive: such a wrapper is detached and later destroys as a no-op.
class LoopHandle {
 public:
  LoopHandle(const LoopHandle&) = delete;
  LoopHandle& operator=(const LoopHandle&) = delete;
  LoopHandle(LoopHandle&&) = delete;
  LoopHandle& operator=(LoopHandle&&) = delete;

  /// True until the handle is closed (by close(), the destructor, or EventLoop::close()).
  bool is_open() const { return handle_ != nullptr; }
  /// Whether this handle alone keeps EventLoop::run() from returning (libuv's ref/unref).
  void keep_loop_alive(bool keep);

 protected:
  LoopHandle() = default;
  virtual ~LoopHandle();

  /// Closes the handle (idempotent). No callback reaches this wrapper afterwards; the memory is
  /// freed later by libuv's close callback.
  void close_handle();
  /// Hook for wrappers that cache state derived from the handle (such as a socket fd).
  virtual void on_handle_closing() {}

  uv_handle_s* handle_ = nullptr;

 private:
  friend class predrop::net::EventLoop;
};

}  // namespace detail

/// Owns a libuv loop. Not copyable or movable: handles keep a reference to it.
class EventLoop {
 public:
  /// Initialises the loop; throws std::runtime_error if libuv cannot (start-up only).
  EventLoop();
  /// Calls close(); a wrapper that outlives the loop is detached and harmless.
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;
  EventLoop(EventLoop&&) = delete;
  EventLoop& operator=(EventLoop&&) = delete;

  /// Runs until stop() or until nothing is left to wait for.
  void run();
  /// Waits for and processes one round of events; returns true if more work remains.
  bool run_once();
  /// Processes ready events without blocking; returns true if more work remains.
  bool run_nowait();
  /// Makes run() return after the current iteration. Loop thread only (use AsyncWake elsewhere).
  void stop();

  /// Closes every handle still open (detaching its wrapper), runs the close callbacks and closes
  /// the loop. Returns an error if libuv still reports the loop busy. Idempotent. Not from inside
  /// a loop callback (uv_run is not re-entrant): stop() there and close after run() returns.
  core::Status close();
  /// True once close() has succeeded.
  bool is_closed() const { return loop_ == nullptr; }
  /// Number of handles on the loop, closing ones included (0 after a clean shutdown).
  std::size_t handle_count() const;
  /// Handles that close() had to close because their wrappers were still alive (a leak sign).
  std::size_t forced_closes() const { return forced_closes_; }

  /// The raw loop, for the wrappers in net/src only (no other module can use it without <uv.h>).
  uv_loop_s* native() const { return loop_; }

 private:
  uv_loop_s* loop_ = nullptr;
  std::size_t forced_closes_ = 0;
};

/// One-shot or repeating timer (uv_timer). The callback may destroy the Timer.
class Timer final : public detail::LoopHandle {
 public:
  /// Creates a stopped timer that calls `on_fire` on the loop thread.
  Timer(EventLoop& loop, std::function<void()> on_fire);

  /// Arms the timer: first fire after `timeout_ms`, then every `repeat_ms` (0 = once). Re-arming
  /// a running timer restarts it. Granularity is libuv's: milliseconds against the cached loop
  /// time, so a timer may fire up to 1 ms late and never early.
  void start(std::uint64_t timeout_ms, std::uint64_t repeat_ms = 0);
  /// Arms a one-shot timer `timeout_ms` after the current time, not after the cached loop time:
  /// refreshes libuv's clock first, so a timer armed at the end of long work does not fire early.
  void start_from_now(std::uint64_t timeout_ms);
  /// Disarms the timer; no-op if it is not running.
  void stop();
  /// True while armed.
  bool is_active() const;

 private:
  friend struct TimerCallbacks;
  std::function<void()> on_fire_;
};

namespace detail {
class SignalHandle;
}

/// Calls a function on the loop thread when one of the given signals arrives (SIGINT/SIGTERM for
/// an orderly shutdown). libuv installs the process-wide handler; the watcher only observes.
class SignalWatcher {
 public:
  /// Starts watching every signal in `signals`; throws std::runtime_error if libuv refuses one.
  SignalWatcher(EventLoop& loop, std::initializer_list<int> signals,
                std::function<void(int signum)> on_signal);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;
  SignalWatcher(SignalWatcher&&) = delete;
  SignalWatcher& operator=(SignalWatcher&&) = delete;

  /// Whether the watcher alone keeps EventLoop::run() from returning (default: yes).
  void keep_loop_alive(bool keep);

 private:
  std::function<void(int)> on_signal_;
  std::vector<std::unique_ptr<detail::SignalHandle>> handles_;
};

/// Wakes the loop from another thread (uv_async). Several send() calls before the loop runs
/// coalesce into one on_wake call, as libuv documents.
class AsyncWake final : public detail::LoopHandle {
 public:
  /// Registers the handle; `on_wake` runs on the loop thread. Throws std::runtime_error on failure.
  AsyncWake(EventLoop& loop, std::function<void()> on_wake);

  /// Thread-safe, async-signal-safe request to run on_wake on the loop thread. The caller must
  /// keep the AsyncWake alive until no thread can call send() any more.
  void send();

 private:
  friend struct AsyncCallbacks;
  std::function<void()> on_wake_;
};

}  // namespace predrop::net

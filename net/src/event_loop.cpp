#include "predrop/net/event_loop.hpp"

#include <cassert>
#include <stdexcept>

#include "predrop/net/callback_guard.hpp"
#include "uv_util.hpp"

namespace predrop::net {
namespace detail {

void close_and_free(uv_handle_t* handle) {
  handle->data = nullptr;
  if (uv_is_closing(handle) != 0) {
    return;
  }
  // libuv keeps delivering the rest of a recvmmsg batch to a closing UDP handle unless its receive
  // callback is cleared first; the wrapper check in the callback covers it too, this saves work.
  if (handle->type == UV_UDP) {
    uv_udp_recv_stop(reinterpret_cast<uv_udp_t*>(handle));
  }
  uv_close(handle, [](uv_handle_t* h) { std::free(h); });
}

LoopHandle::~LoopHandle() {
  close_handle();
}

void LoopHandle::close_handle() {
  if (handle_ == nullptr) {
    return;
  }
  on_handle_closing();
  uv_handle_t* h = handle_;
  handle_ = nullptr;
  close_and_free(h);
}

void LoopHandle::keep_loop_alive(bool keep) {
  if (handle_ == nullptr) {
    return;
  }
  if (keep) {
    uv_ref(handle_);
  } else {
    uv_unref(handle_);
  }
}

/// One uv_signal handle of a SignalWatcher.
class SignalHandle final : public LoopHandle {
 public:
  SignalHandle(EventLoop& loop, int signum, const std::function<void(int)>* on_signal)
      : on_signal_(on_signal) {
    auto* h = alloc_handle<uv_signal_t>();
    uv_signal_init(loop.native(), h);  // Cannot fail on Unix.
    h->data = static_cast<LoopHandle*>(this);
    handle_ = reinterpret_cast<uv_handle_t*>(h);
    const int rc = uv_signal_start(h, &SignalHandle::on_signal, signum);
    if (rc != 0) {
      throw std::runtime_error(
          uv_error("uv_signal_start(" + std::to_string(signum) + ")", rc).message);
    }
  }

 private:
  static void on_signal(uv_signal_t* h, int signum) {
    auto* self = owner<SignalHandle>(h);
    if (self != nullptr) {
      loop_guard().run(CallbackKind::kSignal, [&] { (*self->on_signal_)(signum); });
    }
  }

  const std::function<void(int)>* on_signal_;
};

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// EventLoop

EventLoop::EventLoop() {
  auto* loop = static_cast<uv_loop_t*>(std::calloc(1, sizeof(uv_loop_t)));
  if (loop == nullptr) {
    throw std::bad_alloc();
  }
  const int rc = uv_loop_init(loop);
  if (rc != 0) {
    std::free(loop);
    throw std::runtime_error(detail::uv_error("uv_loop_init", rc).message);
  }
  loop_ = loop;
}

EventLoop::~EventLoop() {
  // A busy loop after close() means a libuv request outlived its handle; leaking the loop is safer
  // than freeing memory libuv may still write to.
  (void)close();
}

void EventLoop::run() {
  if (loop_ != nullptr) {
    uv_run(loop_, UV_RUN_DEFAULT);
  }
}

bool EventLoop::run_once() {
  return loop_ != nullptr && uv_run(loop_, UV_RUN_ONCE) != 0;
}

bool EventLoop::run_nowait() {
  return loop_ != nullptr && uv_run(loop_, UV_RUN_NOWAIT) != 0;
}

void EventLoop::stop() {
  if (loop_ != nullptr) {
    uv_stop(loop_);
  }
}

core::Status EventLoop::close() {
  if (loop_ == nullptr) {
    return core::Ok{};
  }
  uv_walk(
      loop_,
      [](uv_handle_t* h, void* arg) {
        if (uv_is_closing(h) != 0) {
          return;
        }
        auto* self = static_cast<EventLoop*>(arg);
        ++self->forced_closes_;
        auto* owner = static_cast<detail::LoopHandle*>(h->data);
        if (owner != nullptr) {
          owner->close_handle();  // Detaches the wrapper; its destructor becomes a no-op.
        } else {
          detail::close_and_free(h);
        }
      },
      this);
  // Every handle is closing now; this runs their close callbacks and any cancelled requests.
  uv_run(loop_, UV_RUN_DEFAULT);
  const int rc = uv_loop_close(loop_);
  if (rc != 0) {
    return detail::uv_error("uv_loop_close", rc);
  }
  std::free(loop_);
  loop_ = nullptr;
  return core::Ok{};
}

std::size_t EventLoop::handle_count() const {
  if (loop_ == nullptr) {
    return 0;
  }
  std::size_t n = 0;
  uv_walk(
      loop_, [](uv_handle_t*, void* arg) { ++*static_cast<std::size_t*>(arg); }, &n);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Timer

struct TimerCallbacks {
  static void on_timer(uv_timer_t* h) {
    auto* self = detail::owner<Timer>(h);
    if (self != nullptr) {
      loop_guard().run(CallbackKind::kTimer, [&] { self->on_fire_(); });
    }
  }
};

Timer::Timer(EventLoop& loop, std::function<void()> on_fire) : on_fire_(std::move(on_fire)) {
  auto* h = detail::alloc_handle<uv_timer_t>();
  uv_timer_init(loop.native(), h);  // Cannot fail on Unix.
  h->data = static_cast<detail::LoopHandle*>(this);
  handle_ = reinterpret_cast<uv_handle_t*>(h);
}

void Timer::start(std::uint64_t timeout_ms, std::uint64_t repeat_ms) {
  if (handle_ == nullptr) {
    return;
  }
  uv_timer_start(reinterpret_cast<uv_timer_t*>(handle_), &TimerCallbacks::on_timer, timeout_ms,
                 repeat_ms);
}

void Timer::start_from_now(std::uint64_t timeout_ms) {
  if (handle_ == nullptr) {
    return;
  }
  uv_update_time(handle_->loop);
  uv_timer_start(reinterpret_cast<uv_timer_t*>(handle_), &TimerCallbacks::on_timer, timeout_ms, 0);
}

void Timer::stop() {
  if (handle_ != nullptr) {
    uv_timer_stop(reinterpret_cast<uv_timer_t*>(handle_));
  }
}

bool Timer::is_active() const {
  return handle_ != nullptr && uv_is_active(handle_) != 0;
}

// ---------------------------------------------------------------------------------------------
// SignalWatcher

SignalWatcher::SignalWatcher(EventLoop& loop, std::initializer_list<int> signals,
                             std::function<void(int)> on_signal)
    : on_signal_(std::move(on_signal)) {
  handles_.reserve(signals.size());
  for (int signum : signals) {
    handles_.push_back(std::make_unique<detail::SignalHandle>(loop, signum, &on_signal_));
  }
}

SignalWatcher::~SignalWatcher() = default;

void SignalWatcher::keep_loop_alive(bool keep) {
  for (auto& h : handles_) {
    h->keep_loop_alive(keep);
  }
}

// ---------------------------------------------------------------------------------------------
// AsyncWake

struct AsyncCallbacks {
  static void on_async(uv_async_t* h) {
    auto* self = detail::owner<AsyncWake>(h);
    if (self != nullptr) {
      loop_guard().run(CallbackKind::kAsync, [&] { self->on_wake_(); });
    }
  }
};

AsyncWake::AsyncWake(EventLoop& loop, std::function<void()> on_wake)
    : on_wake_(std::move(on_wake)) {
  auto* h = detail::alloc_handle<uv_async_t>();
  const int rc = uv_async_init(loop.native(), h, &AsyncCallbacks::on_async);
  if (rc != 0) {
    detail::free_uninitialised(h);
    throw std::runtime_error(detail::uv_error("uv_async_init", rc).message);
  }
  h->data = static_cast<detail::LoopHandle*>(this);
  handle_ = reinterpret_cast<uv_handle_t*>(h);
}

void AsyncWake::send() {
  if (handle_ != nullptr) {
    uv_async_send(reinterpret_cast<uv_async_t*>(handle_));
  }
}

}  // namespace predrop::net

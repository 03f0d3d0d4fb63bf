#pragma once
// Work that must not hold up a loop, run on one background thread of its own, with each job's
// completion brought back to the loop thread (the shape of libuv's uv_queue_work, but with one
// ordered thread per owner instead of a shared pool, so that the jobs of one owner never run
// at the same time and run in the order they were posted: a DTLS association's datagrams and
// timer ticks must reach OpenSSL one at a time and in order).
//
// Why: a DTLS handshake flight costs a worker ~1-2 ms of CPU (key exchange, signature,
// certificate check). On the worker's loop, viewers joining at tens per second delay the
// stages of viewers already playing (docs/webrtc.md "Sessions per core"). On a thread of its
// own, at a lower scheduling priority (Options::nice), the kernel runs the loop first whenever
// both are ready: joins use the CPU the playing sessions leave.
//
// Bounded: at most Options::max_pending jobs wait; post() refuses the next one (the caller
// counts the drop; for DTLS the peer's retransmission recovers it). A job or completion that
// throws is dropped, and counted (failed_jobs()); the others go on.
//
// Threading: construct, post() and destroy on the loop thread; jobs run on the background
// thread, completions on the loop thread (through an AsyncWake, in posting order). The
// destructor joins the thread: a running job finishes, queued jobs and completions not yet run
// are dropped (destroyed, never called).
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "predrop/net/event_loop.hpp"

namespace predrop::net {

class OffloadThread {
 public:
  /// What runs on the loop thread once its job is done.
  using Completion = std::function<void()>;
  /// What runs on the background thread; returns its completion (empty: nothing to do).
  using Job = std::function<Completion()>;

  struct Options {
    /// Jobs that may wait (queued, not yet started) before post() refuses.
    std::size_t max_pending = 1024;
    /// The thread's nice value relative to the process (Linux: per thread). Positive: the
    /// loop's thread wins the CPU whenever both are ready.
    int nice = 10;
    /// The thread's name in top/ps (at most 15 characters are kept).
    std::string name = "predrop-offload";
  };

  /// Starts the thread. Throws std::runtime_error if the thread or the wake-up cannot be made
  /// (start-up only).
  OffloadThread(EventLoop& loop, Options options);
  explicit OffloadThread(EventLoop& loop) : OffloadThread(loop, Options{}) {}
  ~OffloadThread();
  OffloadThread(const OffloadThread&) = delete;
  OffloadThread& operator=(const OffloadThread&) = delete;
  OffloadThread(OffloadThread&&) = delete;
  OffloadThread& operator=(OffloadThread&&) = delete;

  /// Queues a job; false (and the job is destroyed) if max_pending jobs already wait.
  bool post(Job job);
  /// Jobs queued or running whose completion has not run yet (loop thread).
  std::size_t outstanding() const { return outstanding_; }
  /// Jobs or completions that threw.
  std::uint64_t failed_jobs() const;

 private:
  void run_thread(int nice, std::string name);
  void deliver();

  const std::size_t max_pending_;
  std::size_t outstanding_ = 0;  // loop thread only

  mutable std::mutex mutex_;
  std::condition_variable wake_thread_;
  std::deque<Job> jobs_;          // guarded by mutex_
  std::vector<Completion> done_;  // guarded by mutex_; one entry per finished job
  std::uint64_t failed_ = 0;      // guarded by mutex_
  bool stopping_ = false;         // guarded by mutex_

  AsyncWake wake_loop_;
  std::thread thread_;  // last: started after everything it touches exists
};

}  // namespace predrop::net

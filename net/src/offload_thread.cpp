// A background thread for one owner's slow jobs; see offload_thread.hpp.
#include "predrop/net/offload_thread.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace predrop::net {

OffloadThread::OffloadThread(EventLoop& loop, Options options)
    : max_pending_(options.max_pending), wake_loop_(loop, [this] { deliver(); }) {
  // Idle, the wake-up does not keep the loop running; post() refers it while jobs are out.
  wake_loop_.keep_loop_alive(false);
  thread_ = std::thread([this, nice = options.nice, name = std::move(options.name)]() mutable {
    run_thread(nice, std::move(name));
  });
}

OffloadThread::~OffloadThread() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    jobs_.clear();
  }
  wake_thread_.notify_one();
  thread_.join();
  // Completions not yet delivered are destroyed with done_, never called.
}

bool OffloadThread::post(Job job) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (jobs_.size() >= max_pending_) return false;
    jobs_.push_back(std::move(job));
  }
  wake_thread_.notify_one();
  if (outstanding_++ == 0) wake_loop_.keep_loop_alive(true);
  return true;
}

std::uint64_t OffloadThread::failed_jobs() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return failed_;
}

void OffloadThread::run_thread(int nice, std::string name) {
  // Linux gives each thread its own nice value (setpriority on the thread id); a failure only
  // leaves the thread at the process's priority.
  if (nice != 0) {
    const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
    (void)::setpriority(PRIO_PROCESS, tid, ::getpriority(PRIO_PROCESS, tid) + nice);
  }
  name.resize(std::min<std::size_t>(name.size(), 15));
  (void)::pthread_setname_np(::pthread_self(), name.c_str());

  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_thread_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    Completion done;
    bool failed = false;
    try {
      done = job();
    } catch (...) {
      failed = true;  // the job's owner learns nothing; failed_jobs() counts it
    }
    job = nullptr;  // what the job holds is released here, off the loop
    lock.lock();
    if (failed) ++failed_;
    done_.push_back(std::move(done));
    lock.unlock();
    wake_loop_.send();
    lock.lock();
  }
}

void OffloadThread::deliver() {
  std::vector<Completion> ready;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    ready.swap(done_);
  }
  for (auto& done : ready) {
    --outstanding_;
    if (!done) continue;
    // One completion that throws must not lose the ones after it (nor the count above).
    try {
      done();
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex_);
      ++failed_;
    }
  }
  if (outstanding_ == 0) wake_loop_.keep_loop_alive(false);
}

}  // namespace predrop::net

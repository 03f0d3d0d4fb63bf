// OffloadThread: jobs run off the loop thread and in order, completions come back on the loop
// thread in the same order, the queue is bounded, a throwing job is counted and the rest go on,
// and destruction with jobs still queued neither calls their completions nor hangs, and
// releases what they hold. A real
// libuv loop; no timing is asserted (latches order the threads).
#include "predrop/net/offload_thread.hpp"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "loop_watchdog.hpp"

namespace predrop::net {
namespace {

TEST(OffloadThread, RunsJobsOffTheLoopInOrderAndCompletesOnTheLoop) {
  EventLoop loop;
  const auto loop_thread = std::this_thread::get_id();
  std::vector<int> ran;        // written by the background thread only
  std::vector<int> completed;  // written by the loop thread only
  bool off_loop = true;
  {
    OffloadThread offload(loop);
    auto dog = test::loop_watchdog(loop, "expected completions never came");
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(offload.post([&, i]() -> OffloadThread::Completion {
        off_loop = off_loop && std::this_thread::get_id() != loop_thread;
        ran.push_back(i);
        return [&, i] {
          EXPECT_EQ(std::this_thread::get_id(), loop_thread);
          completed.push_back(i);
        };
      }));
    }
    EXPECT_EQ(offload.outstanding(), 50u);
    // The wake-up keeps run() alive exactly while jobs are out: run() returns once all are back.
    loop.run();
    EXPECT_EQ(offload.outstanding(), 0u);
    EXPECT_EQ(offload.failed_jobs(), 0u);
  }
  EXPECT_TRUE(off_loop);
  ASSERT_EQ(completed.size(), 50u);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(ran[static_cast<std::size_t>(i)], i);
    EXPECT_EQ(completed[static_cast<std::size_t>(i)], i);
  }
  ASSERT_TRUE(loop.close().ok());
  EXPECT_EQ(loop.forced_closes(), 0u);
}

TEST(OffloadThread, RefusesJobsBeyondTheBoundAndCountsThrows) {
  EventLoop loop;
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::promise<void> started;
  int completed = 0;
  {
    OffloadThread offload(loop, {.max_pending = 3, .nice = 0, .name = "test"});
    auto dog = test::loop_watchdog(loop, "expected completions never came");
    // The first job holds the thread, so the next ones wait in the queue.
    ASSERT_TRUE(offload.post([&]() -> OffloadThread::Completion {
      started.set_value();
      gate.wait();
      return [&] { ++completed; };
    }));
    started.get_future().wait();
    ASSERT_TRUE(offload.post(
        []() -> OffloadThread::Completion { throw std::runtime_error("a job that fails"); }));
    ASSERT_TRUE(offload.post([&]() -> OffloadThread::Completion { return [&] { ++completed; }; }));
    ASSERT_TRUE(offload.post([]() -> OffloadThread::Completion { return {}; }));   // nothing to do
    EXPECT_FALSE(offload.post([]() -> OffloadThread::Completion { return {}; }));  // 3 waiting
    release.set_value();
    loop.run();
    EXPECT_EQ(completed, 2);
    EXPECT_EQ(offload.failed_jobs(), 1u);
    EXPECT_EQ(offload.outstanding(), 0u);
    EXPECT_TRUE(offload.post([]() -> OffloadThread::Completion { return {}; }));  // room again
    loop.run();
  }
  ASSERT_TRUE(loop.close().ok());
}

TEST(OffloadThread, DestructionDropsQueuedJobsWithoutCallingThem) {
  EventLoop loop;
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::promise<void> started;
  auto held = std::make_shared<int>(7);  // what queued jobs capture must be released
  bool completion_ran = false;
  std::thread releaser;
  {
    OffloadThread offload(loop);
    ASSERT_TRUE(offload.post([&]() -> OffloadThread::Completion {
      started.set_value();
      gate.wait();
      return [&] { completion_ran = true; };
    }));
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(offload.post(
          [&, held]() -> OffloadThread::Completion { return [&] { completion_ran = true; }; }));
    }
    started.get_future().wait();
    EXPECT_EQ(held.use_count(), 11);
    // The running job is let go 20 ms later, most likely after the destructor has begun waiting
    // for it. In either order no completion runs and what the jobs held is released.
    releaser = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      release.set_value();
    });
  }  // ~OffloadThread: waits for the running job, drops the queued ones; no completion runs
  releaser.join();
  EXPECT_FALSE(completion_ran);
  EXPECT_EQ(held.use_count(), 1);
  ASSERT_TRUE(loop.close().ok());
  EXPECT_EQ(loop.forced_closes(), 0u);
}

}  // namespace
}  // namespace predrop::net

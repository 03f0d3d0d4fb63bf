// core::DeadlineQueue: the pacer's earliest-deadline-first queue, checked against a plain map
// under random schedule/move/remove, and the re-queue cases the server relies on.
#include "predrop/core/deadline_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <utility>

namespace predrop::core {
namespace {

TEST(DeadlineQueue, EmptyHasNoDeadline) {
  DeadlineQueue q;
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.next_due(), DeadlineQueue::kNever);
  EXPECT_FALSE(q.contains(3));
  EXPECT_EQ(q.due(3), DeadlineQueue::kNever);
  q.remove(3);  // no-op
  EXPECT_TRUE(q.empty());
}

TEST(DeadlineQueue, EarliestFirstTiesBySmallerKey) {
  DeadlineQueue q;
  q.reserve(8);
  q.schedule(5, 300);
  q.schedule(2, 100);
  q.schedule(7, 100);
  q.schedule(1, 200);
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.next_due(), 100u);
  EXPECT_EQ(q.top(), 2u);
  q.remove(2);
  EXPECT_EQ(q.top(), 7u);
  q.remove(7);
  EXPECT_EQ(q.top(), 1u);
  EXPECT_EQ(q.next_due(), 200u);
}

TEST(DeadlineQueue, MovingADeadlineRequeuesIt) {
  DeadlineQueue q;
  q.schedule(0, 1000);  // a session playing
  q.schedule(1, 2000);
  q.schedule(0, 5000);  // it sent its packets: next one later
  EXPECT_EQ(q.top(), 1u);
  q.schedule(0, 10);  // PLAY again: due at once
  EXPECT_EQ(q.top(), 0u);
  EXPECT_EQ(q.due(0), 10u);
  q.schedule(0, DeadlineQueue::kNever);  // PAUSE: no deadline at all
  EXPECT_FALSE(q.contains(0));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.top(), 1u);
}

TEST(DeadlineQueue, ReservedQueueKeepsItsStorage) {
  DeadlineQueue q;
  q.reserve(1000);
  for (std::uint32_t k = 0; k < 1000; ++k)
    q.schedule(k, 1000 - k);
  EXPECT_EQ(q.top(), 999u);
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.contains(999));
  q.schedule(999, 4);
  EXPECT_EQ(q.top(), 999u);
}

TEST(DeadlineQueue, MatchesAnOrderedMapUnderRandomOperations) {
  DeadlineQueue q;
  std::map<std::uint32_t, std::uint64_t> ref;  // key -> due
  std::mt19937_64 rng(14);
  for (int step = 0; step < 20000; ++step) {
    const auto key = static_cast<std::uint32_t>(rng() % 64);
    const auto op = rng() % 4;
    if (op == 0) {
      q.remove(key);
      ref.erase(key);
    } else {
      const std::uint64_t due = rng() % 500;  // small range: many ties
      q.schedule(key, due);
      ref[key] = due;
    }
    ASSERT_EQ(q.size(), ref.size());
    if (ref.empty()) {
      ASSERT_TRUE(q.empty());
      continue;
    }
    std::pair<std::uint64_t, std::uint32_t> best{DeadlineQueue::kNever, 0};
    for (const auto& [k, d] : ref)
      best = std::min(best, std::pair{d, k});
    ASSERT_EQ(q.next_due(), best.first) << "step " << step;
    ASSERT_EQ(q.top(), best.second) << "step " << step;
    ASSERT_EQ(q.due(key), ref.count(key) != 0 ? ref[key] : DeadlineQueue::kNever);
  }
}

}  // namespace
}  // namespace predrop::core

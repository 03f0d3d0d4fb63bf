#pragma once
// An indexed binary min-heap of deadlines: each key (a small dense integer, e.g. a session's
// slot) has at most one deadline, and the earliest one is at the top. The server's pacer sleeps
// until top's deadline and pumps only the sessions that are due, so an idle or paused session
// costs nothing per wake-up.
//
// Why a heap and not a timer wheel: the pacer needs the exact earliest deadline to sleep until
// (a wheel gives a slot, and needs a cursor walk over empty slots after a long sleep), every
// re-queue is O(log n) with n <= max_sessions (10 levels at 1000), and a session is re-queued at
// most once per pacing wake-up, so the heap's cost is far below the packets it schedules.
//
// Threading: one thread. Allocation only when a key beyond the reserved range first appears or
// the heap grows past its reserve; reserve(max keys) up front and the queue never allocates.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace predrop::core {

/// Earliest-deadline-first queue over dense keys.
class DeadlineQueue {
 public:
  /// "No deadline": schedule(key, kNever) removes the key.
  static constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

  /// Makes room for keys 0..keys-1 so that no later call allocates.
  void reserve(std::size_t keys);
  /// Sets, moves or (with kNever) removes the deadline of `key`.
  void schedule(std::uint32_t key, std::uint64_t due);
  /// Removes `key`'s deadline; no-op if it has none.
  void remove(std::uint32_t key);
  /// Removes every deadline (the reserve stays).
  void clear();

  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  /// True if `key` has a deadline.
  bool contains(std::uint32_t key) const;
  /// `key`'s deadline, kNever if it has none.
  std::uint64_t due(std::uint32_t key) const;
  /// The earliest deadline, kNever when empty.
  std::uint64_t next_due() const { return heap_.empty() ? kNever : heap_.front().due; }
  /// The key with the earliest deadline (the smallest key among equal deadlines). Not empty().
  std::uint32_t top() const { return heap_.front().key; }

 private:
  struct Node {
    std::uint64_t due;
    std::uint32_t key;
  };
  static constexpr std::uint32_t kAbsent = std::numeric_limits<std::uint32_t>::max();
  static bool before(const Node& a, const Node& b) {
    return a.due < b.due || (a.due == b.due && a.key < b.key);
  }
  void put(std::size_t index, const Node& node);
  void sift_up(std::size_t index);
  void sift_down(std::size_t index);

  std::vector<Node> heap_;
  std::vector<std::uint32_t> position_;  // key -> index in heap_, kAbsent if not queued
};

}  // namespace predrop::core

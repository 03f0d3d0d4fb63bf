#pragma once
// The delay line's timing, apart from netfilter (bench/README.md "Propagation delay"): packets of
// one NFQUEUE queue are held in arrival order and released at arrival + that queue's delay. Every
// packet of a queue has the same delay, so deadlines within a queue never decrease and one
// fixed-size ring per queue is the whole timer: the earliest deadline is the smallest of the
// rings' heads. Pure: time comes in as arguments (microseconds on any monotonic clock), nothing
// here reads a clock, and nothing allocates after construction.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"

namespace predrop::delayline {

/// One delay class: an NFQUEUE queue number and the delay of every packet queued there.
struct QueueClass {
  std::uint16_t queue_num = 0;
  std::uint64_t delay_us = 0;
};

/// Parses "NUM=DELAY" (DELAY in ms, fractions allowed, or with a unit: 50ms, 2500us), e.g.
/// "3=50ms". Queue numbers 0..65535, delays 0..10 s.
core::Result<QueueClass> parse_queue_class(std::string_view spec);

/// The packets due in one queue at a release: every held id up to and including `last_id`, in
/// arrival order (what one NFQUEUE batch verdict accepts).
struct DueBatch {
  std::size_t queue = 0;            ///< Index into the classes given at construction.
  std::uint32_t last_id = 0;        ///< The newest packet id due.
  std::uint32_t count = 0;          ///< How many packets the batch releases.
  std::uint64_t worst_late_us = 0;  ///< Largest (now - deadline) among them.
};

/// Held packets per queue and their deadlines.
class DelaySchedule {
 public:
  /// `capacity` packets may be held per queue; a packet beyond that is refused by hold().
  DelaySchedule(std::vector<QueueClass> classes, std::size_t capacity);

  /// Records packet `id` of queue index `queue`, arrived at `arrival_us`. False when the queue's
  /// ring is full (the caller decides the packet's fate at once; nothing is held).
  bool hold(std::size_t queue, std::uint32_t id, std::uint64_t arrival_us);

  /// The earliest deadline of any held packet; nullopt when nothing is held.
  std::optional<std::uint64_t> next_deadline_us() const;

  /// Removes every packet whose deadline is <= now_us and calls `release(const DueBatch&)` once
  /// per queue that had any, queues in index order.
  template <typename Release>
  void release_due(std::uint64_t now_us, Release&& release) {
    for (std::size_t q = 0; q < rings_.size(); ++q) {
      DueBatch batch{q, 0, 0, 0};
      Ring& r = rings_[q];
      while (r.size > 0) {
        const Slot& s = r.slots[r.head];
        if (s.deadline_us > now_us) break;
        batch.last_id = s.id;
        batch.worst_late_us = std::max(batch.worst_late_us, now_us - s.deadline_us);
        ++batch.count;
        r.head = (r.head + 1) % r.slots.size();
        --r.size;
      }
      if (batch.count > 0) release(batch);
    }
  }

  /// Removes every held packet regardless of its deadline (shutdown: nothing may stay queued in
  /// the kernel), one batch per non-empty queue.
  template <typename Release>
  void release_all(Release&& release) {
    release_due(UINT64_MAX, release);
  }

  /// Packets held in queue index `queue` now.
  std::size_t held(std::size_t queue) const { return rings_[queue].size; }
  /// The largest number of packets queue index `queue` has held at once.
  std::size_t held_max(std::size_t queue) const { return rings_[queue].size_max; }
  /// The classes, in the order given.
  const std::vector<QueueClass>& classes() const { return classes_; }

 private:
  struct Slot {
    std::uint32_t id = 0;
    std::uint64_t deadline_us = 0;
  };
  struct Ring {
    std::vector<Slot> slots;
    std::size_t head = 0;
    std::size_t size = 0;
    std::size_t size_max = 0;
  };
  std::vector<QueueClass> classes_;
  std::vector<Ring> rings_;
};

}  // namespace predrop::delayline

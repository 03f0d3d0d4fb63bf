#pragma once
// The simulator's clock and agenda: events run in time order, ties in the order they were
// scheduled, so a run is a pure function of its inputs (no wall clock, no threads).
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace predrop::sim {

/// Simulated time in µs since the start of the run.
using SimTime = std::int64_t;

/// A discrete-event agenda. Single-threaded.
class EventQueue {
 public:
  using Action = std::function<void()>;

  /// Runs `action` at `t` (not before now(): a past time runs at now()).
  void at(SimTime t, Action action);
  /// Runs every event due at or before `end`, in order; now() is `end` afterwards.
  void run_until(SimTime end);
  /// The time of the event being run (or the end of the last run_until).
  SimTime now() const { return now_; }

 private:
  struct Event {
    SimTime t = 0;
    std::uint64_t seq = 0;
    Action action;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.t != b.t ? a.t > b.t : a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> agenda_;
  SimTime now_ = 0;
  std::uint64_t next_seq_ = 0;
};

}  // namespace predrop::sim

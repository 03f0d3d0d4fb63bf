#include "predrop/sim/event_queue.hpp"

#include <algorithm>
#include <utility>

namespace predrop::sim {

void EventQueue::at(SimTime t, Action action) {
  agenda_.push(Event{std::max(t, now_), next_seq_++, std::move(action)});
}

void EventQueue::run_until(SimTime end) {
  while (!agenda_.empty() && agenda_.top().t <= end) {
    // Move the action out before popping: it may schedule more events.
    Event e = std::move(const_cast<Event&>(agenda_.top()));
    agenda_.pop();
    now_ = e.t;
    e.action();
  }
  now_ = std::max(now_, end);
}

}  // namespace predrop::sim

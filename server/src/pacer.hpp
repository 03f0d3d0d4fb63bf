#pragma once
// The deadline pacer of one StreamServer (stream_server.hpp): every playing session sits in a
// min-heap (core::DeadlineQueue) keyed by the time it next has something to send
// (StreamSession::next_due_us()). A run pumps only the sessions due by then plus the pacing
// quantum, all into the server's shared sendmmsg batch, earliest first, and re-queues each at its
// new due time; a paused, finished or idle session costs nothing. The facade owns the one-shot
// timer and arms it for sleep_ms().
//
// Quantum: a run sends what falls due before the next run can come (at least a quantum later),
// so each session is visited at most once per quantum and its packets of that time leave
// together (one GSO message each where they follow each other); packets leave up to a quantum
// early, never late. Budget: a run that is still busy after kRunBudgetUs stops (the loop polls
// its sockets) and the next run goes on with the earliest due.
//
// Time: `now` comes from the caller; the budget reads the server's clock.
// Threading: the server's loop thread. Memory: the queue's storage is reserved up front; a run
// allocates nothing.
#include <cstdint>
#include <functional>
#include <vector>

#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/core/deadline_queue.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/server/callback_guard.hpp"
#include "predrop/server/server_options.hpp"
#include "session_table.hpp"

namespace predrop::server::detail {

/// What one run works with (all owned by the facade).
struct PacerRun {
  const net::Clock& clock;
  CallbackGuard& guard;
  /// Called inside each session's boundary (tests: may throw); empty in production.
  const std::function<void(CallbackKind)>& fault_injection;
  ServerStats& stats;
  chain::SendBatch& batch;
};

/// The deadline queue over the sessions of one server.
class Pacer {
 public:
  /// How long one run may send before it lets the loop poll.
  static constexpr std::uint64_t kRunBudgetUs = 20'000;

  /// `paced` false: blocks go at once (no quantum); `quantum_us` as StreamServerOptions.
  Pacer(bool paced, std::uint64_t quantum_us);

  /// Sizes the queue's storage for `sessions` sessions (no allocation later).
  void reserve(std::size_t sessions);
  /// Puts the entry's session in the queue at its due time (or out of it); returns that time.
  std::uint64_t reschedule(SessionEntry& entry);
  /// Takes the entry out for good (its session ends).
  void release(SessionEntry& entry);
  void clear();

  /// Pumps every session due by `now` plus the quantum, earliest first, each inside the guard;
  /// returns the entries whose pump threw (the caller removes them after the batch is flushed,
  /// which is when this returns).
  std::vector<SessionEntry*> run(std::uint64_t now, const PacerRun& with);

  /// The earliest time a session is queued for (StreamSession::kNoDeadline if none).
  std::uint64_t next_due() const { return schedule_.next_due(); }
  /// When the next run is worth doing: a quantum before the earliest deadline, but not sooner
  /// than a quantum after the last run (kNoDeadline if nothing is queued).
  std::uint64_t next_run() const;
  /// How long the timer sleeps from `now`: until next_run() (at most 1 ms while some queue is
  /// written only by polling), rounded up to libuv's milliseconds, 1 to kMaxSleepMs.
  std::uint64_t sleep_ms(std::uint64_t now, bool polling) const;

 private:
  bool paced_;
  std::uint64_t quantum_us_;
  std::uint64_t last_run_us_ = 0;
  core::DeadlineQueue schedule_;
  // The session of each slot (what a run reads on every visit) and, beside it, its entry.
  std::vector<StreamSession*> sessions_;
  std::vector<SessionEntry*> entries_;
  std::vector<std::uint32_t> free_slots_;
};

}  // namespace predrop::server::detail

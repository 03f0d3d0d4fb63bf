#include "pacer.hpp"

#include <algorithm>
#include <array>

namespace predrop::server::detail {

namespace {
// The longest sleep, also with nothing queued: a clock that is not the loop's (a test's
// FakeClock) is looked at again after this even if the next deadline lies far ahead on it, and
// the loop never blocks for long. 20 wake-ups a second visit no session and cost nothing.
constexpr std::uint64_t kMaxSleepMs = 50;
}  // namespace

Pacer::Pacer(bool paced, std::uint64_t quantum_us) : paced_(paced), quantum_us_(quantum_us) {}

void Pacer::reserve(std::size_t sessions) {
  schedule_.reserve(sessions);
  sessions_.reserve(sessions);
  entries_.reserve(sessions);
  free_slots_.reserve(sessions);
}

std::uint64_t Pacer::reschedule(SessionEntry& entry) {
  const std::uint64_t due =
      entry.session ? entry.session->next_due_us() : StreamSession::kNoDeadline;
  if (entry.slot == SessionEntry::kNoSlot) {
    if (due == StreamSession::kNoDeadline) return due;
    if (free_slots_.empty()) {
      entry.slot = static_cast<std::uint32_t>(entries_.size());
      entries_.push_back(&entry);
      sessions_.push_back(nullptr);
    } else {
      entry.slot = free_slots_.back();
      free_slots_.pop_back();
      entries_[entry.slot] = &entry;
    }
  }
  sessions_[entry.slot] = entry.session.get();
  schedule_.schedule(entry.slot, due);
  return due;
}

void Pacer::release(SessionEntry& entry) {
  if (entry.slot == SessionEntry::kNoSlot) return;
  schedule_.remove(entry.slot);
  entries_[entry.slot] = nullptr;
  sessions_[entry.slot] = nullptr;
  free_slots_.push_back(entry.slot);
  entry.slot = SessionEntry::kNoSlot;
}

void Pacer::clear() {
  schedule_.clear();
  sessions_.clear();
  entries_.clear();
  free_slots_.clear();
}

std::vector<SessionEntry*> Pacer::run(std::uint64_t now, const PacerRun& with) {
  const std::uint64_t horizon = now + (paced_ ? quantum_us_ : 0);
  last_run_us_ = now;
  ++with.stats.pacing_wakeups;
  std::vector<SessionEntry*> failed;
  // Every due session's packets go into one shared batch: full sendmmsg calls instead of one
  // short call per session (the scope flushes the rest when it closes).
  chain::SendBatchScope scope(with.batch);
  // The due sessions are taken off the queue a group at a time, so that each one's state can be
  // prefetched while the ones before it are pumped: with many sessions per worker a session is
  // cold whenever the pacer comes back to it, and its misses, not the work, would set the cost
  // per packet (bench/perf/README.md, section 10). Three prefetch steps, each a session apart
  // and each reading only lines the step before brought in (StreamSession::prefetch_fields and
  // the two after it).
  constexpr std::size_t kGroup = 16;
  std::array<StreamSession*, kGroup> group{};
  std::array<std::uint32_t, kGroup> slots{};
  while (schedule_.next_due() <= horizon) {
    // An overloaded loop (more due than it can send) would stay in one run for as long as the
    // backlog lasts, with RTSP, RTCP, stop requests and snapshots waiting: a run ends after its
    // budget, the loop polls, and the next run (1 ms later) goes on with the earliest due.
    if (with.clock.now_us() - now > kRunBudgetUs) {
      ++with.stats.pacing_runs_cut;
      break;
    }
    std::size_t n = 0;
    while (n < kGroup && schedule_.next_due() <= horizon) {
      slots[n] = schedule_.top();
      schedule_.remove(slots[n]);
      group[n] = sessions_[slots[n]];
      ++n;
    }
    for (std::size_t k = 0; k < std::min<std::size_t>(n, 3); ++k) {
      group[k]->prefetch_fields();
    }
    for (std::size_t k = 0; k < std::min<std::size_t>(n, 2); ++k) {
      group[k]->prefetch_targets();
    }
    if (n > 0) group[0]->prefetch_transmitter_targets();
    for (std::size_t i = 0; i < n; ++i) {
      StreamSession& session = *group[i];
      if (i + 3 < n) group[i + 3]->prefetch_fields();
      if (i + 2 < n) group[i + 2]->prefetch_targets();
      if (i + 1 < n) group[i + 1]->prefetch_transmitter_targets();
      ++with.stats.session_pumps;
      // Each session on its own: one that throws ends, the others are paced on.
      const bool ok = with.guard.run(CallbackKind::kTimer, [&] {
        if (with.fault_injection) with.fault_injection(CallbackKind::kTimer);
        session.pump(now, horizon);
      });
      if (!ok) {
        failed.push_back(entries_[slots[i]]);
        continue;
      }
      // Never within this run's horizon again (pump() sent all that was due by it; an SR or a
      // report deadline inside it waits for the next run), so the loop ends even if a session's
      // due time were wrong.
      const std::uint64_t next = session.next_due_us();
      schedule_.schedule(slots[i],
                         next == StreamSession::kNoDeadline ? next : std::max(next, horizon + 1));
    }
  }
  return failed;
}

std::uint64_t Pacer::next_run() const {
  const std::uint64_t due = schedule_.next_due();
  const std::uint64_t quantum = paced_ ? quantum_us_ : 0;
  if (due == StreamSession::kNoDeadline || quantum == 0) return due;
  return std::max(due > quantum ? due - quantum : 0, last_run_us_ + quantum);
}

std::uint64_t Pacer::sleep_ms(std::uint64_t now, bool polling) const {
  std::uint64_t due = next_run();
  // Connections whose queues wait for their socket (interleaved media rings, paused RTSP
  // replies) are polled every millisecond: the ring is written only from the pacer's runs.
  // UDP-only servers never poll.
  if (polling) due = std::min(due, now + 1000);
  // libuv counts whole milliseconds: round up, so that the wake-up is never before `due` and the
  // sessions due within that millisecond share it (and its sendmmsg batch). At least 1 ms, also
  // when behind: libuv 1.44's uv__run_timers runs a timer re-armed for "now" again in the same
  // pass (start_from_now refreshes the loop time), so a 0 ms re-arm in an overloaded server
  // would loop in the timer phase for good and starve every socket and AsyncWake of the loop
  // (RTSP, RTCP, a worker's stop request: seen as a shutdown that never ended with 1000
  // sessions on one worker). One millisecond lets one poll in between.
  const std::uint64_t wait_us = due > now ? due - now : 0;
  return std::clamp<std::uint64_t>((wait_us + 999) / 1000, 1, kMaxSleepMs);
}

}  // namespace predrop::server::detail

#pragma once
// Stage control of the DDL relay (relay.hpp): the ddl::StageCollector that collects the live
// workers' gradient chunks, when a stage closes (complete, or at its deadline), and the deadline
// timer (docs/ddl-mode.md "The stage deadline and what closes a stage").
//
// Two rules from that page live here:
//  - after a chunk only completion may close a stage; the deadline is judged by the timer. A
//    chunk's arrival time is when the loop read it, and after a preemption the rest of the stage
//    may already wait on the socket;
//  - the timer, when it finds the deadline passed, first re-arms for 1 ms once (the grace): libuv
//    runs timers before it polls I/O, so what is queued on the socket is read before judging.
//
// The receiver is rebuilt whenever the live workers change, so that completion never waits for a
// worker that is gone; its counters carry over.
//
// Threading: the relay's loop thread.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "predrop/ddl/chunk.hpp"
#include "predrop/ddl/stage_collector.hpp"
#include "predrop/net/event_loop.hpp"

namespace predrop::ddl {

/// The stage receiver over the live workers, and its deadline timer.
class RelayStageControl {
 public:
  /// Called for each closed stage; returns false to stop polling (the relay finished).
  using OnClose = std::function<bool(const ClosedStage& report, std::uint64_t now)>;

  /// `deadline_ms`: fixed D, or nullopt for the adaptive rule.
  explicit RelayStageControl(std::optional<std::uint32_t> deadline_ms);

  /// Creates the deadline timer on `loop`; it calls `on_timer` when it fires.
  void attach_timer(net::EventLoop& loop, std::function<void()> on_timer);
  /// Stops the timer.
  void stop_timer();

  /// A new receiver for `contributors` workers collecting from `stage` on (none for 0
  /// contributors). The counters of the previous receiver carry over.
  void rebuild(const ChunkPlan& plan, std::uint32_t contributors, std::uint32_t stage);
  /// True while a receiver exists (the job started and someone is live).
  bool active() const { return rx_ != nullptr; }
  /// The stage being collected, if known.
  std::optional<std::uint32_t> current_stage() const;

  /// Offers one parsed chunk (see ddl::StageCollector::on_chunk).
  ChunkOutcome on_chunk(std::uint32_t stage, std::uint32_t contributor, std::uint16_t announced,
                        const ChunkView& chunk, std::uint64_t now);

  /// Closes every stage that is over at `now` into `average`/`chunk_contributors`, calling
  /// `on_close` for each, then re-arms the timer. With `judge_deadline` false only completion
  /// closes a stage. `on_close` may rebuild the receiver.
  void poll(std::uint64_t now, bool judge_deadline, std::span<float> average,
            std::span<std::uint16_t> chunk_contributors, const OnClose& on_close);

  /// The timer fired at `now`: true if the deadline should be judged now, false if the grace
  /// re-arm was taken instead.
  bool timer_fired(std::uint64_t now);
  /// A stage closed: the next deadline gets its own grace.
  void reset_grace() { grace_given_ = false; }

  /// Counters over every receiver so far.
  ReceiverCounters counters() const;

 private:
  void arm(std::uint64_t now);

  DeadlineConfig deadline_;
  std::unique_ptr<StageCollector> rx_;
  ReceiverCounters base_;  // of the receivers before rx_
  std::unique_ptr<net::Timer> timer_;
  std::uint64_t armed_at_ = 0;
  bool grace_given_ = false;
};

}  // namespace predrop::ddl

#pragma once
// The worker side of one stage of the aggregate: which stage is open, the relay's PDSC for it,
// its chunks, the stage deadline (with one I/O pass of grace), the close when the PDSC announced
// nothing, the relay's silence, and skipping ahead when this peer fell too far behind. The stage
// engine of ddl::RelayClient (relay_client.hpp), the one relay client of both trainers (the C++
// worker and the external trainer's GradientPeer), so that they decide stages the same way.
//
// No timer and no clock of its own: the host feeds it times and arms its loop's timer for
// timer_due_us(), so it is tested with plain numbers (tests/ddl/stage_peer_test.cpp).
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "predrop/ddl/chunk.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/ddl/stage_collector.hpp"

namespace predrop::ddl {

/// How a StagePeer decides.
struct StagePeerConfig {
  std::uint32_t stage_deadline_ms = 0;  ///< The job's D (0: adaptive), from the join answer.
  std::uint32_t window = 8;             ///< Stages of aggregate held ahead of the open one (2..8).
  std::uint64_t relay_silence_us = 5'000'000;  ///< Nothing for the open stage this long: fail.
  /// Once a chunk of the open stage came, nothing more of it for this long closes the stage
  /// (CloseReason::kIdle) before D: the rest was lost on the way (a queue that overflowed drops
  /// the end of the burst) and will not come. 0: off (wait for D).
  std::uint64_t idle_close_us = 0;
};

/// What StagePeer::on_timer() decided.
struct StageCheck {
  /// The open stage closed (complete, at its deadline, or forced after a PDSC without chunks).
  std::optional<ClosedStage> closed;
  /// Nothing of the open stage came for relay_silence_us: the host ends the run.
  bool silent = false;
  /// With `silent`: the relay was heard meanwhile, but only about other stages.
  bool heard_other_stages = false;
};

/// One worker's view of the relay's stages (see the file comment).
class StagePeer {
 public:
  /// A stage whose PDSC came but none of whose chunks did is closed after D plus this.
  static constexpr std::uint64_t kNoChunkSlackUs = 5'000;
  /// The deadline's grace: one I/O pass (libuv runs timers before polling I/O).
  static constexpr std::uint64_t kGraceUs = 1'000;

  /// Collects `plan`'s chunks (one contributor: the relay).
  StagePeer(const ChunkPlan& plan, StagePeerConfig config);

  /// Opens stage `s` at `now_us` and returns the stage opened: `s`, or the stage after the
  /// relay's newest closed one when `s` is window - 1 or more stages behind it (the aggregates
  /// in between came and went; the model misses their updates). skipped() says how many.
  /// A stage past set_last_stage()'s is ended(): poll_io() closes it at once (CloseReason::
  /// kEnded, nothing received), since the relay and the other workers will never run it.
  std::uint32_t begin(std::uint32_t s, std::uint64_t now_us);

  /// The job's last stage (the trainer knows how many it runs; the relay does not say). Without
  /// it a peer that skipped ahead near the end waits for stages nobody runs.
  void set_last_stage(std::uint32_t last) { last_stage_ = last; }

  /// Any authenticated datagram from the relay at `now_us` (only for the silence message).
  void heard(std::uint64_t now_us);

  /// One chunk of the aggregate (stage `stage`, `announced` packets in it) at `arrival_us`.
  /// Then call poll_io().
  ChunkOutcome on_chunk(std::uint32_t stage, std::uint16_t announced, const ChunkView& chunk,
                        std::uint64_t arrival_us);

  /// The relay's PDSC: closes the open stage at once when it announces no packets.
  std::optional<ClosedStage> on_stage_closed(const StageClosed& c, std::uint64_t now_us);

  /// After I/O: closes the open stage only if it is complete. A chunk's arrival time is when the
  /// thread read it; after a preemption the rest may still wait in the socket, so deadlines are
  /// judged by on_timer() only.
  std::optional<ClosedStage> poll_io(std::uint64_t now_us);

  /// The host's timer fired at `now_us` (or the host polls). With `allow_grace` the first check
  /// past the deadline only asks for one more I/O pass (timer_due_us() is then now + kGraceUs).
  StageCheck on_timer(std::uint64_t now_us, bool allow_grace);

  /// When on_timer() should run next (absolute us); nullopt while no stage is open.
  std::optional<std::uint64_t> timer_due_us() const;

  /// Whether a stage is open (between begin() and its close).
  bool open() const { return open_; }
  /// The open (or last) stage.
  std::uint32_t stage() const { return stage_; }
  /// Stages the last begin() skipped.
  std::uint32_t skipped() const { return skipped_; }
  /// Whether the open (or last) stage is past the job's last stage.
  bool ended() const { return ended_; }
  /// The job's last stage, if set.
  std::optional<std::uint32_t> last_stage() const { return last_stage_; }
  /// When the open stage began (us).
  std::uint64_t stage_started_us() const { return started_us_; }
  /// The closed stage's average (zero where chunks are missing), valid after a close.
  std::span<float> aggregate() { return aggregate_; }
  /// Per chunk of the closed stage: 1 if it arrived.
  std::span<const std::uint16_t> received() const { return received_; }
  /// The PDSC of the open (or just closed) stage, if it came.
  const std::optional<StageClosed>& closed_info() const { return closed_info_; }
  /// When that PDSC came (us; 0 if it did not).
  std::uint64_t closed_info_at_us() const { return closed_info_at_us_; }
  /// Chunks of the open stage flagged partial by the relay.
  std::uint32_t partial() const { return partial_; }
  /// The newest stage the relay said it closed.
  std::optional<std::uint32_t> relay_closed() const { return relay_closed_; }
  /// The collector (its counters and deadline estimator).
  const StageCollector& collector() const { return rx_; }

 private:
  std::optional<ClosedStage> closed(const std::optional<ClosedStage>& r);
  std::optional<ClosedStage> close_ended(std::uint64_t now_us);
  std::optional<std::uint64_t> idle_at_us() const;

  StagePeerConfig config_;
  StageCollector rx_;
  std::vector<float> aggregate_;
  std::vector<std::uint16_t> received_;
  bool open_ = false;
  std::uint32_t stage_ = 0;
  std::uint32_t skipped_ = 0;
  std::optional<std::uint32_t> last_stage_;
  bool ended_ = false;
  std::uint64_t started_us_ = 0;
  std::uint64_t progress_us_ = 0;  // the open stage's last chunk or PDSC, or its start
  std::uint64_t heard_us_ = 0;
  std::optional<StageClosed> closed_info_;
  std::uint64_t closed_info_at_us_ = 0;
  std::uint32_t partial_ = 0;
  std::optional<std::uint32_t> relay_closed_;
  bool grace_ = false;
  std::uint64_t grace_due_us_ = 0;
};

}  // namespace predrop::ddl

#pragma once
// Several client threads for one load run (population.threads / --threads): one event loop per
// thread, each running a LoadRunner with a share of the clients, so that the load tool uses more
// than one core and can keep up with a server on the other ones.
//
// How a scenario is shared (shard_of): clients, max_joins, churn rates and band split as evenly
// as integers allow; seeds differ per shard. The first shard alone runs the full clients, polls
// the server's metrics endpoint, reads the server's CPU time, writes the per-interval CSV and
// shows the live line -- so that those figures are the server's whole figures, taken once, and
// the live line counts the first shard's clients only (it says so). The final summary merges
// every shard (merge_summaries): counts and rates add, percentiles are recomputed from all
// samples, the server's CPU per packet is taken against every client's packets.
//
// Threading: shards share nothing on their receive paths; only start-up, stop and the end are
// synchronised (a mutex on the control path).
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/load/scenario.hpp"
#include "predrop/load/summary.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"

namespace predrop::load {

/// Shard `index` (0-based) of `count` of a scenario. count = 1 returns the scenario unchanged.
LoadScenario shard_of(const LoadScenario& whole, std::uint32_t index, std::uint32_t count);

/// The whole run's summary from the shards' summaries, shard 0 first.
LoadSummary merge_summaries(std::vector<LoadSummary> shards);

/// Runs `scenario.threads` shards, each on its own thread and loop. Construct, run() (which runs
/// the calling thread's control loop until every shard is over, then joins the threads).
class ShardedRun {
 public:
  /// `control` is the calling thread's loop (its signal watcher may call stop()); `clock` is read
  /// by every shard's thread (net::MonotonicClock is); `progress` gets the first shard's live
  /// line, may be null.
  ShardedRun(net::EventLoop& control, const net::Clock& clock, LoadScenario scenario,
             std::FILE* progress);
  ~ShardedRun();
  ShardedRun(const ShardedRun&) = delete;
  ShardedRun& operator=(const ShardedRun&) = delete;

  /// Runs every shard; returns the merged summary or the first shard's set-up error.
  core::Result<LoadSummary> run();
  /// Ends every shard early (SIGINT): each drains as a single run would.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace predrop::load

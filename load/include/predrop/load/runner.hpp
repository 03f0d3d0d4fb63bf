#pragma once
// The load tester's scheduler: runs a LoadScenario against a running server on one loop -- ramp,
// hold with churn, drain -- with light clients (and a few full measuring clients), polls the
// server's metrics endpoint and /proc for the server's figures, and gathers a LoadSummary
// (summary.hpp says what it holds). The live line is progress.hpp's, the files csv_output.hpp's.
//
// Bounded: joins are capped by max_joins, the run ends after ramp + hold + drain by itself.
// Time: every decision (the phases, joins and leaves, back-off, the figures) reads the injected
// net::Clock. Threading: loop thread.
#include <cstdio>
#include <memory>

#include "predrop/core/result.hpp"
#include "predrop/load/csv_output.hpp"
#include "predrop/load/scenario.hpp"
#include "predrop/load/summary.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"

namespace predrop::load {

/// Runs a scenario. Construct, run() (which runs the loop until the scenario is over).
class LoadRunner {
 public:
  /// `progress` gets the live line (\r-updated when it is a terminal), may be null. `clock` must
  /// outlive the runner.
  LoadRunner(net::EventLoop& loop, const net::Clock& clock, LoadScenario scenario,
             std::FILE* progress);
  ~LoadRunner();
  LoadRunner(const LoadRunner&) = delete;
  LoadRunner& operator=(const LoadRunner&) = delete;

  /// Runs the whole scenario; returns its summary or a set-up error.
  core::Result<LoadSummary> run();
  /// Ends the run early (SIGINT): everyone leaves, then the summary is made. Safe from any
  /// thread (the loop sees it at its next 10 ms tick).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace predrop::load

#pragma once
// RFC 8868's metrics of one simulated run, plus what only predrop can report (P, R): per media
// flow its quality overall and while congested (its fair share below the block's rate), the
// queueing delay of its packets at the bottleneck (mean, p95, overall and while congested), its
// loss, how many blocks it took to return to R ~ 0 after each return of capacity, and across
// flows the throughput ratios over 5 s windows (self-fairness) and against TCP.
#include <string>
#include <vector>

#include "predrop/sim/scenario.hpp"

namespace predrop::sim {

struct FlowSummary {
  double psnr_db = 0;            ///< Mean over its blocks.
  double psnr_congested_db = 0;  ///< Mean over its congested blocks (NaN: none).
  double rate = 0;               ///< Mean R.
  double loss = 0;               ///< Network loss of its packets.
  double queue_mean_ms = 0;
  double queue_p95_ms = 0;
  double queue_p95_congested_ms = 0;  ///< NaN: never congested.
  /// The same without the kOnsetUs after each onset of congestion (the flow's start, a drop of
  /// its fair share by 10 % or more: a capacity drop or a join): the queue the policy keeps
  /// once it has reacted, apart from the one a once-per-block report cannot prevent.
  double queue_p95_settled_ms = 0;
  double throughput_bps = 0;  ///< Received, over its active time.
  unsigned congested_blocks = 0;
  unsigned blocks = 0;
  /// Worst count of blocks from a return of capacity (fair share back above the stream) to
  /// three blocks in a row at R <= 0.02; -1 = never within the run, 0 = no such return.
  int return_blocks = 0;
};

struct CaseSummary {
  std::vector<FlowSummary> flows;
  double psnr_db = 0;                 ///< Mean over flows.
  double psnr_congested_db = 0;       ///< Mean over flows that had congested blocks.
  double queue_p95_congested_ms = 0;  ///< Worst flow.
  double queue_p95_settled_ms = 0;    ///< Worst flow.
  double loss = 0;                    ///< Mean over flows.
  int return_blocks = 0;              ///< Worst flow (-1 if any never returned).
  /// Self-fairness: the share of 5 s windows with every media flow active in which the largest
  /// to smallest received throughput ratio is within 1.25 (1 = always; NaN: no such window).
  double fair_windows = 0;
  double worst_ratio = 0;     ///< Largest such ratio.
  double psnr_spread_db = 0;  ///< Largest minus smallest flow PSNR over the shared time.
  /// Against long TCP: the media flows' throughput over the competition / their fair share,
  /// and the TCP flows' throughput (bit/s). NaN without TCP.
  double tcp_share_ratio = 0;
  double tcp_bps = 0;
};

CaseSummary summarize(const CaseSpec& spec, const CaseRun& run);

/// One line per policy: a fixed-width table row, and its header.
std::string summary_header();
std::string summary_row(const std::string& label, const CaseSummary& s);

}  // namespace predrop::sim

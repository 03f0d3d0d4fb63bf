#pragma once
// What a load run measured, and the final table predrop-load prints from it.
//
// - sessions: joins attempted, playing at the end of the ramp, mean and max while holding;
// - traffic: packets/s and Mbit/s received by all clients during the hold;
// - server CPU: from /proc/<pid>/stat of the server process, as % of one core and µs per packet;
// - blocks: reception period L (p50/p99), network loss, quality figure;
// - feedback: report delay (block's last packet -> PDFB sent, exact) and, with the server's
//   metrics endpoint, the feedback round trip (PDFB sent -> the session's reports_total counter
//   shows it in /metrics; an upper bound with the poll interval as resolution);
// - errors by kind and refusals (453 session limit, 503 connection limit).
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "predrop/load/scenario.hpp"

namespace predrop::load {

/// Percentiles of a sample (NaN when empty).
struct Percentiles {
  std::size_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};

/// Computes the percentiles of `values` (sorted in place), by nearest rank.
Percentiles percentiles(std::vector<double>& values);

/// The raw samples behind a summary's percentiles, kept so that the summaries of several client
/// threads merge into exact percentiles of the whole run (shards.hpp).
struct LoadSamples {
  std::vector<double> l_ms, loss_pct, quality_db, report_delay_ms, feedback_rtt_ms;
};

/// What a run measured (hold phase unless said otherwise).
struct LoadSummary {
  std::string label;
  double hold_s = 0;  ///< Length of the measurement window.
  std::uint64_t joins = 0;
  std::uint64_t playing_after_ramp = 0;
  double sessions_mean = 0;
  std::uint64_t sessions_max = 0;
  std::uint64_t leaves = 0;
  double packets_per_s = 0;
  double mbit_per_s = 0;
  double server_cpu_pct = -1;  ///< -1: unknown (no pid).
  double server_us_per_packet = -1;
  double server_pkt_per_s = -1;  ///< From the metrics endpoint (-1: none).
  Percentiles l_ms;              ///< Reception period of blocks closed in the hold.
  Percentiles loss_pct;
  Percentiles quality_db;
  Percentiles report_delay_ms;
  Percentiles feedback_rtt_ms;  ///< Needs the metrics endpoint.
  std::uint64_t blocks = 0;
  std::uint64_t reports = 0;
  std::uint64_t refused_453 = 0;
  std::uint64_t refused_503 = 0;
  std::map<std::string, std::uint64_t> errors;  ///< By kind ("timeout", "SETUP 454", ...).
  std::uint64_t srtp_failures = 0;
  std::uint64_t srtp_verified = 0;
  std::uint64_t full_blocks = 0;
  double full_psnr_mean = 0;
  std::uint64_t server_late_blocks = 0;  ///< If the metrics endpoint exports it.
  bool server_late_known = false;
  LoadSamples samples;  ///< What the percentiles above were computed from.
};

/// Sum of the error counters of every kind.
std::uint64_t total_errors(const LoadSummary& s);

/// The final table, human-readable.
void print_summary(std::FILE* out, const LoadScenario& scenario, const LoadSummary& s);

}  // namespace predrop::load

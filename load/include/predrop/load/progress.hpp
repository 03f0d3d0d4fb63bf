#pragma once
// predrop-load's live progress line: rewritten in place ("\r" ... erase to end of line) when the
// output is a terminal, otherwise one line every 5 s so that logs stay readable.
#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace predrop::load {

/// The figures of one progress interval (also one row of the per-interval CSV).
struct ProgressSample {
  double t_s = 0;             ///< Seconds since the run started.
  const char* phase = "";     ///< "ramp", "hold", "drain", "over".
  std::size_t playing = 0;    ///< Clients playing.
  std::size_t live = 0;       ///< Clients started and not gone (playing or setting up).
  std::uint32_t clients = 0;  ///< The target population.
  double rx_pkt_per_s = 0;    ///< Received by all clients over the interval.
  double rx_mbit_per_s = 0;
  double l_p50_ms = 0;  ///< Over the last (up to 2000) blocks.
  double l_p99_ms = 0;
  double server_cpu_pct = -1;  ///< -1: unknown.
  std::uint64_t reports = 0;
  std::uint64_t refused_453 = 0;
  std::uint64_t refused_503 = 0;
  std::uint64_t errors = 0;
};

/// Writes the progress line to a stream (none when null).
class ProgressLine {
 public:
  /// `out` may be null (quiet).
  explicit ProgressLine(std::FILE* out);
  /// Shows `s` (on a terminal every time; otherwise at most every 5 s of `now_us`).
  void show(const ProgressSample& s, std::uint64_t now_us);
  /// Ends the rewritten line on a terminal.
  void finish();

 private:
  std::FILE* out_;
  bool tty_ = false;
  std::uint64_t last_print_us_ = 0;
};

}  // namespace predrop::load

#pragma once
// predrop-load's CSV files: the per-interval file (`csv`, one row per progress interval, written
// from the start) and the summary file (`summary_csv`, one row per run appended, with a header
// when the file is new or empty). Column names are the first row of each; configs/load/README.md
// explains them.
#include <cstdio>
#include <string>

#include "predrop/core/result.hpp"
#include "predrop/load/progress.hpp"
#include "predrop/load/summary.hpp"

namespace predrop::load {

/// The per-interval CSV file.
class IntervalCsv {
 public:
  IntervalCsv() = default;
  ~IntervalCsv();
  IntervalCsv(const IntervalCsv&) = delete;
  IntervalCsv& operator=(const IntervalCsv&) = delete;

  /// Creates (truncates) `path` and writes the header row.
  core::Status open(const std::string& path);
  /// True once open() succeeded.
  bool is_open() const { return file_ != nullptr; }
  /// Appends one row; no-op when not open.
  void write(const ProgressSample& s);

 private:
  std::FILE* file_ = nullptr;
};

/// Appends one CSV row (and the header if the file is new or empty).
core::Status append_summary_csv(const std::string& path, const LoadSummary& s);

}  // namespace predrop::load

#pragma once
// Thresholds of the control rule (docs/design.md §2): T1 on the performance value P and T2 on the
// reception period L. Either may be absolute (dB, µs, loss units) or relative to the reference.
#include <string>
#include <string_view>

#include "predrop/core/result.hpp"

namespace predrop::core {

/// A change threshold: absolute (in the unit of the compared value) or relative (fraction of the
/// reference value, e.g. 0.05 for 5 %). Comparisons are strict: a change equal to the threshold
/// does not exceed it.
struct Threshold {
  double value = 0.0;
  bool relative = false;

  /// Absolute threshold in the unit of the compared value.
  static Threshold absolute(double v) { return Threshold{v, false}; }
  /// Relative threshold as a fraction of the reference value (0.05 = 5 %).
  static Threshold fraction(double f) { return Threshold{f, true}; }

  /// True when `current` is larger than `reference` by more than the threshold.
  bool increase_exceeds(double current, double reference) const;
  /// True when `current` is smaller than `reference` by more than the threshold.
  bool decrease_exceeds(double current, double reference) const;

  /// "0.5" or "5%" style text, for logs and traces.
  std::string to_string() const;
};

/// Parses "0.5" (absolute) or "5%" (relative); rejects negative, NaN and malformed text.
Result<Threshold> parse_threshold(std::string_view text);

}  // namespace predrop::core

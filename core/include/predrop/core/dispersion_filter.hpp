#pragma once
// The bottleneck's rate from packet-pair dispersion (Keshav 1991; Dovrolis et al., IEEE/ACM ToN
// 2004), as the capacity policy reads it from PDFB v1.1 reports: the largest of the recent
// readings. A reading can only come out low (another flow's packets between the pair: sessions
// whose blocks start together send their pairs together), never above the rate the bottleneck
// serves at, so the maximum is the estimate and the spread of the readings tells whether the
// session is alone on the bottleneck.
#include <array>
#include <cstddef>

namespace predrop::core {

/// Max filter over the last kWindow dispersion readings (link bytes per µs).
class DispersionFilter {
 public:
  static constexpr std::size_t kWindow = 8;

  /// Adds one reading (> 0).
  void note(double rate);
  /// Forgets every reading (the bottleneck changed or went away).
  void clear();
  /// Forgets every reading but `rate` (the bottleneck slowed: its fresh reading is its rate).
  void restart(double rate);
  /// The bottleneck's rate: the largest recent reading (0 = none).
  double rate() const { return rate_; }
  /// True when at least `min_readings` readings all lie within `spread` of the largest: alone on
  /// the bottleneck every leading pair reads its rate; shared, another session's packets
  /// sometimes sit between the pair and the readings scatter (by 1/2, 1/3 ...).
  bool steady(unsigned min_readings, double spread) const;

 private:
  std::array<double, kWindow> recent_{};
  std::size_t next_ = 0;
  double rate_ = 0.0;
};

}  // namespace predrop::core

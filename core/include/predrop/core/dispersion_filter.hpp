#pragma once
// The bottleneck's rate from packet-pair dispersion (Keshav 1991; Dovrolis et al., IEEE/ACM ToN
// 2004), as the capacity policy reads it from PDFB v1.1 reports: the largest of the recent
// readings that another one confirms.
//
// A reading comes out low when another flow's packets sit between the pair (sessions whose
// blocks start together send their pairs together), so the largest reading is the estimate and
// the spread of the readings tells whether the session is alone on the bottleneck. A reading
// can also come out high: an element after the bottleneck that holds packets and lets them go
// together (a delay line's timer, a Wi-Fi aggregate, a receiver's interrupt coalescing) closes
// the gap the bottleneck opened — Dovrolis et al. §4's "post-narrow" compression. Measured on
// the bed after an idle block end: readings 2-700x the path's rate, one at a time. Taken as the
// maximum, one of them lifted the cap the rate puts on the estimate for eight blocks. So a
// reading becomes the rate only once a second one agrees with it (the mode, as Dovrolis et al.
// take it, of the few readings a window holds); a true rise is confirmed by the next block's.
#include <array>
#include <cstddef>

namespace predrop::core {

/// Confirmed-max filter over the last kWindow dispersion readings (link bytes per µs).
class DispersionFilter {
 public:
  static constexpr std::size_t kWindow = 8;
  /// Two readings agree when the smaller is at least this fraction of the larger (the spread of
  /// one bottleneck's readings on the bed is within 5 %).
  static constexpr double kAgreement = 0.85;

  /// Adds one reading (> 0).
  void note(double rate);
  /// Forgets every reading (the bottleneck changed or went away).
  void clear();
  /// Forgets every reading but `rate` (the bottleneck slowed: its fresh reading is its rate).
  void restart(double rate);
  /// The bottleneck's rate (0 = none): the largest reading another one agrees with; with a
  /// single reading, that one; with none agreeing, the second largest (a lone high reading is
  /// the suspect one, and a low estimate costs a block of R, a high one a block of loss).
  double rate() const { return rate_; }
  /// True when at least `min_readings` readings all lie within `spread` of the rate (readings
  /// above it, unconfirmed, are left out): alone on the bottleneck every leading pair reads its
  /// rate; shared, another session's packets sometimes sit between the pair and the readings
  /// scatter (by 1/2, 1/3 ...).
  bool steady(unsigned min_readings, double spread) const;

 private:
  void update();

  std::array<double, kWindow> recent_{};
  std::size_t next_ = 0;
  double rate_ = 0.0;
};

}  // namespace predrop::core

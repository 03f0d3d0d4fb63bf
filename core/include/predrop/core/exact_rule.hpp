#pragma once
// The seed's control rule exactly as written (JP7684261B2 Fig. 3 and, for k > 1, Fig. 4;
// docs/design.md §2). Selected as policy "basic" (k = 1) or "history" (k > 1).
#include <cstddef>
#include <vector>

#include "predrop/core/rate_controller.hpp"

namespace predrop::core {

/// The exact rule:
///   first report (stage 0):                  R = Rp
///   P_s worse than P_{s-1} by more than T1:  R = max(0, R - Rp2)
///   else L_s exceeds any of the last k L by more than T2: R = min(Rmax, R + Rp1)
///   else                                     R unchanged
/// "Previous" means the previous *reported* stage: a stage whose report never came is skipped
/// (history untouched; R kept by default, or moved per RuleParams::missing), so the next report
/// is compared with the newest stage known.
/// Until k earlier stages exist, L is compared with those that exist.
class ExactRule final : public RateController {
 public:
  /// `params` must pass validate(); construct through make_rate_controller() to get that check.
  explicit ExactRule(const RuleParams& params);

  std::string_view name() const override { return params_.k == 1 ? "basic" : "history"; }
  double rate() const override { return rate_; }
  /// The parameters in force.
  const RuleParams& params() const { return params_; }

 protected:
  Decision decide(const StageReport& report) override;
  Decision decide_missing(std::uint32_t stage) override;

 private:
  /// True when L exceeds any remembered L by more than T2 (seed S21 for k = 1, S30 for k > 1).
  bool delay_grew(double reception_period_us) const;
  void remember(const StageReport& report);

  RuleParams params_;
  double rate_;
  double last_performance_ = 0.0;
  // The last k reception periods, newest at (head_ - 1) mod k; a fixed ring, no allocation after
  // construction.
  std::vector<double> delays_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

}  // namespace predrop::core

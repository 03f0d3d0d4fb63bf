#pragma once
// A baseline policy: R never changes. Used for "no discard" (R = 0), fixed-R comparisons, and
// sessions whose receiver sends no reports (standard players).
#include "predrop/core/rate_controller.hpp"

namespace predrop::core {

/// Always returns the configured rate; reports are validated and counted but change nothing.
class FixedRate final : public RateController {
 public:
  /// `rate` must be within [0, 1].
  explicit FixedRate(double rate) : rate_(rate) {}

  std::string_view name() const override { return "fixed"; }
  bool reads_performance() const override { return false; }
  double rate() const override { return rate_; }

 protected:
  Decision decide(const StageReport&) override {
    return {rate_, DecisionKind::kFixed, "fixed rate"};
  }
  Decision decide_missing(std::uint32_t) override {
    return {rate_, DecisionKind::kFixed, "fixed rate"};
  }

 private:
  double rate_;
};

}  // namespace predrop::core

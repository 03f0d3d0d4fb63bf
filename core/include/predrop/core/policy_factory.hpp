#pragma once
// Builds a rate controller from a policy name and parameters: the one place that knows every
// policy, so configuration, tests and benchmarks select them the same way.
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "predrop/core/adaptive_policy.hpp"
#include "predrop/core/capacity_policy.hpp"
#include "predrop/core/rate_controller.hpp"

namespace predrop::core {

/// Everything any policy may need; each policy reads its own part.
struct PolicyConfig {
  std::string policy = "basic";  ///< "basic", "history", "fixed", "adaptive", "capacity".
  RuleParams rule;               ///< Exact-rule parameters (basic, history).
  double fixed_rate = 0.0;       ///< Rate of the "fixed" policy.
  AdaptiveParams adaptive;       ///< Parameters of the "adaptive" policy (initial rate: rule.r0).
  CapacityParams capacity;       ///< Parameters of the "capacity" policy (its own initial rate).
};

/// Names accepted by make_rate_controller, for --help and error messages.
std::span<const std::string_view> policy_names();

/// A controller for `config`, or an error naming the bad setting.
Result<std::unique_ptr<RateController>> make_rate_controller(const PolicyConfig& config);

}  // namespace predrop::core

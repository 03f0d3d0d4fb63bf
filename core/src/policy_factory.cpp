#include "predrop/core/policy_factory.hpp"

#include <array>
#include <cmath>

#include "predrop/core/adaptive_policy.hpp"
#include "predrop/core/capacity_policy.hpp"
#include "predrop/core/exact_rule.hpp"
#include "predrop/core/fixed_rate.hpp"

namespace predrop::core {

namespace {
constexpr std::array<std::string_view, 5> kPolicyNames{"basic", "history", "fixed", "adaptive",
                                                       "capacity"};
}  // namespace

std::span<const std::string_view> policy_names() {
  return kPolicyNames;
}

Result<std::unique_ptr<RateController>> make_rate_controller(const PolicyConfig& config) {
  const std::string& p = config.policy;
  if (p == "basic" || p == "history") {
    if (auto st = validate(config.rule); !st) return st.error();
    if (p == "basic" && config.rule.k != 1) {
      return make_error(
          "policy \"basic\" compares with the previous stage only (k = 1); "
          "use policy \"history\" for k = " +
          std::to_string(config.rule.k));
    }
    if (p == "history" && config.rule.k < 2) {
      return make_error("policy \"history\" needs k >= 2 (k = 1 is policy \"basic\")");
    }
    return std::unique_ptr<RateController>(std::make_unique<ExactRule>(config.rule));
  }
  if (p == "fixed") {
    if (!std::isfinite(config.fixed_rate) || config.fixed_rate < 0 || config.fixed_rate > 1) {
      return make_error("control.fixed_rate must be in [0, 1]");
    }
    return std::unique_ptr<RateController>(std::make_unique<FixedRate>(config.fixed_rate));
  }
  if (p == "adaptive") {
    if (auto st = validate(config.adaptive); !st) return st.error();
    if (!(config.rule.r0 >= 0 && config.rule.r0 <= config.adaptive.rmax)) {
      return make_error("control.r0 must be in [0, adaptive rmax]");
    }
    return std::unique_ptr<RateController>(
        std::make_unique<AdaptivePolicy>(config.adaptive, config.rule.r0));
  }
  if (p == "capacity") {
    if (auto st = validate(config.capacity); !st) return st.error();
    return std::unique_ptr<RateController>(std::make_unique<CapacityPolicy>(config.capacity));
  }
  std::string known;
  for (auto n : kPolicyNames) {
    known += (known.empty() ? "" : ", ") + std::string(n);
  }
  return make_error("unknown control policy \"" + p + "\" (known: " + known + ")");
}

}  // namespace predrop::core

#include "predrop/core/policy_factory.hpp"

#include <gtest/gtest.h>

namespace predrop::core {
namespace {

TEST(PolicyFactory, UnknownPolicyListsKnownNames) {
  PolicyConfig cfg;
  cfg.policy = "magic";
  auto c = make_rate_controller(cfg);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("magic"), std::string::npos);
  EXPECT_NE(c.error().message.find("basic"), std::string::npos);
}

TEST(PolicyFactory, RejectsBadParameters) {
  PolicyConfig cfg;
  cfg.rule.rmax = 1.5;
  EXPECT_FALSE(make_rate_controller(cfg).ok());
  cfg = {};
  cfg.rule.rp = 0.6;
  cfg.rule.rmax = 0.5;
  EXPECT_FALSE(make_rate_controller(cfg).ok());
  cfg = {};
  cfg.rule.k = 3;  // basic with k = 3 is a contradiction, said as such
  auto e = make_rate_controller(cfg);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("history"), std::string::npos);
  cfg = {};
  cfg.policy = "history";  // history with k = 1 too
  EXPECT_FALSE(make_rate_controller(cfg).ok());
  cfg = {};
  cfg.policy = "fixed";
  cfg.fixed_rate = -0.1;
  EXPECT_FALSE(make_rate_controller(cfg).ok());
}

TEST(PolicyFactory, FixedRateNeverMoves) {
  PolicyConfig cfg;
  cfg.policy = "fixed";
  cfg.fixed_rate = 0.2;
  auto c = make_rate_controller(cfg);
  ASSERT_TRUE(c.ok());
  StageReport r;
  for (std::uint32_t s = 0; s < 5; ++s) {
    r.stage = s;
    r.reception_period_us = 1000.0 * (s + 1) * (s + 1);
    r.performance = 40.0 - 5.0 * s;
    auto d = (*c)->on_report(r);
    ASSERT_TRUE(d.ok());
    EXPECT_DOUBLE_EQ(d->rate, 0.2);
  }
  EXPECT_DOUBLE_EQ((*c)->on_report_missing(9).rate, 0.2);
}

}  // namespace
}  // namespace predrop::core

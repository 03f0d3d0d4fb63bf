#include "predrop/core/threshold.hpp"

#include <gtest/gtest.h>

namespace predrop::core {
namespace {

TEST(Threshold, AbsoluteIsStrict) {
  const auto t = Threshold::absolute(0.5);
  EXPECT_FALSE(t.decrease_exceeds(39.5, 40.0));  // exactly at the threshold: not more than
  EXPECT_TRUE(t.decrease_exceeds(39.25, 40.0));
  EXPECT_FALSE(t.decrease_exceeds(41.0, 40.0));  // an improvement is no decrease
  EXPECT_FALSE(t.increase_exceeds(1000.5, 1000.0));
  EXPECT_TRUE(t.increase_exceeds(1000.75, 1000.0));
}

TEST(Threshold, RelativeScalesWithReference) {
  const auto t = Threshold::fraction(0.25);
  EXPECT_FALSE(t.increase_exceeds(1250.0, 1000.0));  // exactly +25 %
  EXPECT_TRUE(t.increase_exceeds(1251.0, 1000.0));
  EXPECT_FALSE(t.decrease_exceeds(30.0, 40.0));  // exactly -25 %
  EXPECT_TRUE(t.decrease_exceeds(29.0, 40.0));
  // Negative references (a loss increase in DDL mode) use the magnitude.
  EXPECT_TRUE(t.decrease_exceeds(-0.2, -0.1));
  EXPECT_FALSE(t.decrease_exceeds(-0.125, -0.1));
}

TEST(Threshold, Parse) {
  auto a = parse_threshold("0.5");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->relative);
  EXPECT_DOUBLE_EQ(a->value, 0.5);
  auto r = parse_threshold("5%");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->relative);
  EXPECT_DOUBLE_EQ(r->value, 0.05);
  EXPECT_EQ(r->to_string(), "5%");
  for (const char* bad : {"", "%", "abc", "-1", "nan", "1.5x", "inf"}) {
    auto e = parse_threshold(bad);
    EXPECT_FALSE(e.ok()) << bad;
  }
}

}  // namespace
}  // namespace predrop::core

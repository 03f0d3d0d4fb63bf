// Chunk importance: log quantisation, monotonicity, reserved 255, and the hand-off to core's
// priority discard planner (smallest-magnitude chunks dropped first).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "predrop/core/discard_planner.hpp"
#include "predrop/ddl/importance.hpp"

using namespace predrop::ddl;

TEST(Importance, FixedScaleQuantisation) {
  EXPECT_EQ(quantize_importance(0.0), 0);
  EXPECT_EQ(quantize_importance(std::nan("")), 0);
  EXPECT_EQ(quantize_importance(std::numeric_limits<double>::infinity()), kMaxImportance);
  EXPECT_EQ(quantize_importance(std::ldexp(1.0, -40)), 1);
  EXPECT_EQ(quantize_importance(std::ldexp(1.0, -60)), 1);
  EXPECT_EQ(quantize_importance(std::ldexp(1.0, 8)), 254);
  EXPECT_EQ(quantize_importance(1e30), 254);
  // log2(1) = 0 is 40/48 of the way: 1 + round(253 * 40 / 48) = 212.
  EXPECT_EQ(quantize_importance(1.0), 212);
  std::uint8_t prev = 0;
  for (double n = 1e-15; n < 1e5; n *= 1.07) {
    const std::uint8_t q = quantize_importance(n);
    EXPECT_GE(q, prev);
    EXPECT_LT(q, predrop::core::kNeverDrop);
    prev = q;
  }
}

TEST(Importance, L2Norm) {
  const float v[] = {3.0f, 4.0f};
  EXPECT_DOUBLE_EQ(chunk_l2_norm(v), 5.0);
  EXPECT_DOUBLE_EQ(chunk_l2_norm({}), 0.0);
  const float big[] = {3e38f, 3e38f};  // would overflow in float
  EXPECT_TRUE(std::isfinite(chunk_l2_norm(big)));
}

TEST(Importance, TensorScaleSpansTheLevelsAndIsMonotone) {
  // 6 chunks of 4: norms 0, 1e-6, 1e-4, 1e-2, 1, 1e-4 (scaled copies of one pattern).
  auto plan = chunk_tensor(24, 4);
  ASSERT_TRUE(plan.ok());
  const double scale[] = {0.0, 1e-6, 1e-4, 1e-2, 1.0, 1e-4};
  std::vector<float> t(24);
  for (std::size_t c = 0; c < 6; ++c) {
    for (std::size_t i = 0; i < 4; ++i)
      t[c * 4 + i] = static_cast<float>(scale[c] * 0.5);
  }
  std::vector<std::uint8_t> imp(6);
  tensor_importance(t, plan.value(), imp);
  EXPECT_EQ(imp[0], 0);    // all-zero chunk: dropped first
  EXPECT_EQ(imp[1], 1);    // smallest non-zero
  EXPECT_EQ(imp[4], 254);  // largest
  EXPECT_LT(imp[1], imp[2]);
  EXPECT_LT(imp[2], imp[3]);
  EXPECT_LT(imp[3], imp[4]);
  EXPECT_EQ(imp[2], imp[5]);
  // log-linear: 1e-4 is a third of the way from 1e-6 to 1: 1 + round(253/3) = 85.
  EXPECT_EQ(imp[2], 85);
}

TEST(Importance, EqualNormsAndSpecialValues) {
  auto plan = chunk_tensor(6, 2);
  ASSERT_TRUE(plan.ok());
  std::vector<float> t = {1, 1, -1, 1, 1, -1};
  std::vector<std::uint8_t> imp(3);
  tensor_importance(t, plan.value(), imp);
  EXPECT_EQ(imp, (std::vector<std::uint8_t>{254, 254, 254}));
  t = {std::nanf(""), 1, std::numeric_limits<float>::infinity(), 0, 0.5f, 0};
  tensor_importance(t, plan.value(), imp);
  EXPECT_EQ(imp, (std::vector<std::uint8_t>{0, 254, 254}));
}

TEST(Importance, PriorityPlannerDropsSmallestChunksFirst) {
  auto plan = chunk_tensor(40, 4);
  ASSERT_TRUE(plan.ok());
  // Chunk c has magnitude proportional to (c * 7) % 10 + 1, so the order is scrambled.
  std::vector<float> t(40);
  for (std::size_t c = 0; c < 10; ++c) {
    for (std::size_t i = 0; i < 4; ++i)
      t[c * 4 + i] = static_cast<float>((c * 7) % 10 + 1);
  }
  std::vector<std::uint8_t> imp(10), drop(10);
  tensor_importance(t, plan.value(), imp);
  predrop::core::DiscardPlanner planner(predrop::core::DiscardPolicy::kPriority);
  ASSERT_EQ(planner.plan(0.3, imp, drop), 3u);
  for (std::size_t c = 0; c < 10; ++c) {
    const bool smallest_three = (c * 7) % 10 + 1 <= 3;
    EXPECT_EQ(drop[c] != 0, smallest_three) << "chunk " << c;
  }
}

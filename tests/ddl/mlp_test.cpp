// MLP: reproducible initialisation, gradient check against central differences, batch gradient
// = mean of per-sample gradients, SGD arithmetic, and a short real training run on Fashion-MNIST.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "predrop/ddl/train/dataset.hpp"
#include "predrop/ddl/train/mlp.hpp"
#include "predrop/ddl/train/random.hpp"

using predrop::ddl::train::Mlp;
using predrop::ddl::train::MlpShape;

namespace {

Eigen::MatrixXf random_inputs(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  predrop::ddl::train::Rng rng(seed);
  Eigen::MatrixXf x(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  for (Eigen::Index j = 0; j < x.cols(); ++j) {
    for (Eigen::Index i = 0; i < x.rows(); ++i)
      x(i, j) = rng.uniform(-1.0f, 1.0f);
  }
  return x;
}

}  // namespace

TEST(Mlp, SameSeedSameParametersAndInitRanges) {
  const MlpShape shape;
  EXPECT_EQ(shape.parameter_count(), 101770u);
  Mlp a(shape, 7), b(shape, 7), c(shape, 8);
  ASSERT_EQ(a.parameter_count(), 101770u);
  EXPECT_TRUE(std::equal(a.parameters().begin(), a.parameters().end(), b.parameters().begin()));
  EXPECT_FALSE(std::equal(a.parameters().begin(), a.parameters().end(), c.parameters().begin()));
  const auto p = a.parameters();
  const float he = std::sqrt(6.0f / 784.0f), glorot = std::sqrt(6.0f / 138.0f);
  const std::size_t b1 = 128 * 784, w2 = b1 + 128, b2 = w2 + 1280;
  for (std::size_t i = 0; i < b1; ++i)
    ASSERT_LE(std::abs(p[i]), he);
  for (std::size_t i = b1; i < w2; ++i)
    ASSERT_EQ(p[i], 0.0f);
  for (std::size_t i = w2; i < b2; ++i)
    ASSERT_LE(std::abs(p[i]), glorot);
  for (std::size_t i = b2; i < p.size(); ++i)
    ASSERT_EQ(p[i], 0.0f);
}

TEST(Mlp, GradientMatchesCentralDifferences) {
  const MlpShape shape{6, 5, 4};
  Mlp net(shape, 3);
  // Non-zero biases so their gradients are exercised away from the initial point too.
  predrop::ddl::train::Rng rng(11);
  for (auto& v : net.parameters())
    v += rng.uniform(-0.1f, 0.1f);
  const Eigen::MatrixXf x = random_inputs(6, 3, 5);
  const std::vector<std::uint8_t> labels = {0, 3, 2};
  std::vector<float> grad(net.parameter_count());
  net.loss_and_gradient(x, labels, grad);

  // Central differences on the same float network; eps balances truncation (O(eps^2)) against
  // float rounding of the loss (O(1e-7 / eps)).
  const float eps = 1e-2f;
  std::vector<float> unused(net.parameter_count());
  double worst = 0.0;
  for (std::size_t i = 0; i < net.parameter_count(); ++i) {
    const float saved = net.parameters()[i];
    net.parameters()[i] = saved + eps;
    const double up = net.loss_and_gradient(x, labels, unused);
    net.parameters()[i] = saved - eps;
    const double down = net.loss_and_gradient(x, labels, unused);
    net.parameters()[i] = saved;
    const double numeric = (up - down) / (2.0 * eps);
    const double rel =
        std::abs(numeric - grad[i]) / std::max(1e-3, std::abs(numeric) + std::abs(grad[i]));
    worst = std::max(worst, rel);
    EXPECT_LT(rel, 2e-2) << "parameter " << i << ": analytic " << grad[i] << ", numeric "
                         << numeric;
  }
  std::printf("gradient check: %zu parameters, worst relative error %.2e\n", net.parameter_count(),
              worst);
}

TEST(Mlp, BatchGradientIsMeanOfSampleGradients) {
  const MlpShape shape{8, 6, 3};
  Mlp net(shape, 9);
  const Eigen::MatrixXf x = random_inputs(8, 4, 2);
  const std::vector<std::uint8_t> labels = {2, 0, 1, 2};
  std::vector<float> batch(net.parameter_count()), one(net.parameter_count());
  std::vector<double> mean(net.parameter_count(), 0.0);
  double loss_mean = 0.0;
  for (Eigen::Index j = 0; j < 4; ++j) {
    loss_mean += net.loss_and_gradient(x.col(j), std::span(labels).subspan(j, 1), one) / 4.0;
    for (std::size_t i = 0; i < one.size(); ++i)
      mean[i] += one[i] / 4.0;
  }
  const double loss = net.loss_and_gradient(x, labels, batch);
  EXPECT_NEAR(loss, loss_mean, 1e-6);
  for (std::size_t i = 0; i < batch.size(); ++i)
    EXPECT_NEAR(batch[i], mean[i], 1e-6);
  // evaluate() agrees with the training loss.
  EXPECT_NEAR(net.evaluate(x, labels).loss, loss, 1e-6);
}

TEST(Sgd, MomentumAndWeightDecayArithmetic) {
  predrop::ddl::train::Sgd sgd({0.5f, 0.9f, 0.1f}, 2);
  std::vector<float> p = {1.0f, -2.0f};
  const std::vector<float> g = {0.2f, 0.4f};
  sgd.step(p, g);  // v = g + 0.1 p = {0.3, 0.2}; p -= 0.5 v
  EXPECT_FLOAT_EQ(p[0], 0.85f);
  EXPECT_FLOAT_EQ(p[1], -2.1f);
  sgd.step(p, g);  // v = 0.9 {0.3, 0.2} + g + 0.1 p = {0.555, 0.37}
  EXPECT_FLOAT_EQ(p[0], 0.85f - 0.5f * (0.27f + 0.2f + 0.085f));
  EXPECT_FLOAT_EQ(p[1], -2.1f - 0.5f * (0.18f + 0.4f - 0.21f));
}

TEST(MlpTraining, TwoThousandSamplesReachSeventyPercentTestAccuracy) {
  if (!std::filesystem::exists(std::filesystem::path(predrop::ddl::train::kFashionMnistDir))) {
    GTEST_SKIP() << "dataset-fashion-mnist not installed";
  }
  auto data = predrop::ddl::train::load_fashion_mnist();
  ASSERT_TRUE(data.ok()) << data.error().message;
  // A seeded, class-mixed subset of 2000 training samples.
  std::vector<std::uint32_t> all(data->train.size());
  for (std::uint32_t i = 0; i < all.size(); ++i)
    all[i] = i;
  predrop::ddl::train::Rng(1).shuffle(std::span<std::uint32_t>(all));
  all.resize(2000);
  const predrop::ddl::train::Dataset train = predrop::ddl::train::take(data->train, all);

  Mlp net(MlpShape{}, 2024);
  predrop::ddl::train::Sgd sgd({0.05f, 0.9f, 0.0f}, net.parameter_count());
  std::vector<std::uint32_t> idx(train.size());
  for (std::uint32_t i = 0; i < idx.size(); ++i)
    idx[i] = i;
  predrop::ddl::train::BatchSampler sampler(idx, 32, 99);
  Eigen::MatrixXf x;
  std::vector<std::uint8_t> labels;
  std::vector<float> grad(net.parameter_count());

  const double before = net.evaluate(data->test).accuracy;
  const int steps = 500;  // 8 epochs of 62 batches
  const auto t0 = std::chrono::steady_clock::now();
  double first_loss = 0.0, last_loss = 0.0;
  for (int s = 0; s < steps; ++s) {
    predrop::ddl::train::gather_batch(train, sampler.next(), x, labels);
    const double loss = net.loss_and_gradient(x, labels, grad);
    sgd.step(net.parameters(), grad);
    if (s < 20) first_loss += loss / 20;
    if (s >= steps - 20) last_loss += loss / 20;
  }
  const auto t1 = std::chrono::steady_clock::now();
  const auto test = net.evaluate(data->test);
  const auto t2 = std::chrono::steady_clock::now();
  const double step_ms = std::chrono::duration<double, std::milli>(t1 - t0).count() / steps;
  const double eval_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  std::printf(
      "training: %d steps of batch 32 on 2000 samples, %.3f ms/step; train loss %.3f -> %.3f; "
      "test accuracy %.4f -> %.4f (loss %.3f); evaluation of 10000 samples %.1f ms\n",
      steps, step_ms, first_loss, last_loss, before, test.accuracy, test.loss, eval_ms);
  EXPECT_LT(last_loss, first_loss);
  EXPECT_GT(test.accuracy, 0.70);
  EXPECT_EQ(test.samples, 10000u);
}

// The MLP's forward and backward passes as whole-batch matrix products (see mlp.hpp).
#include "predrop/ddl/train/mlp.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "predrop/ddl/train/random.hpp"

namespace predrop::ddl::train {
namespace {

using Matrix = Eigen::MatrixXf;
using MatMap = Eigen::Map<Matrix>;
using ConstMatMap = Eigen::Map<const Matrix>;
using VecMap = Eigen::Map<Eigen::VectorXf>;
using ConstVecMap = Eigen::Map<const Eigen::VectorXf>;

// Offsets of the four parameter blocks in the flat vector.
struct Layout {
  std::size_t w1, b1, w2, b2;
  explicit Layout(const MlpShape& s)
      : w1(0), b1(s.hidden * s.inputs), w2(b1 + s.hidden), b2(w2 + s.outputs * s.hidden) {}
};

Eigen::Index ix(std::size_t n) {
  return static_cast<Eigen::Index>(n);
}

// Softmax over each column of `z` in place, shifted by the column maximum for stability. Returns
// the summed cross-entropy of the labelled entries, computed from the shifted logits as
// log(sum exp) - z_label so that no probability is ever rounded to 0 and logged.
double softmax_cross_entropy(Matrix& z, std::span<const std::uint8_t> labels) {
  const Eigen::RowVectorXf max = z.colwise().maxCoeff();
  z.rowwise() -= max;
  double loss = 0.0;
  for (Eigen::Index j = 0; j < z.cols(); ++j) {
    assert(labels[static_cast<std::size_t>(j)] < z.rows());
    const float label_logit = z(labels[static_cast<std::size_t>(j)], j);
    z.col(j) = z.col(j).array().exp();
    const float sum = z.col(j).sum();
    z.col(j) /= sum;
    loss += static_cast<double>(std::log(sum)) - static_cast<double>(label_logit);
  }
  return loss;
}

}  // namespace

Mlp::Mlp(MlpShape shape, std::uint64_t seed) : shape_(shape), params_(shape.parameter_count()) {
  const Layout l(shape_);
  Rng rng(seed);
  const float he = std::sqrt(6.0f / static_cast<float>(shape_.inputs));
  for (std::size_t i = l.w1; i < l.b1; ++i) {
    params_[i] = rng.uniform(-he, he);
  }
  const float glorot = std::sqrt(6.0f / static_cast<float>(shape_.hidden + shape_.outputs));
  for (std::size_t i = l.w2; i < l.b2; ++i) {
    params_[i] = rng.uniform(-glorot, glorot);
  }
  // Biases stay zero (vector value-initialised).
}

double Mlp::loss_and_gradient(const Eigen::Ref<const Eigen::MatrixXf>& x,
                              std::span<const std::uint8_t> labels, std::span<float> gradient) {
  const Layout l(shape_);
  const auto in = ix(shape_.inputs), hid = ix(shape_.hidden), out = ix(shape_.outputs);
  const Eigen::Index batch = x.cols();
  assert(x.rows() == in && static_cast<std::size_t>(batch) == labels.size() && batch > 0);
  assert(gradient.size() == params_.size());

  const ConstMatMap w1(params_.data() + l.w1, hid, in);
  const ConstVecMap b1(params_.data() + l.b1, hid);
  const ConstMatMap w2(params_.data() + l.w2, out, hid);
  const ConstVecMap b2(params_.data() + l.b2, out);

  // Forward: z1 = W1 x + b1, a1 = relu(z1), z2 = W2 a1 + b2, p = softmax(z2).
  z1_.noalias() = w1 * x;
  z1_.colwise() += b1;
  a1_ = z1_.cwiseMax(0.0f);
  z2_.noalias() = w2 * a1_;
  z2_.colwise() += b2;
  const double loss = softmax_cross_entropy(z2_, labels);  // z2_ now holds p

  // Backward of the mean loss: dz2 = (p - onehot(y)) / batch.
  for (Eigen::Index j = 0; j < batch; ++j) {
    z2_(labels[static_cast<std::size_t>(j)], j) -= 1.0f;
  }
  z2_ *= 1.0f / static_cast<float>(batch);
  MatMap gw1(gradient.data() + l.w1, hid, in);
  VecMap gb1(gradient.data() + l.b1, hid);
  MatMap gw2(gradient.data() + l.w2, out, hid);
  VecMap gb2(gradient.data() + l.b2, out);
  gw2.noalias() = z2_ * a1_.transpose();
  gb2 = z2_.rowwise().sum();
  // dz1 = (W2^T dz2) * relu'(z1); relu'(0) is taken as 0.
  dz1_.noalias() = w2.transpose() * z2_;
  dz1_ = (z1_.array() > 0.0f).select(dz1_, 0.0f);
  gw1.noalias() = dz1_ * x.transpose();
  gb1 = dz1_.rowwise().sum();
  return loss / static_cast<double>(batch);
}

namespace {
// Summed loss and number of correct arg-max predictions of one block.
struct BlockScore {
  double loss_sum = 0.0;
  std::size_t correct = 0;
};

BlockScore score_block(const MlpShape& shape, std::span<const float> params,
                       const Eigen::Ref<const Eigen::MatrixXf>& x,
                       std::span<const std::uint8_t> labels) {
  const Layout l(shape);
  const auto in = ix(shape.inputs), hid = ix(shape.hidden), out = ix(shape.outputs);
  assert(x.rows() == in && static_cast<std::size_t>(x.cols()) == labels.size());
  BlockScore s;
  if (labels.empty()) return s;
  const ConstMatMap w1(params.data() + l.w1, hid, in);
  const ConstVecMap b1(params.data() + l.b1, hid);
  const ConstMatMap w2(params.data() + l.w2, out, hid);
  const ConstVecMap b2(params.data() + l.b2, out);
  Matrix a1 = w1 * x;
  a1.colwise() += b1;
  a1 = a1.cwiseMax(0.0f);
  Matrix z2 = w2 * a1;
  z2.colwise() += b2;
  for (Eigen::Index j = 0; j < z2.cols(); ++j) {
    Eigen::Index arg = 0;
    z2.col(j).maxCoeff(&arg);
    if (arg == labels[static_cast<std::size_t>(j)]) ++s.correct;
  }
  s.loss_sum = softmax_cross_entropy(z2, labels);
  return s;
}
}  // namespace

Evaluation Mlp::evaluate(const Eigen::Ref<const Eigen::MatrixXf>& x,
                         std::span<const std::uint8_t> labels) const {
  const BlockScore s = score_block(shape_, params_, x, labels);
  Evaluation e;
  e.samples = labels.size();
  if (e.samples > 0) {
    e.loss = s.loss_sum / static_cast<double>(e.samples);
    e.accuracy = static_cast<double>(s.correct) / static_cast<double>(e.samples);
  }
  return e;
}

Evaluation Mlp::evaluate(const Dataset& data, std::size_t block) const {
  assert(data.features == shape_.inputs && block > 0);
  BlockScore total;
  for (std::size_t start = 0; start < data.size(); start += block) {
    const std::size_t n = std::min(block, data.size() - start);
    // Row-major samples read column-major: features x n, one sample per column, no copy.
    const ConstMatMap x(data.pixels.data() + start * data.features, ix(data.features), ix(n));
    const BlockScore s = score_block(shape_, params_, x, std::span(data.labels).subspan(start, n));
    total.loss_sum += s.loss_sum;
    total.correct += s.correct;
  }
  Evaluation e;
  e.samples = data.size();
  if (e.samples > 0) {
    e.loss = total.loss_sum / static_cast<double>(e.samples);
    e.accuracy = static_cast<double>(total.correct) / static_cast<double>(e.samples);
  }
  return e;
}

void gather_batch(const Dataset& data, std::span<const std::uint32_t> indices, Eigen::MatrixXf& x,
                  std::vector<std::uint8_t>& labels) {
  x.resize(ix(data.features), ix(indices.size()));
  labels.resize(indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k) {
    assert(indices[k] < data.size());
    std::memcpy(x.col(ix(k)).data(), data.pixels.data() + indices[k] * data.features,
                data.features * sizeof(float));
    labels[k] = data.labels[indices[k]];
  }
}

Sgd::Sgd(SgdConfig config, std::size_t parameters) : config_(config), velocity_(parameters, 0.0f) {}

void Sgd::step(std::span<float> params, std::span<const float> gradient) {
  assert(params.size() == velocity_.size() && gradient.size() == velocity_.size());
  const auto n = ix(velocity_.size());
  Eigen::Map<Eigen::ArrayXf> p(params.data(), n);
  Eigen::Map<const Eigen::ArrayXf> g(gradient.data(), n);
  Eigen::Map<Eigen::ArrayXf> v(velocity_.data(), n);
  if (config_.weight_decay != 0.0f) {
    v = config_.momentum * v + (g + config_.weight_decay * p);
  } else {
    v = config_.momentum * v + g;
  }
  p -= config_.learning_rate * v;
}

}  // namespace predrop::ddl::train

#pragma once
// A small multilayer perceptron (inputs-hidden-outputs, ReLU, softmax cross-entropy) on Eigen,
// with every parameter in one contiguous float vector so that a gradient is one tensor to chunk.
//
// Parameter (and gradient) layout, in this order, all column-major:
//   W1: hidden x inputs | b1: hidden | W2: outputs x hidden | b2: outputs
// Workers built with the same shape and seed start from bit-identical parameters, and applying
// the same aggregated gradient keeps them identical (all arithmetic here is deterministic).
//
// Threading: an Mlp owns scratch matrices reused across steps, so one Mlp per thread.
#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "predrop/ddl/train/dataset.hpp"

namespace predrop::ddl::train {

/// Layer sizes; the default fits Fashion-MNIST (784-128-10: 101 770 parameters).
struct MlpShape {
  std::size_t inputs = 784;
  std::size_t hidden = 128;
  std::size_t outputs = 10;

  /// Total number of parameters (weights and biases).
  std::size_t parameter_count() const {
    return hidden * inputs + hidden + outputs * hidden + outputs;
  }
};

/// Mean loss and accuracy over a set of samples.
struct Evaluation {
  double loss = 0.0;        ///< Mean softmax cross-entropy (natural log).
  double accuracy = 0.0;    ///< Fraction of samples whose arg-max output is the label.
  std::size_t samples = 0;  ///< Number of samples evaluated.
};

/// The network: parameters plus the scratch space of one forward/backward pass.
class Mlp {
 public:
  /// Initialises W1 He-uniform (U(+-sqrt(6/inputs)), He et al. 2015, for ReLU), W2
  /// Glorot-uniform (U(+-sqrt(6/(hidden+outputs))), Glorot & Bengio 2010) and biases to zero, from
  /// `seed` through ddl::train::Rng, so the same seed gives the same network everywhere.
  Mlp(MlpShape shape, std::uint64_t seed);

  /// Layer sizes.
  const MlpShape& shape() const { return shape_; }
  /// Number of parameters (= gradient length).
  std::size_t parameter_count() const { return params_.size(); }
  /// All parameters, in the layout described at the top of this header.
  std::span<float> parameters() { return params_; }
  /// All parameters, read-only.
  std::span<const float> parameters() const { return params_; }

  /// Mean cross-entropy of a batch (`x`: inputs x batch, one sample per column; labels < outputs)
  /// and its gradient with respect to every parameter, written to `gradient`
  /// (parameter_count() floats, same layout as parameters()).
  double loss_and_gradient(const Eigen::Ref<const Eigen::MatrixXf>& x,
                           std::span<const std::uint8_t> labels, std::span<float> gradient);

  /// Mean loss and accuracy of a batch (`x`: inputs x batch); does not touch the scratch space.
  Evaluation evaluate(const Eigen::Ref<const Eigen::MatrixXf>& x,
                      std::span<const std::uint8_t> labels) const;

  /// Mean loss and accuracy over a whole data set, in blocks of `block` samples (no copy).
  Evaluation evaluate(const Dataset& data, std::size_t block = 1000) const;

 private:
  MlpShape shape_;
  std::vector<float> params_;
  // Scratch of loss_and_gradient, kept to avoid reallocating every step.
  Eigen::MatrixXf z1_, a1_, z2_, dz1_;
};

/// Gathers the samples at `indices` into `x` (features x indices.size()) and their labels.
void gather_batch(const Dataset& data, std::span<const std::uint32_t> indices, Eigen::MatrixXf& x,
                  std::vector<std::uint8_t>& labels);

/// Plain SGD with optional (heavy-ball) momentum and L2 weight decay:
///   v = momentum * v + (g + weight_decay * p);  p -= learning_rate * v
struct SgdConfig {
  float learning_rate = 0.1f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;
};

/// Applies (aggregated) gradients to a parameter vector.
class Sgd {
 public:
  /// `parameters` is the length of the vectors step() will see.
  Sgd(SgdConfig config, std::size_t parameters);
  /// One update of `params` with `gradient` (both of the constructor's length).
  void step(std::span<float> params, std::span<const float> gradient);
  /// The hyper-parameters.
  const SgdConfig& config() const { return config_; }

 private:
  SgdConfig config_;
  std::vector<float> velocity_;
};

}  // namespace predrop::ddl::train

#pragma once
// A labelled data set in memory, its split across workers and seeded mini-batch sampling.
// Pure and deterministic: the same seed gives the same batches on every platform.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/ddl/train/idx.hpp"
#include "predrop/ddl/train/random.hpp"

namespace predrop::ddl::train {

/// Samples as floats, row-major size() x features (so, read column-major, features x size(): one
/// sample per column, which is how the MLP consumes them without a copy), and their labels.
struct Dataset {
  std::size_t features = 0;          ///< Values per sample (784 for 28x28 images).
  std::vector<float> pixels;         ///< size() * features values.
  std::vector<std::uint8_t> labels;  ///< One class index per sample.

  /// Number of samples.
  std::size_t size() const { return labels.size(); }
  /// The features of sample i.
  std::span<const float> sample(std::size_t i) const {
    return {pixels.data() + i * features, features};
  }
};

/// Default location of Debian's dataset-fashion-mnist files.
inline constexpr std::string_view kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Joins images and labels, checking equal counts and every label < num_classes.
core::Result<Dataset> make_dataset(IdxImages images, IdxLabels labels, std::string_view source,
                                   unsigned num_classes);

/// Loads an image file and a label file (gzip or plain) into a Dataset.
core::Result<Dataset> load_dataset(const std::filesystem::path& images,
                                   const std::filesystem::path& labels, unsigned num_classes = 10);

/// Fashion-MNIST's training (60 000) and test (10 000) sets.
struct FashionMnist {
  Dataset train;
  Dataset test;
};

/// Loads {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz from `dir` (plain files without .gz
/// are used if the .gz ones are absent).
core::Result<FashionMnist> load_fashion_mnist(
    const std::filesystem::path& dir = std::filesystem::path(kFashionMnistDir));

/// A new data set made of the samples at `indices` (in that order); indices must be < size().
Dataset take(const Dataset& data, std::span<const std::uint32_t> indices);

/// How samples are dealt to workers.
enum class ShardMode : std::uint8_t {
  kStrided,     ///< Worker w takes samples w, w+N, w+2N, ...
  kContiguous,  ///< Worker w takes the w-th of N nearly equal contiguous ranges.
};

/// The sample indices of worker `worker` of `workers` over a data set of `total` samples.
/// The shards of all workers partition [0, total). `worker` must be < `workers`.
std::vector<std::uint32_t> shard_indices(std::size_t total, std::uint32_t worker,
                                         std::uint32_t workers, ShardMode mode);

/// Draws mini-batches without replacement from a fixed index set: each epoch is a fresh seeded
/// permutation; a tail shorter than the batch is skipped (it is reshuffled into the next epoch),
/// so every batch has exactly batch_size samples.
class BatchSampler {
 public:
  /// `indices` must hold at least `batch_size` entries and batch_size must be > 0.
  BatchSampler(std::vector<std::uint32_t> indices, std::size_t batch_size, std::uint64_t seed);

  /// The next batch of indices; valid until the next call.
  std::span<const std::uint32_t> next();
  /// Completed passes over the index set.
  std::uint64_t epoch() const { return epoch_; }
  /// Samples per batch.
  std::size_t batch_size() const { return batch_size_; }

 private:
  std::vector<std::uint32_t> indices_;
  std::size_t batch_size_;
  std::size_t pos_ = 0;
  std::uint64_t epoch_ = 0;
  Rng rng_;
};

}  // namespace predrop::ddl::train

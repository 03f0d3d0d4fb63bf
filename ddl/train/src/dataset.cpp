// Data set assembly, sharding and seeded batch sampling (see dataset.hpp).
#include "predrop/ddl/train/dataset.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <string>

namespace predrop::ddl::train {

core::Result<Dataset> make_dataset(IdxImages images, IdxLabels labels, std::string_view source,
                                   unsigned num_classes) {
  const std::string where = "data set " + std::string(source) + ": ";
  if (images.count != labels.labels.size()) {
    return core::make_error(where + std::to_string(images.count) + " images but " +
                            std::to_string(labels.labels.size()) + " labels");
  }
  for (std::size_t i = 0; i < labels.labels.size(); ++i) {
    if (labels.labels[i] >= num_classes) {
      return core::make_error(where + "label " + std::to_string(labels.labels[i]) + " of sample " +
                              std::to_string(i) + " is not below " + std::to_string(num_classes));
    }
  }
  Dataset d;
  d.features = std::size_t{images.rows} * images.cols;
  d.pixels = std::move(images.pixels);
  d.labels = std::move(labels.labels);
  return d;
}

core::Result<Dataset> load_dataset(const std::filesystem::path& images,
                                   const std::filesystem::path& labels, unsigned num_classes) {
  auto img = load_idx_images(images);
  if (!img) return img.error();
  auto lab = load_idx_labels(labels);
  if (!lab) return lab.error();
  return make_dataset(std::move(img.value()), std::move(lab.value()),
                      images.string() + " + " + labels.string(), num_classes);
}

namespace {
// The .gz file if present, else the plain one (e.g. after gunzip), else the .gz name so the
// error names the file Debian's package installs.
std::filesystem::path pick(const std::filesystem::path& dir, const std::string& stem) {
  auto gz = dir / (stem + ".gz");
  if (std::filesystem::exists(gz)) return gz;
  auto plain = dir / stem;
  if (std::filesystem::exists(plain)) return plain;
  return gz;
}
}  // namespace

core::Result<FashionMnist> load_fashion_mnist(const std::filesystem::path& dir) {
  auto train =
      load_dataset(pick(dir, "train-images-idx3-ubyte"), pick(dir, "train-labels-idx1-ubyte"), 10);
  if (!train) return train.error();
  auto test =
      load_dataset(pick(dir, "t10k-images-idx3-ubyte"), pick(dir, "t10k-labels-idx1-ubyte"), 10);
  if (!test) return test.error();
  if (train->features != test->features) {
    return core::make_error("fashion-mnist in " + dir.string() +
                            ": train and test images differ in size");
  }
  return FashionMnist{std::move(train.value()), std::move(test.value())};
}

Dataset take(const Dataset& data, std::span<const std::uint32_t> indices) {
  Dataset out;
  out.features = data.features;
  out.pixels.resize(indices.size() * data.features);
  out.labels.resize(indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const std::size_t i = indices[k];
    assert(i < data.size());
    std::memcpy(out.pixels.data() + k * data.features, data.pixels.data() + i * data.features,
                data.features * sizeof(float));
    out.labels[k] = data.labels[i];
  }
  return out;
}

std::vector<std::uint32_t> shard_indices(std::size_t total, std::uint32_t worker,
                                         std::uint32_t workers, ShardMode mode) {
  assert(workers > 0 && worker < workers);
  std::vector<std::uint32_t> out;
  if (mode == ShardMode::kStrided) {
    out.reserve(total / workers + 1);
    for (std::size_t i = worker; i < total; i += workers) {
      out.push_back(static_cast<std::uint32_t>(i));
    }
  } else {
    // Shard w is [w * total / N, (w + 1) * total / N): sizes differ by at most one.
    const std::size_t begin = worker * total / workers;
    const std::size_t end = (std::size_t{worker} + 1) * total / workers;
    out.reserve(end - begin);
    for (std::size_t i = begin; i < end; ++i) {
      out.push_back(static_cast<std::uint32_t>(i));
    }
  }
  return out;
}

BatchSampler::BatchSampler(std::vector<std::uint32_t> indices, std::size_t batch_size,
                           std::uint64_t seed)
    : indices_(std::move(indices)), batch_size_(batch_size), rng_(seed) {
  assert(batch_size_ > 0 && batch_size_ <= indices_.size());
  rng_.shuffle(std::span<std::uint32_t>(indices_));
}

std::span<const std::uint32_t> BatchSampler::next() {
  if (pos_ + batch_size_ > indices_.size()) {
    rng_.shuffle(std::span<std::uint32_t>(indices_));
    pos_ = 0;
    ++epoch_;
  }
  const std::span<const std::uint32_t> batch(indices_.data() + pos_, batch_size_);
  pos_ += batch_size_;
  return batch;
}

}  // namespace predrop::ddl::train

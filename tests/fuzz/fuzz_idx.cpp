// Fuzzes the IDX reader through its in-memory entry points (gzip or plain input), with a 1 MiB
// decompression cap so that compression bombs end as errors, not out-of-memory. Whatever parses
// must be self-consistent: pixel count = count x rows x cols, every pixel in [0, 1].
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_check.hpp"
#include "predrop/ddl/train/dataset.hpp"
#include "predrop/ddl/train/idx.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace predrop::ddl::train;
  const std::span<const std::uint8_t> in(data, size);
  constexpr std::size_t kCap = std::size_t{1} << 20;

  auto images = parse_idx_images(in, "fuzz", kCap);
  if (images) {
    const auto& im = images.value();
    PREDROP_FUZZ_CHECK(im.count > 0 && im.rows > 0 && im.cols > 0);
    PREDROP_FUZZ_CHECK(im.pixels.size() == std::size_t{im.count} * im.rows * im.cols);
    for (const float p : im.pixels)
      PREDROP_FUZZ_CHECK(p >= 0.0f && p <= 1.0f);
  } else {
    PREDROP_FUZZ_CHECK(!images.error().message.empty());
  }

  auto labels = parse_idx_labels(in, "fuzz", kCap);
  if (labels) {
    PREDROP_FUZZ_CHECK(!labels->labels.empty());
    // A label file is its own 1-pixel image set for make_dataset's checks.
    IdxImages one{static_cast<std::uint32_t>(labels->labels.size()), 1, 1,
                  std::vector<float>(labels->labels.size(), 0.5f)};
    auto d = make_dataset(std::move(one), labels.value(), "fuzz", 10);
    if (d) {
      for (const auto l : d->labels)
        PREDROP_FUZZ_CHECK(l < 10);
    }
  }

  auto raw = maybe_gunzip(in, "fuzz", kCap);
  if (raw) PREDROP_FUZZ_CHECK(raw->size() <= kCap);
  return 0;
}

#pragma once
// IDX file reader: the format of MNIST and Fashion-MNIST (LeCun, Cortes, Burges, "The MNIST
// database", section "FILE FORMATS FOR THE MNIST DATABASE"; Xiao, Rasul, Vollgraf, Fashion-MNIST,
// arXiv 1708.07747). A file is a big-endian u32 magic 0x000008NN (0x08 = unsigned byte, NN = number
// of dimensions), NN big-endian u32 sizes, then the data. Files may be gzip members (RFC 1952),
// as Debian's dataset-fashion-mnist ships them, or plain.
//
// Errors are values naming the file and the problem, e.g. "file X: truncated: expected N bytes
// of pixel data, got M". No input crashes the parser or makes it allocate more than the data it
// holds (the header's sizes are checked against the bytes present before anything is allocated;
// decompression is capped). Pure functions, thread-safe.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"

namespace predrop::ddl::train {

/// Magic of an image file: unsigned bytes, 3 dimensions (count, rows, cols).
inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;
/// Magic of a label file: unsigned bytes, 1 dimension (count).
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;
/// Default cap on decompressed size; the largest Fashion-MNIST file inflates to 47 040 016 bytes.
inline constexpr std::size_t kDefaultMaxIdxBytes = std::size_t{256} << 20;

/// Images as floats in [0, 1] (byte / 255), row-major count x (rows * cols).
struct IdxImages {
  std::uint32_t count = 0;  ///< Number of images.
  std::uint32_t rows = 0;   ///< Rows per image.
  std::uint32_t cols = 0;   ///< Columns per image.
  std::vector<float> pixels;
};

/// Labels as read from the file (not range-checked here; see make_dataset).
struct IdxLabels {
  std::vector<std::uint8_t> labels;
};

/// True if `bytes` start with the gzip magic 1f 8b (RFC 1952 §2.3.1).
bool is_gzip(std::span<const std::uint8_t> bytes);

/// Inflates all gzip members in `bytes` (output capped at `max_output` bytes), or returns a copy
/// of `bytes` if they are not gzip. `source` names the input in error messages.
core::Result<std::vector<std::uint8_t>> maybe_gunzip(std::span<const std::uint8_t> bytes,
                                                     std::string_view source,
                                                     std::size_t max_output = kDefaultMaxIdxBytes);

/// Reads a whole file and inflates it if it is gzip.
core::Result<std::vector<std::uint8_t>> read_maybe_gzip_file(
    const std::filesystem::path& path, std::size_t max_output = kDefaultMaxIdxBytes);

/// Parses an image file held in memory, gzip or plain. `source` names it in error messages.
core::Result<IdxImages> parse_idx_images(std::span<const std::uint8_t> bytes,
                                         std::string_view source,
                                         std::size_t max_output = kDefaultMaxIdxBytes);

/// Parses a label file held in memory, gzip or plain.
core::Result<IdxLabels> parse_idx_labels(std::span<const std::uint8_t> bytes,
                                         std::string_view source,
                                         std::size_t max_output = kDefaultMaxIdxBytes);

/// Reads and parses an image file (gzip or plain).
core::Result<IdxImages> load_idx_images(const std::filesystem::path& path);

/// Reads and parses a label file (gzip or plain).
core::Result<IdxLabels> load_idx_labels(const std::filesystem::path& path);

}  // namespace predrop::ddl::train

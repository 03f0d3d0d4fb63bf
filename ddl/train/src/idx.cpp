// IDX parsing (see idx.hpp for the format and the error contract).
#include <array>
#include <cstdint>
#include <cstdio>
#include <string>

#include "predrop/ddl/train/idx.hpp"

namespace predrop::ddl::train {
namespace {

core::Error fail(std::string_view source, const std::string& what) {
  return core::make_error("file " + std::string(source) + ": " + what);
}

std::uint32_t be32(std::span<const std::uint8_t> b, std::size_t at) {
  return std::uint32_t{b[at]} << 24 | std::uint32_t{b[at + 1]} << 16 |
         std::uint32_t{b[at + 2]} << 8 | std::uint32_t{b[at + 3]};
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

struct IdxHeader {
  std::array<std::uint32_t, 3> dims{};
  std::size_t header_bytes = 0;
  std::size_t data_bytes = 0;  // product of the dims, checked against the bytes present
};

// Reads and checks an IDX header of `magic` (unsigned bytes, magic & 0xff dimensions) and that
// exactly the announced data follows. `what` names the data in messages ("pixel data").
core::Result<IdxHeader> read_header(std::span<const std::uint8_t> b, std::string_view source,
                                    std::uint32_t magic, const char* what) {
  const std::size_t ndims = magic & 0xff;
  if (b.empty()) return fail(source, "empty file");
  if (b.size() < 4) {
    return fail(source,
                "truncated header: expected 4 bytes of magic, got " + std::to_string(b.size()));
  }
  const std::uint32_t got = be32(b, 0);
  if (got != magic) {
    std::string msg = "bad magic " + hex32(got) + ", expected " + hex32(magic) +
                      " (IDX unsigned bytes, " + std::to_string(ndims) + " dimension" +
                      (ndims == 1 ? "" : "s") + ")";
    if ((got & 0xffff0000u) == 0 && (got >> 8 & 0xff) == 0x08) {
      msg += ": this IDX file has " + std::to_string(got & 0xff) + " dimensions";
    }
    return fail(source, msg);
  }
  IdxHeader h;
  h.header_bytes = 4 + 4 * ndims;
  if (b.size() < h.header_bytes) {
    return fail(source, "truncated header: expected " + std::to_string(h.header_bytes) +
                            " bytes, got " + std::to_string(b.size()));
  }
  // Sizes are u32, so a product of three needs up to 96 bits; stop before it leaves 64 bits. Any
  // product above the bytes present is reported as truncation below, so the cap loses nothing.
  std::uint64_t product = 1;
  bool huge = false;
  for (std::size_t i = 0; i < ndims; ++i) {
    h.dims[i] = be32(b, 4 + 4 * i);
    if (h.dims[i] == 0) {
      return fail(source, "wrong dims: dimension " + std::to_string(i) + " is 0");
    }
    if (product > UINT64_MAX / h.dims[i]) huge = true;
    if (!huge) product *= h.dims[i];
  }
  const std::size_t present = b.size() - h.header_bytes;
  if (huge || product > present) {
    std::string dims;
    for (std::size_t i = 0; i < ndims; ++i) {
      dims += (i ? " x " : "") + std::to_string(h.dims[i]);
    }
    return fail(source, std::string("truncated: expected ") +
                            (huge ? "more than 2^64" : std::to_string(product)) + " bytes of " +
                            what + " (" + dims + "), got " + std::to_string(present));
  }
  if (product < present) {
    return fail(source, "trailing data: expected " + std::to_string(product) + " bytes of " + what +
                            ", got " + std::to_string(present) + " (" +
                            std::to_string(present - product) + " extra)");
  }
  h.data_bytes = static_cast<std::size_t>(product);
  return h;
}

core::Result<IdxImages> images_from_plain(std::span<const std::uint8_t> b,
                                          std::string_view source) {
  auto h = read_header(b, source, kIdxImagesMagic, "pixel data");
  if (!h) return h.error();
  IdxImages out;
  out.count = h->dims[0];
  out.rows = h->dims[1];
  out.cols = h->dims[2];
  // Convert in two vectorisable passes (widen, then divide) rather than through a zero-filled
  // vector: 47 M pixels of the training set make the difference noticeable. x / 255.0f is exact
  // to the correctly rounded quotient, the same value as static_cast<float>(byte) / 255.0f.
  const std::uint8_t* src = b.data() + h->header_bytes;
  out.pixels.assign(src, src + h->data_bytes);
  for (float& p : out.pixels) {
    p /= 255.0f;
  }
  return out;
}

core::Result<IdxLabels> labels_from_plain(std::span<const std::uint8_t> b,
                                          std::string_view source) {
  auto h = read_header(b, source, kIdxLabelsMagic, "label data");
  if (!h) return h.error();
  IdxLabels out;
  out.labels.assign(b.begin() + static_cast<std::ptrdiff_t>(h->header_bytes), b.end());
  return out;
}

}  // namespace

core::Result<IdxImages> parse_idx_images(std::span<const std::uint8_t> bytes,
                                         std::string_view source, std::size_t max_output) {
  if (!is_gzip(bytes)) return images_from_plain(bytes, source);
  auto raw = maybe_gunzip(bytes, source, max_output);
  if (!raw) return raw.error();
  return images_from_plain(raw.value(), source);
}

core::Result<IdxLabels> parse_idx_labels(std::span<const std::uint8_t> bytes,
                                         std::string_view source, std::size_t max_output) {
  if (!is_gzip(bytes)) return labels_from_plain(bytes, source);
  auto raw = maybe_gunzip(bytes, source, max_output);
  if (!raw) return raw.error();
  return labels_from_plain(raw.value(), source);
}

core::Result<IdxImages> load_idx_images(const std::filesystem::path& path) {
  auto raw = read_maybe_gzip_file(path);
  if (!raw) return raw.error();
  return images_from_plain(raw.value(), path.string());
}

core::Result<IdxLabels> load_idx_labels(const std::filesystem::path& path) {
  auto raw = read_maybe_gzip_file(path);
  if (!raw) return raw.error();
  return labels_from_plain(raw.value(), path.string());
}

}  // namespace predrop::ddl::train

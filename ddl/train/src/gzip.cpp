// gzip (RFC 1952) inflation through zlib. This is the only file that includes <zlib.h>; zlib's
// return codes become text here.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "predrop/ddl/train/idx.hpp"

namespace predrop::ddl::train {
namespace {

core::Error fail(std::string_view source, const std::string& what) {
  return core::make_error("file " + std::string(source) + ": " + what);
}

// RAII for one z_stream in inflate mode.
class Inflater {
 public:
  Inflater() = default;
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  ~Inflater() {
    if (initialised_) inflateEnd(&zs_);
  }
  // 16 + MAX_WBITS: expect a gzip wrapper, check its CRC-32 and ISIZE trailer.
  bool init() {
    initialised_ = inflateInit2(&zs_, 16 + MAX_WBITS) == Z_OK;
    return initialised_;
  }
  z_stream& stream() { return zs_; }

 private:
  z_stream zs_{};
  bool initialised_ = false;
};

}  // namespace

bool is_gzip(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

core::Result<std::vector<std::uint8_t>> maybe_gunzip(std::span<const std::uint8_t> bytes,
                                                     std::string_view source,
                                                     std::size_t max_output) {
  if (!is_gzip(bytes)) {
    if (bytes.size() > max_output) {
      return fail(source, "size " + std::to_string(bytes.size()) + " exceeds the limit of " +
                              std::to_string(max_output) + " bytes");
    }
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
  }
  Inflater inf;
  if (!inf.init()) return fail(source, "gzip: cannot initialise zlib");
  z_stream& zs = inf.stream();

  std::vector<std::uint8_t> out;
  // The last member's ISIZE trailer (RFC 1952 §2.3.1) hints at the size; it is untrusted, so the
  // reservation is bounded by the cap and by deflate's maximum ratio (about 1032:1).
  if (bytes.size() >= 18) {
    const auto* t = bytes.data() + bytes.size() - 4;
    const std::size_t isize = std::size_t{t[0]} | std::size_t{t[1]} << 8 | std::size_t{t[2]} << 16 |
                              std::size_t{t[3]} << 24;
    out.reserve(std::min({isize, max_output, bytes.size() * 1032}));
  }

  // Inflate up to one byte past the cap, so that "exactly at the cap" and "over it" differ.
  const std::size_t limit = max_output < SIZE_MAX ? max_output + 1 : max_output;
  std::size_t in_pos = 0;
  std::size_t produced = 0;
  constexpr std::size_t kStep = 1 << 16;
  for (;;) {
    if (zs.avail_in == 0 && in_pos < bytes.size()) {
      const std::size_t n = std::min<std::size_t>(bytes.size() - in_pos, UINT_MAX);
      // zlib's API is not const-correct; it never writes through next_in.
      zs.next_in = const_cast<Bytef*>(bytes.data() + in_pos);
      zs.avail_in = static_cast<uInt>(n);
      in_pos += n;
    }
    if (produced > max_output) break;
    const std::size_t step = std::min(kStep, limit - produced);
    if (out.size() < produced + step) out.resize(produced + step);
    zs.next_out = out.data() + produced;
    zs.avail_out = static_cast<uInt>(step);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    produced += step - zs.avail_out;
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR) {
      // No progress possible: output space runs out (handled above) or the input is exhausted.
      if (zs.avail_in == 0 && in_pos == bytes.size() && zs.avail_out != 0) {
        return fail(source, "gzip: truncated stream (" + std::to_string(bytes.size()) +
                                " compressed bytes end mid-stream)");
      }
      continue;
    }
    if (rc == Z_DATA_ERROR) {
      return fail(source,
                  std::string("gzip: corrupt data: ") + (zs.msg ? zs.msg : "unknown error"));
    }
    if (rc == Z_MEM_ERROR) return fail(source, "gzip: out of memory");
    if (rc != Z_STREAM_END) return fail(source, "gzip: zlib error " + std::to_string(rc));
    // End of one member. gzip allows several concatenated members (RFC 1952 §2.2).
    const std::size_t rest = zs.avail_in + (bytes.size() - in_pos);
    if (rest == 0) break;
    const std::size_t at = bytes.size() - rest;
    if (!is_gzip(bytes.subspan(at))) {
      return fail(source, "gzip: " + std::to_string(rest) +
                              " bytes of trailing garbage after the compressed data");
    }
    if (inflateReset(&zs) != Z_OK) return fail(source, "gzip: cannot reset zlib");
  }
  if (produced > max_output) {
    return fail(source, "gzip: decompressed size exceeds the limit of " +
                            std::to_string(max_output) + " bytes");
  }
  out.resize(produced);
  return out;
}

core::Result<std::vector<std::uint8_t>> read_maybe_gzip_file(const std::filesystem::path& path,
                                                             std::size_t max_output) {
  const std::string name = path.string();
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  errno = 0;
  std::unique_ptr<std::FILE, Closer> f(std::fopen(name.c_str(), "rb"));
  if (!f) return fail(name, std::string("cannot open: ") + std::strerror(errno));
  std::vector<std::uint8_t> raw;
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); !ec) {
    raw.reserve(static_cast<std::size_t>(std::min<std::uintmax_t>(size, max_output)));
  }
  std::uint8_t buf[1 << 16];
  for (;;) {
    const std::size_t n = std::fread(buf, 1, sizeof buf, f.get());
    raw.insert(raw.end(), buf, buf + n);
    if (n < sizeof buf) break;
    if (raw.size() > max_output && !is_gzip(raw)) {
      return fail(name, "size exceeds the limit of " + std::to_string(max_output) + " bytes");
    }
  }
  if (std::ferror(f.get())) return fail(name, std::string("read error: ") + std::strerror(errno));
  if (!is_gzip(raw)) return raw;
  return maybe_gunzip(raw, name, max_output);
}

}  // namespace predrop::ddl::train

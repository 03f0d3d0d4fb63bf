#pragma once
// Big-endian ("network byte order", RFC 791 Appendix B / RFC 3550 §4) readers and writers over
// byte spans. Used by every codec in predrop::net so that no parser ever casts a struct onto a
// receive buffer or reads past its end.
//
// Both classes have a sticky failure flag: the first read or write that does not fit sets it,
// returns zero (reads) or writes nothing, and every later call is a no-op. A codec therefore reads
// or writes a whole fixed-size block and checks ok() once, which keeps the per-field code short
// without giving up the "check the length before every read" rule: the check lives here.
//
// Threading: none; these are values over borrowed memory. They never allocate.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace predrop::core {

/// Reads a big-endian 16-bit value from p[0..1]. The caller guarantees two readable bytes.
constexpr std::uint16_t load_u16_be(const std::uint8_t* p) {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

/// Reads a big-endian 24-bit value from p[0..2] into the low bits. Caller guarantees three bytes.
constexpr std::uint32_t load_u24_be(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | std::uint32_t{p[2]};
}

/// Reads a big-endian 32-bit value from p[0..3]. The caller guarantees four readable bytes.
constexpr std::uint32_t load_u32_be(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

/// Reads a big-endian 64-bit value from p[0..7]. The caller guarantees eight readable bytes.
constexpr std::uint64_t load_u64_be(const std::uint8_t* p) {
  return (std::uint64_t{load_u32_be(p)} << 32) | load_u32_be(p + 4);
}

/// Writes v big-endian to p[0..1]. The caller guarantees two writable bytes.
constexpr void store_u16_be(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

/// Writes the low 24 bits of v big-endian to p[0..2]. The caller guarantees three writable bytes.
constexpr void store_u24_be(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 16);
  p[1] = static_cast<std::uint8_t>(v >> 8);
  p[2] = static_cast<std::uint8_t>(v);
}

/// Writes v big-endian to p[0..3]. The caller guarantees four writable bytes.
constexpr void store_u32_be(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  p[1] = static_cast<std::uint8_t>(v >> 16);
  p[2] = static_cast<std::uint8_t>(v >> 8);
  p[3] = static_cast<std::uint8_t>(v);
}

/// Writes v big-endian to p[0..7]. The caller guarantees eight writable bytes.
constexpr void store_u64_be(std::uint8_t* p, std::uint64_t v) {
  store_u32_be(p, static_cast<std::uint32_t>(v >> 32));
  store_u32_be(p + 4, static_cast<std::uint32_t>(v));
}

/// Bounds-checked big-endian reader over a borrowed byte span, with a sticky failure flag.
class ByteReader {
 public:
  /// Reads from data, which must outlive the reader.
  explicit constexpr ByteReader(std::span<const std::uint8_t> data) : data_(data) {}

  /// False once any read did not fit; stays false.
  constexpr bool ok() const { return !failed_; }
  /// Bytes consumed so far.
  constexpr std::size_t position() const { return pos_; }
  /// Bytes left to read (0 after a failure).
  constexpr std::size_t remaining() const { return failed_ ? 0 : data_.size() - pos_; }
  /// True if n more bytes can be read.
  constexpr bool can_read(std::size_t n) const { return !failed_ && n <= data_.size() - pos_; }

  /// Reads one byte, or returns 0 and fails.
  constexpr std::uint8_t read_u8() {
    if (!take(1)) {
      return 0;
    }
    return data_[pos_ - 1];
  }
  /// Reads a big-endian u16, or returns 0 and fails.
  constexpr std::uint16_t read_u16() { return take(2) ? load_u16_be(&data_[pos_ - 2]) : 0; }
  /// Reads a big-endian 24-bit value into the low bits of a u32, or returns 0 and fails.
  constexpr std::uint32_t read_u24() { return take(3) ? load_u24_be(&data_[pos_ - 3]) : 0; }
  /// Reads a big-endian u32, or returns 0 and fails.
  constexpr std::uint32_t read_u32() { return take(4) ? load_u32_be(&data_[pos_ - 4]) : 0; }
  /// Reads a big-endian u64, or returns 0 and fails.
  constexpr std::uint64_t read_u64() { return take(8) ? load_u64_be(&data_[pos_ - 8]) : 0; }
  /// Reads a big-endian two's complement i32, or returns 0 and fails.
  constexpr std::int32_t read_i32() { return static_cast<std::int32_t>(read_u32()); }
  /// Reads a big-endian IEEE-754 binary64, or returns 0.0 and fails.
  constexpr double read_f64() { return std::bit_cast<double>(read_u64()); }

  /// Returns a view of the next n bytes and consumes them, or an empty span and fails.
  constexpr std::span<const std::uint8_t> read_bytes(std::size_t n) {
    if (!take(n)) {
      return {};
    }
    return data_.subspan(pos_ - n, n);
  }
  /// Consumes n bytes without looking at them, or fails.
  constexpr void skip(std::size_t n) { take(n); }
  /// A view of everything not read yet (empty after a failure); consumes nothing.
  constexpr std::span<const std::uint8_t> rest() const {
    return failed_ ? std::span<const std::uint8_t>{} : data_.subspan(pos_);
  }

 private:
  constexpr bool take(std::size_t n) {
    if (failed_ || n > data_.size() - pos_) {
      failed_ = true;
      return false;
    }
    pos_ += n;
    return true;
  }

  std::span<const std::uint8_t> data_;
  std::size_t pos_ = 0;
  bool failed_ = false;
};

/// Bounds-checked big-endian writer into a borrowed byte span, with a sticky failure flag.
class ByteWriter {
 public:
  /// Writes into out, which must outlive the writer.
  explicit constexpr ByteWriter(std::span<std::uint8_t> out) : out_(out) {}

  /// False once any write did not fit; stays false.
  constexpr bool ok() const { return !failed_; }
  /// Bytes written so far.
  constexpr std::size_t position() const { return pos_; }
  /// Bytes still free (0 after a failure).
  constexpr std::size_t remaining() const { return failed_ ? 0 : out_.size() - pos_; }

  /// Writes one byte, or fails.
  constexpr void write_u8(std::uint8_t v) {
    if (take(1)) {
      out_[pos_ - 1] = v;
    }
  }
  /// Writes a big-endian u16, or fails.
  constexpr void write_u16(std::uint16_t v) {
    if (take(2)) {
      store_u16_be(&out_[pos_ - 2], v);
    }
  }
  /// Writes the low 24 bits of v big-endian, or fails.
  constexpr void write_u24(std::uint32_t v) {
    if (take(3)) {
      store_u24_be(&out_[pos_ - 3], v);
    }
  }
  /// Writes a big-endian u32, or fails.
  constexpr void write_u32(std::uint32_t v) {
    if (take(4)) {
      store_u32_be(&out_[pos_ - 4], v);
    }
  }
  /// Writes a big-endian u64, or fails.
  constexpr void write_u64(std::uint64_t v) {
    if (take(8)) {
      store_u64_be(&out_[pos_ - 8], v);
    }
  }
  /// Writes a big-endian two's complement i32, or fails.
  constexpr void write_i32(std::int32_t v) { write_u32(static_cast<std::uint32_t>(v)); }
  /// Writes a big-endian IEEE-754 binary64, or fails.
  constexpr void write_f64(double v) { write_u64(std::bit_cast<std::uint64_t>(v)); }
  /// Copies bytes, or fails (writing nothing).
  void write_bytes(std::span<const std::uint8_t> bytes) {
    if (take(bytes.size()) && !bytes.empty()) {
      std::memcpy(&out_[pos_ - bytes.size()], bytes.data(), bytes.size());
    }
  }
  /// Writes n zero bytes, or fails (writing nothing).
  void write_zeros(std::size_t n) {
    if (take(n) && n != 0) {
      std::memset(&out_[pos_ - n], 0, n);
    }
  }
  /// Overwrites a u16 already written at offset `at` (for length fields known only at the end).
  constexpr void patch_u16(std::size_t at, std::uint16_t v) {
    if (!failed_ && at + 2 <= pos_) {
      store_u16_be(&out_[at], v);
    }
  }
  /// Overwrites a byte already written at offset `at`.
  constexpr void patch_u8(std::size_t at, std::uint8_t v) {
    if (!failed_ && at < pos_) {
      out_[at] = v;
    }
  }

 private:
  constexpr bool take(std::size_t n) {
    if (failed_ || n > out_.size() - pos_) {
      failed_ = true;
      return false;
    }
    pos_ += n;
    return true;
  }

  std::span<std::uint8_t> out_;
  std::size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace predrop::core

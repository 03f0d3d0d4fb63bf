#pragma once
// Reads a fuzz input as a script of small decisions: each call takes the next bytes, and an
// exhausted input yields zeros and empty strings, so a harness never reads past the end and
// every prefix of an input is itself a valid script (what libFuzzer's minimiser relies on).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace predrop::fuzz {

/// The unread rest of a fuzz input.
struct Reader {
  const std::uint8_t* p;
  std::size_t n;

  /// True when every byte has been read.
  bool empty() const { return n == 0; }

  /// The next byte, or 0 once the input is exhausted.
  std::uint8_t u8() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }

  /// The next two bytes, big-endian (missing bytes read as 0).
  std::uint16_t u16() {
    const std::uint8_t hi = u8();
    return static_cast<std::uint16_t>(hi << 8 | u8());
  }

  /// The next `len` bytes, or fewer if the input ends first.
  std::string_view bytes(std::size_t len) {
    len = len < n ? len : n;
    std::string_view out(reinterpret_cast<const char*>(p), len);
    p += len;
    n -= len;
    return out;
  }
};

}  // namespace predrop::fuzz

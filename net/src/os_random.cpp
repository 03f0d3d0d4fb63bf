#include "predrop/net/os_random.hpp"

#include <sys/random.h>

#include <cerrno>
#include <system_error>

namespace predrop::net {

void fill_random(std::span<std::uint8_t> out) {
  std::size_t got = 0;
  while (got < out.size()) {
    // Without flags getrandom reads the urandom pool once it is initialised; requests of up to
    // 256 bytes are never short, but looping costs nothing and survives EINTR.
    const ssize_t n = ::getrandom(out.data() + got, out.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    got += static_cast<std::size_t>(n);
  }
}

std::uint64_t random_u64() {
  std::uint8_t b[8];
  fill_random(b);
  std::uint64_t v = 0;
  for (const std::uint8_t x : b) {
    v = v << 8 | x;
  }
  return v;
}

std::uint32_t random_u32() {
  return static_cast<std::uint32_t>(random_u64() >> 32);
}

std::uint16_t random_u16() {
  return static_cast<std::uint16_t>(random_u64() >> 48);
}

std::string random_hex(std::size_t bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::uint8_t buf[64];
  std::string out;
  out.reserve(2 * bytes);
  while (bytes > 0) {
    const std::size_t n = bytes < sizeof buf ? bytes : sizeof buf;
    fill_random(std::span(buf, n));
    for (std::size_t i = 0; i < n; ++i) {
      out += kHex[buf[i] >> 4];
      out += kHex[buf[i] & 0xf];
    }
    bytes -= n;
  }
  return out;
}

wire::SrtpKeyMaterial random_srtp_key(wire::SrtpSuite suite) {
  wire::SrtpKeyMaterial key;
  key.size = wire::key_salt_size(suite);
  fill_random(std::span(key.bytes.data(), key.size));
  return key;
}

}  // namespace predrop::net

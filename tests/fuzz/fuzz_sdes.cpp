// Fuzzes parse_crypto_attribute() and the strict base64 codec. Properties: an accepted a=crypto
// line formats to a line that parses to the same attribute; strict decoding accepts only
// canonical text, so decode-then-encode returns the input exactly; encode-then-decode returns
// the bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "predrop/wire/sdes_key.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace predrop::wire;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto attr = parse_crypto_attribute(text);
  if (attr) {
    PREDROP_FUZZ_CHECK(attr->key.size == key_salt_size(attr->suite));
    const std::string line = format_crypto_attribute(attr->tag, attr->suite, attr->key);
    auto again = parse_crypto_attribute(line);
    PREDROP_FUZZ_CHECK(again && *again == *attr);
  }

  auto decoded = base64_decode(text);
  if (decoded) PREDROP_FUZZ_CHECK(base64_encode(*decoded) == text);

  const std::string encoded = base64_encode(std::span(data, size));
  auto back = base64_decode(encoded);
  PREDROP_FUZZ_CHECK(back && std::ranges::equal(*back, std::span(data, size)));
  return 0;
}

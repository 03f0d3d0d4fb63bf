// Fuzzes parse_mikey() and parse_key_mgmt() (the MIKEY key transport players read and send).
// Property: a message that parses rebuilds (build_mikey with the parsed suite and key) into a
// message that parses to the same suite and key.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "fuzz_check.hpp"
#include "predrop/wire/mikey.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace predrop::wire;
  auto parsed = parse_mikey(std::span(data, size));
  if (parsed) {
    const auto again = parse_mikey(build_mikey(parsed->suite, parsed->key, MikeyFields{}));
    PREDROP_FUZZ_CHECK(again.ok());
    PREDROP_FUZZ_CHECK(again->suite == parsed->suite);
    PREDROP_FUZZ_CHECK(again->key == parsed->key);
  }
  (void)parse_key_mgmt(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}

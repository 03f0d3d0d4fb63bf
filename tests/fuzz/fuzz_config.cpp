// Fuzz target for the TOML server configuration (config/src/config.cpp). Property: a config that
// parse_config accepts also passes validate_config, and every error carries a message.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "predrop/config/config.hpp"

#define FUZZ_CHECK(cond)                                                             \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "fuzz property failed: %s (line %d)\n", #cond, __LINE__); \
      __builtin_trap();                                                              \
    }                                                                                \
  } while (0)

using namespace predrop::config;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Configuration files are small; bound the work per input (toml++ is not the target here).
  if (size > 16 * 1024) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)parse_performance_threshold(text);
  (void)parse_delay_threshold(text);
  (void)parse_endpoint(text, true);
  const auto cfg = parse_config(text, "fuzz.toml");
  if (!cfg.ok()) {
    FUZZ_CHECK(!cfg.error().message.empty());
    return 0;
  }
  const auto status = validate_config(*cfg);
  FUZZ_CHECK(status.ok());
  return 0;
}

// Fuzz target for the SDP parser and builder (rtsp/src/sdp.cpp). Property: whatever parse_sdp
// accepts, build_sdp can write, and parsing that text gives back the same session.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "predrop/rtsp/sdp.hpp"

#define FUZZ_CHECK(cond)                                                             \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "fuzz property failed: %s (line %d)\n", #cond, __LINE__); \
      __builtin_trap();                                                              \
    }                                                                                \
  } while (0)

using namespace predrop::rtsp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto parsed = parse_sdp(text);
  if (!parsed.ok()) return 0;
  for (const auto& m : parsed->media) {
    for (const auto& c : m.crypto)
      (void)c.inline_key();
    (void)m.find_extmap(kStageExtensionUri);
  }
  const auto built = build_sdp(*parsed);
  FUZZ_CHECK(built.ok());
  // Normalised line ends can make the text longer than the parser's limit; skip those.
  SdpLimits limits;
  if (built->size() > limits.max_bytes) return 0;
  const auto again = parse_sdp(*built);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(*again == *parsed);
  return 0;
}

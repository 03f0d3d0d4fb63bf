// Fuzz target for the RTSP request and response parsers (rtsp/src/rtsp_message_parser.cpp over
// rtsp_framer.cpp).
//
// Input: byte 0 sets the largest read size (1..256), byte 1 seeds the split pattern, the rest is
// the TCP byte stream. Properties checked, beyond "no crash, no leak, no UB":
//   1. Feeding the stream in random pieces yields exactly the events of feeding it whole.
//   2. A fatal error is sticky.
//   3. Every parsed request serialises to text that parses back to the same method, URL, CSeq
//      and body.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "predrop/rtsp/rtsp_message.hpp"

#define FUZZ_CHECK(cond)                                                             \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "fuzz property failed: %s (line %d)\n", #cond, __LINE__); \
      __builtin_trap();                                                              \
    }                                                                                \
  } while (0)

namespace {

using namespace predrop::rtsp;

struct Event {
  RtspParseEvent kind;
  std::string a;  // method or reason / interleaved payload / error message
  std::string b;  // url
  std::string body;
  std::uint32_t n = 0;  // cseq / channel / status
  bool operator==(const Event&) const = default;
};

template <typename Parser>
Event describe(Parser& p, RtspParseEvent ev) {
  Event e{ev};
  if (ev == RtspParseEvent::kInterleaved) {
    e.n = p.interleaved().channel;
    e.a.assign(p.interleaved().payload.begin(), p.interleaved().payload.end());
  } else if (ev == RtspParseEvent::kError) {
    e.n = static_cast<std::uint32_t>(p.error().status);
    e.a = p.error().message;
    e.b = p.error().fatal ? "fatal" : "";
  } else if constexpr (std::is_same_v<Parser, RtspRequestParser>) {
    const auto& r = p.request();
    e.a = r.method_name;
    e.b = r.url;
    e.body = r.body;
    e.n = r.cseq;
    // Property 3.
    RtspParserLimits big;
    big.max_header_bytes = 1 << 20;
    big.max_buffered_bytes = 1 << 22;
    big.max_headers = 1 << 16;
    const auto back = parse_request(serialize(r), big);
    FUZZ_CHECK(back.ok());
    FUZZ_CHECK(back->method_name == r.method_name && back->url == r.url && back->cseq == r.cseq &&
               back->body == r.body && back->method == r.method);
  } else {
    const auto& r = p.response();
    e.a = r.reason;
    e.body = r.body;
    e.n = static_cast<std::uint32_t>(r.status);
    (void)serialize(r);
  }
  return e;
}

template <typename Parser>
std::vector<Event> run(std::string_view input, std::size_t max_chunk, std::uint32_t seed) {
  Parser p;
  std::vector<Event> out;
  std::size_t at = 0;
  while (at < input.size() || (at == 0 && input.empty())) {
    std::size_t chunk = input.size() - at;
    if (max_chunk != 0) {
      seed = seed * 1103515245u + 12345u;
      chunk = std::min<std::size_t>(chunk, 1 + (seed >> 16) % max_chunk);
    }
    auto ev = p.feed(input.substr(at, chunk));
    at += chunk;
    for (; ev != RtspParseEvent::kNeedMore; ev = p.next()) {
      out.push_back(describe(p, ev));
      if (ev == RtspParseEvent::kError && p.error().fatal) {
        // Property 2.
        FUZZ_CHECK(p.next() == RtspParseEvent::kError);
        FUZZ_CHECK(p.feed("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n") == RtspParseEvent::kError);
        return out;
      }
    }
    if (input.empty()) break;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Beyond the parsers' buffer limit a whole feed fails where split feeds would not.
  if (size < 2 || size > 64 * 1024) return 0;
  const std::size_t max_chunk = static_cast<std::size_t>(data[0]) + 1;
  const std::uint32_t seed = data[1];
  const std::string_view stream(reinterpret_cast<const char*>(data + 2), size - 2);

  // Property 1, for both parsers.
  FUZZ_CHECK(
      (run<RtspRequestParser>(stream, 0, 0) == run<RtspRequestParser>(stream, max_chunk, seed)));
  FUZZ_CHECK(
      (run<RtspResponseParser>(stream, 0, 0) == run<RtspResponseParser>(stream, max_chunk, seed)));
  (void)parse_request(stream);
  (void)parse_response(stream);
  return 0;
}

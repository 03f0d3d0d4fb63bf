// Fuzz target for the RTSP header-value parsers: Transport (round trip through format_transport),
// Session (round trip through format_session), RTP-Info, Range and rtsp:// URLs.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "predrop/rtsp/rtsp_headers.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"

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

  if (const auto offers = parse_transport(text); offers.ok()) {
    FUZZ_CHECK(!offers->empty() && offers->size() <= 16);
    if (const auto i = select_transport(*offers)) FUZZ_CHECK(*i < offers->size());
    for (const auto& spec : *offers) {
      const auto back = parse_transport_spec(format_transport(spec));
      FUZZ_CHECK(back.ok());
      FUZZ_CHECK(*back == spec);
    }
  }
  if (const auto s = parse_session(text); s.ok()) {
    const auto back = parse_session(format_session(*s));
    FUZZ_CHECK(back.ok() && back->id == s->id && back->timeout_s == s->timeout_s);
  }
  if (const auto info = parse_rtp_info(text); info.ok()) (void)format_rtp_info(*info);
  if (const auto r = parse_npt_range(text); r.ok()) {
    FUZZ_CHECK(r->start_s >= 0 && (!r->end_s || *r->end_s >= r->start_s));
    (void)format_npt_range(*r);
  }
  if (const auto u = parse_rtsp_url(text); u.ok()) {
    FUZZ_CHECK(!u->host.empty() && u->port != 0 && !u->path.empty());
    (void)resolve_control_url(text, u->stream);
  }
  return 0;
}

// Structure-aware fuzz target for RTSP interleaved framing (RFC 2326 §10.12) in the request
// parser (rtsp/src/rtsp_framer.cpp, RtspFramer): the input is decoded into a byte stream made
// of items -- whole requests, "$" frames on any channel with any payload, frame headers whose
// length is over the limit (RtspParserLimits::max_interleaved_bytes), raw garbage and a
// truncated frame at the end -- which is fed to a parser in read sizes the input chooses.
//
// Properties, beyond "no crash, no UB":
// - any split of the stream into reads gives the same events as byte-at-a-time feeding;
// - without garbage items the parser never loses step: it yields exactly the requests (with
//   their CSeq) and frames (channel and payload) that were written, in order, counts every
//   overlong header as bad_length, and reports a truncated tail as in_interleaved_frame();
// - with garbage, every event is still well formed and the counters only grow.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_reader.hpp"
#include "predrop/rtsp/rtsp_message.hpp"

namespace {

using namespace predrop;

constexpr std::size_t kMaxFrame = 512;

using fuzz::Reader;

// What a parse yielded, in order: 'M' + cseq for a request, 'F' + channel + payload for a frame,
// 'E' + status for an error.
struct Events {
  std::vector<std::string> items;
  rtsp::InterleavedCounters counters;
  bool in_frame = false;
  bool fatal = false;
};

void drain(rtsp::RtspRequestParser& p, rtsp::RtspParseEvent ev, Events& out) {
  for (; ev != rtsp::RtspParseEvent::kNeedMore; ev = p.next()) {
    if (ev == rtsp::RtspParseEvent::kMessage) {
      out.items.push_back("M" + std::to_string(p.request().cseq));
    } else if (ev == rtsp::RtspParseEvent::kInterleaved) {
      const auto& f = p.interleaved();
      PREDROP_FUZZ_CHECK(f.payload.size() <= kMaxFrame);
      out.items.push_back("F" + std::to_string(f.channel) + ":" +
                          std::string(f.payload.begin(), f.payload.end()));
    } else {
      out.items.push_back("E" + std::to_string(p.error().status));
      if (p.error().fatal) {
        out.fatal = true;
        return;
      }
    }
  }
}

Events parse(std::string_view stream, const std::vector<std::size_t>& reads) {
  rtsp::RtspParserLimits limits;
  limits.max_interleaved_bytes = kMaxFrame;
  rtsp::RtspRequestParser p(limits);
  Events out;
  std::size_t at = 0;
  for (std::size_t i = 0; at < stream.size() && !out.fatal; ++i) {
    const std::size_t n = reads.empty() ? 1 : reads[i % reads.size()];
    const std::string_view piece = stream.substr(at, n);
    at += piece.size();
    drain(p, p.feed(piece), out);
  }
  out.counters = p.interleaved_counters();
  out.in_frame = p.in_interleaved_frame();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  Reader in{data, size};
  std::vector<std::size_t> reads;
  for (int i = 0, n = in.u8() % 8; i < n; ++i) {
    reads.push_back(1 + in.u8() % 97);
  }
  std::string stream;
  std::vector<std::string> expected;
  std::uint64_t overlong = 0;
  bool garbage = false;
  bool truncated = false;
  std::uint32_t cseq = 0;
  while (!in.empty() && !truncated) {
    switch (in.u8() % 5) {
      case 0: {  // a whole request
        const std::string_view method = (in.u8() & 1) != 0 ? "OPTIONS" : "GET_PARAMETER";
        stream += std::string(method) + " rtsp://h/s RTSP/1.0\r\nCSeq: " + std::to_string(++cseq) +
                  "\r\n\r\n";
        expected.push_back("M" + std::to_string(cseq));
        break;
      }
      case 1: {  // a frame within the limit
        const std::uint8_t channel = in.u8();
        const std::string_view payload = in.bytes(in.u8() % 200);
        stream += {'$', static_cast<char>(channel), static_cast<char>(payload.size() >> 8),
                   static_cast<char>(payload.size() & 0xff)};
        stream += payload;
        expected.push_back("F" + std::to_string(channel) + ":" + std::string(payload));
        break;
      }
      case 2: {  // a header announcing more than the limit, nothing after it
        const std::size_t hi = in.u8();
        const std::size_t len = kMaxFrame + 1 + (hi << 8 | in.u8()) % (0xffff - kMaxFrame);
        stream += {'$', static_cast<char>(in.u8()), static_cast<char>(len >> 8),
                   static_cast<char>(len & 0xff)};
        ++overlong;
        break;
      }
      case 3: {  // raw bytes: all bets on step are off
        stream += in.bytes(in.u8() % 64);
        garbage = true;
        break;
      }
      default: {  // a frame cut short: the stream ends inside it
        const std::size_t len = 1 + in.u8() % 200;
        stream += {'$', static_cast<char>(in.u8()), static_cast<char>(len >> 8),
                   static_cast<char>(len & 0xff)};
        stream += std::string(in.u8() % len, 'x');
        truncated = true;
        break;
      }
    }
  }

  const Events split = parse(stream, reads);
  const Events bytewise = parse(stream, {});
  PREDROP_FUZZ_CHECK(split.items == bytewise.items);
  PREDROP_FUZZ_CHECK(split.counters.bad_length == bytewise.counters.bad_length);
  PREDROP_FUZZ_CHECK(split.counters.skipped_bytes == bytewise.counters.skipped_bytes);
  PREDROP_FUZZ_CHECK(split.in_frame == bytewise.in_frame);
  if (!garbage) {
    PREDROP_FUZZ_CHECK(!split.fatal);
    PREDROP_FUZZ_CHECK(split.items == expected);
    PREDROP_FUZZ_CHECK(split.counters.bad_length == overlong);
    PREDROP_FUZZ_CHECK(split.counters.skipped_bytes == 4 * overlong);
    PREDROP_FUZZ_CHECK(split.in_frame == truncated);
  }
  return 0;
}

// RTSP 1.0 message parsing (RFC 2326 §6, §7, §12.17): a framed message (rtsp_framer.cpp) to a
// request or a response: its start line, header lines and CSeq, checked in one order for both
// directions; and the one-shot parse_request / parse_response.
#include <string>
#include <type_traits>
#include <vector>

#include "predrop/core/text_util.hpp"
#include "predrop/rtsp/rtsp_message.hpp"

namespace predrop::rtsp {

namespace {

// "NAME/d.d": a protocol version we can name in a 505, as opposed to garbage (400).
bool looks_like_version(std::string_view v) {
  const auto slash = v.find('/');
  if (slash == std::string_view::npos || slash == 0) {
    return false;
  }
  const auto num = v.substr(slash + 1);
  return num.size() == 3 && core::text::is_digit(num[0]) && num[1] == '.' &&
         core::text::is_digit(num[2]) && core::text::is_token(v.substr(0, slash));
}

// Splits a start line at runs of spaces/tabs into at most `max` pieces (the last takes the rest).
std::vector<std::string_view> split_start_line(std::string_view line, std::size_t max) {
  std::vector<std::string_view> parts;
  line = core::text::trim(line);
  while (!line.empty()) {
    if (parts.size() + 1 == max) {
      parts.push_back(line);
      break;
    }
    std::size_t end = 0;
    while (end < line.size() && !core::text::is_space(line[end])) {
      ++end;
    }
    parts.push_back(line.substr(0, end));
    line = core::text::trim(line.substr(end));
  }
  return parts;
}

// CSeq of a set of header fields: nullopt when absent; error text when malformed or ambiguous.
struct CSeqLookup {
  std::optional<std::uint32_t> value;
  std::string error;
  bool present = false;
};
CSeqLookup find_cseq(const std::vector<std::pair<std::string, std::string>>& headers) {
  CSeqLookup out;
  for (const auto& [name, value] : headers) {
    if (!core::text::iequals(name, "CSeq")) {
      continue;
    }
    const auto v = core::text::parse_uint<std::uint32_t>(value);
    if (!v) {
      out.error = "CSeq " + core::text::quote_for_error(value) + " is not a number";
      out.value.reset();
      return out;
    }
    if (out.present && out.value != v) {
      out.error = "conflicting CSeq headers";
      out.value.reset();
      return out;
    }
    out.present = true;
    out.value = v;
  }
  return out;
}

// ---- start lines ----------------------------------------------------------------------------

// Why a start line was refused: the status to answer (or report) and the text.
struct StartLineError {
  int status = 400;
  std::string message;
};

// "Method SP Request-URI SP RTSP-Version" (§6.1).
std::optional<StartLineError> read_start_line(std::string_view line, RtspRequest& out) {
  const auto parts = split_start_line(line, 4);
  if (parts.size() != 3) {
    return StartLineError{400, "malformed request line " + core::text::quote_for_error(line)};
  }
  if (!core::text::is_token(parts[0])) {
    return StartLineError{400, "malformed method " + core::text::quote_for_error(parts[0])};
  }
  if (parts[2] != kRtspVersion) {
    if (looks_like_version(parts[2])) {
      return StartLineError{505,
                            "version " + core::text::quote_for_error(parts[2]) + " not supported"};
    }
    return StartLineError{400, "malformed version " + core::text::quote_for_error(parts[2])};
  }
  if (core::text::has_ctl(parts[1])) {
    return StartLineError{400, "control character in URL"};
  }
  out.method_name = std::string(parts[0]);
  out.method = method_from_string(parts[0]);
  out.url = std::string(parts[1]);
  return std::nullopt;
}

// "RTSP-Version SP Status-Code SP Reason-Phrase" (§7.1); the reason may be empty.
std::optional<StartLineError> read_start_line(std::string_view line, RtspResponse& out) {
  const auto parts = split_start_line(line, 3);
  if (parts.size() >= 2 && parts[0] != kRtspVersion && parts.back().ends_with(kRtspVersion)) {
    return StartLineError{
        501, "request " + core::text::quote_for_error(parts[0]) + " from the server skipped"};
  }
  if (parts.size() < 2) {
    return StartLineError{400, "malformed status line " + core::text::quote_for_error(line)};
  }
  if (parts[0] != kRtspVersion) {
    return StartLineError{looks_like_version(parts[0]) ? 505 : 400,
                          "unexpected version " + core::text::quote_for_error(parts[0])};
  }
  const auto status = parts[1].size() == 3 ? core::text::parse_uint<int>(parts[1]) : std::nullopt;
  if (!status || *status < 100 || *status > 599) {
    return StartLineError{400, "malformed status code " + core::text::quote_for_error(parts[1])};
  }
  out.status = *status;
  out.reason = parts.size() == 3 ? std::string(parts[2]) : std::string();
  return std::nullopt;
}

}  // namespace

// ---- the parser -----------------------------------------------------------------------------

template <typename Message>
RtspMessageParser<Message>::RtspMessageParser(RtspParserLimits limits) : framer_(limits) {}

template <typename Message>
RtspParseEvent RtspMessageParser<Message>::feed(std::span<const std::uint8_t> bytes) {
  return feed(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

template <typename Message>
RtspParseEvent RtspMessageParser<Message>::feed(std::string_view text) {
  if (failed_) {
    return RtspParseEvent::kError;
  }
  if (!framer_.append(text, error_)) {
    failed_ = true;
    return RtspParseEvent::kError;
  }
  return next();
}

template <typename Message>
RtspParseEvent RtspMessageParser<Message>::next() {
  if (failed_) {
    return RtspParseEvent::kError;
  }
  const auto ev = framer_.next(raw_, frame_, error_);
  if (ev == RtspParseEvent::kError) {
    failed_ = error_.fatal;
    return ev;
  }
  if (ev != RtspParseEvent::kMessage) {
    return ev;
  }
  return finish();
}

// Turns a framed message into a request or response. The checks run in one order for both
// directions -- start line, header lines, CSeq -- so that a message with several faults is
// reported the same way whichever side parses it.
template <typename Message>
RtspParseEvent RtspMessageParser<Message>::finish() {
  const auto fail = [&](int status, std::string message, std::optional<std::uint32_t> cseq) {
    error_ = {status, std::move(message), cseq, false};
    return RtspParseEvent::kError;
  };
  const auto cseq = find_cseq(raw_.headers);
  Message message;
  if (auto bad = read_start_line(raw_.start_line, message)) {
    return fail(bad->status, std::move(bad->message), cseq.value);
  }
  if (raw_.header_error) {
    return fail(400, *raw_.header_error, cseq.value);
  }
  if (!cseq.error.empty()) {
    return fail(400, cseq.error, std::nullopt);
  }
  if constexpr (std::is_same_v<Message, RtspRequest>) {
    // Every request carries a CSeq (§12.17); a response without one just matches no request.
    if (!cseq.present) {
      return fail(400, "missing CSeq header", std::nullopt);
    }
    message.cseq = *cseq.value;
  }
  for (auto& [name, value] : raw_.headers) {
    message.headers.add(std::move(name), std::move(value));
  }
  message.body = std::move(raw_.body);
  message_ = std::move(message);
  return RtspParseEvent::kMessage;
}

template class RtspMessageParser<RtspRequest>;
template class RtspMessageParser<RtspResponse>;

// ---- one-shot helpers -----------------------------------------------------------------------

namespace {
template <typename Message>
core::Result<Message> parse_one(std::string_view text, RtspParserLimits limits) {
  RtspMessageParser<Message> parser(limits);
  const auto ev = parser.feed(text);
  if (ev == RtspParseEvent::kError) {
    return core::make_error(std::to_string(parser.error().status) + ": " + parser.error().message);
  }
  if (ev == RtspParseEvent::kNeedMore) {
    return core::make_error("incomplete message");
  }
  if (ev == RtspParseEvent::kInterleaved) {
    return core::make_error("interleaved binary frame, not a message");
  }
  if (parser.buffered() != 0) {
    return core::make_error("trailing bytes after the message");
  }
  return parser.take_message();
}
}  // namespace

core::Result<RtspRequest> parse_request(std::string_view text, RtspParserLimits limits) {
  return parse_one<RtspRequest>(text, limits);
}

core::Result<RtspResponse> parse_response(std::string_view text, RtspParserLimits limits) {
  return parse_one<RtspResponse>(text, limits);
}

}  // namespace predrop::rtsp

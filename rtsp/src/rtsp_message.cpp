// RTSP 1.0 message framing, parsing and serialisation (RFC 2326 §4, §6, §7, §10.12, §12.14).
#include "predrop/rtsp/rtsp_message.hpp"

#include <array>
#include <cstdio>
#include <type_traits>

#include "predrop/core/text_util.hpp"

namespace predrop::rtsp {

using core::text::iequals;
using core::text::trim;

namespace {

constexpr std::string_view kVersion = "RTSP/1.0";

struct MethodName {
  RtspMethod method;
  std::string_view name;
};
constexpr std::array<MethodName, 11> kMethods = {{
    {RtspMethod::kOptions, "OPTIONS"},
    {RtspMethod::kDescribe, "DESCRIBE"},
    {RtspMethod::kAnnounce, "ANNOUNCE"},
    {RtspMethod::kSetup, "SETUP"},
    {RtspMethod::kPlay, "PLAY"},
    {RtspMethod::kPause, "PAUSE"},
    {RtspMethod::kTeardown, "TEARDOWN"},
    {RtspMethod::kGetParameter, "GET_PARAMETER"},
    {RtspMethod::kSetParameter, "SET_PARAMETER"},
    {RtspMethod::kRedirect, "REDIRECT"},
    {RtspMethod::kRecord, "RECORD"},
}};

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

std::string sanitize(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    if (c == '\r' || c == '\n' || c == '\0') {
      c = ' ';
    }
  }
  return out;
}

void append_headers_and_body(std::string& out, const RtspHeaders& headers,
                             const std::string& body) {
  for (const auto& [name, value] : headers.fields()) {
    if (core::text::iequals(name, "Content-Length")) {
      continue;
    }
    out += sanitize(name);
    out += ": ";
    out += sanitize(value);
    out += "\r\n";
  }
  if (!body.empty()) {
    out += "Content-Length: ";
    out += std::to_string(body.size());
    out += "\r\n";
  }
  out += "\r\n";
  out += body;
}

}  // namespace

RtspMethod method_from_string(std::string_view name) {
  for (const auto& m : kMethods) {
    if (m.name == name) {
      return m.method;
    }
  }
  return RtspMethod::kUnknown;
}

std::string_view to_string(RtspMethod method) {
  for (const auto& m : kMethods) {
    if (m.method == method) {
      return m.name;
    }
  }
  return {};
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 250:
      return "Low on Storage Space";
    case 300:
      return "Multiple Choices";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Moved Temporarily";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 305:
      return "Use Proxy";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 402:
      return "Payment Required";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 407:
      return "Proxy Authentication Required";
    case 408:
      return "Request Time-out";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Request Entity Too Large";
    case 414:
      return "Request-URI Too Large";
    case 415:
      return "Unsupported Media Type";
    // Not in RFC 2326; RFC 6585 defines it for HTTP and it names the problem exactly.
    case 431:
      return "Request Header Fields Too Large";
    case 451:
      return "Parameter Not Understood";
    case 452:
      return "Conference Not Found";
    case 453:
      return "Not Enough Bandwidth";
    case 454:
      return "Session Not Found";
    case 455:
      return "Method Not Valid in This State";
    case 456:
      return "Header Field Not Valid for Resource";
    case 457:
      return "Invalid Range";
    case 458:
      return "Parameter Is Read-Only";
    case 459:
      return "Aggregate operation not allowed";
    case 460:
      return "Only aggregate operation allowed";
    case 461:
      return "Unsupported transport";
    case 462:
      return "Destination unreachable";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Time-out";
    case 505:
      return "RTSP Version not supported";
    case 551:
      return "Option not supported";
    default:
      return "Unknown";
  }
}

// ---- RtspHeaders ----------------------------------------------------------------------------

void RtspHeaders::add(std::string name, std::string value) {
  fields_.emplace_back(std::move(name), std::move(value));
}

void RtspHeaders::set(std::string_view name, std::string value) {
  for (auto it = fields_.begin(); it != fields_.end(); ++it) {
    if (core::text::iequals(it->first, name)) {
      it->second = std::move(value);
      // Drop later duplicates so that exactly one field remains.
      for (auto jt = it + 1; jt != fields_.end();) {
        jt = core::text::iequals(jt->first, name) ? fields_.erase(jt) : jt + 1;
      }
      return;
    }
  }
  fields_.emplace_back(std::string(name), std::move(value));
}

void RtspHeaders::remove(std::string_view name) {
  std::erase_if(fields_, [&](const auto& f) { return core::text::iequals(f.first, name); });
}

std::optional<std::string_view> RtspHeaders::get(std::string_view name) const {
  for (const auto& [n, v] : fields_) {
    if (core::text::iequals(n, name)) {
      return std::string_view(v);
    }
  }
  return std::nullopt;
}

std::vector<std::string_view> RtspHeaders::get_all(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const auto& [n, v] : fields_) {
    if (core::text::iequals(n, name)) {
      out.emplace_back(v);
    }
  }
  return out;
}

// ---- building -------------------------------------------------------------------------------

std::optional<std::uint32_t> RtspResponse::cseq() const {
  const auto v = headers.get("CSeq");
  if (!v) {
    return std::nullopt;
  }
  return core::text::parse_uint<std::uint32_t>(core::text::trim(*v));
}

void RtspResponse::set_body(std::string_view content_type, std::string body_text) {
  headers.set("Content-Type", std::string(content_type));
  body = std::move(body_text);
}

void RtspResponse::set_session(std::string_view id, std::optional<std::uint32_t> timeout_s) {
  std::string v(id);
  if (timeout_s) {
    v += ";timeout=" + std::to_string(*timeout_s);
  }
  headers.set("Session", std::move(v));
}

void RtspResponse::set_date(std::chrono::system_clock::time_point now) {
  using namespace std::chrono;
  static constexpr std::array<std::string_view, 7> kDays = {"Sun", "Mon", "Tue", "Wed",
                                                            "Thu", "Fri", "Sat"};
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const auto day = floor<days>(now);
  const year_month_day ymd{day};
  const hh_mm_ss hms{floor<seconds>(now - day)};
  const weekday wd{day};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s, %02u %s %04d %02d:%02d:%02d GMT",
                kDays[wd.c_encoding()].data(), static_cast<unsigned>(ymd.day()),
                kMonths[static_cast<unsigned>(ymd.month()) - 1].data(),
                static_cast<int>(ymd.year()), static_cast<int>(hms.hours().count()),
                static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()));
  headers.set("Date", buf);
}

RtspResponse make_response(int status, std::optional<std::uint32_t> cseq) {
  RtspResponse r;
  r.status = status;
  r.reason = std::string(reason_phrase(status));
  if (cseq) {
    r.headers.add("CSeq", std::to_string(*cseq));
  }
  return r;
}

RtspRequest make_request(RtspMethod method, std::string url, std::uint32_t cseq) {
  RtspRequest r;
  r.method = method;
  r.method_name = std::string(to_string(method));
  r.url = std::move(url);
  r.cseq = cseq;
  r.headers.add("CSeq", std::to_string(cseq));
  return r;
}

std::string serialize(const RtspResponse& response) {
  std::string out;
  out.reserve(128 + response.body.size());
  out += kVersion;
  out += ' ';
  out += std::to_string(response.status);
  out += ' ';
  out += sanitize(response.reason.empty() ? reason_phrase(response.status) : response.reason);
  out += "\r\n";
  append_headers_and_body(out, response.headers, response.body);
  return out;
}

std::string serialize(const RtspRequest& request) {
  std::string out;
  out.reserve(128 + request.body.size());
  const std::string_view name =
      request.method_name.empty() ? to_string(request.method) : request.method_name;
  out += sanitize(name);
  out += ' ';
  // A space inside the URL would split the request line; RFC 3986 spells it %20.
  for (char c : sanitize(request.url)) {
    if (c == ' ') {
      out += "%20";
    } else {
      out += c;
    }
  }
  out += ' ';
  out += kVersion;
  out += "\r\n";
  RtspHeaders headers = request.headers;
  if (!headers.contains("CSeq")) {
    headers.add("CSeq", std::to_string(request.cseq));
  }
  append_headers_and_body(out, headers, request.body);
  return out;
}

// ---- framing --------------------------------------------------------------------------------

namespace detail {

bool RtspFramer::append(std::string_view bytes, RtspParseError& error) {
  // Drop consumed bytes first; the views of the previous event are no longer used.
  if (pos_ == buffer_.size()) {
    buffer_.clear();
    scan_ = 0;
    pos_ = 0;
    block_end_ = 0;
  } else if (pos_ > 4096 && pos_ > buffer_.size() / 2) {
    buffer_.erase(0, pos_);
    scan_ -= pos_;
    if (block_end_ > pos_) {
      block_end_ -= pos_;
    }
    pos_ = 0;
  }
  if (buffered() + bytes.size() > limits_.max_buffered_bytes) {
    error = {413,
             "more than " + std::to_string(limits_.max_buffered_bytes) +
                 " bytes of unparsed input (413 Request Entity Too Large)",
             std::nullopt, true};
    return false;
  }
  buffer_.append(bytes);
  return true;
}

bool RtspFramer::resync() {
  // The next frame or request starts at a "$" or at an upper-case letter that begins a line
  // (every RTSP method is upper case): skip to the first such byte. Payload bytes may look like
  // either; a wrong guess is skipped the same way (400 for a bogus line, another bad length).
  while (pos_ < buffer_.size()) {
    const char ch = buffer_[pos_];
    if (ch == '$' || (resync_line_start_ && ch >= 'A' && ch <= 'Z')) {
      resyncing_ = false;
      resync_line_start_ = false;
      scan_ = pos_;
      return true;
    }
    resync_line_start_ = ch == '\n';
    ++pos_;
    ++dropped_.skipped_bytes;
  }
  scan_ = pos_;
  return false;
}

RtspParseEvent RtspFramer::next(Raw& raw, InterleavedFrame& frame, RtspParseError& error) {
  // A loop, not recursion: a run of bad frames must not grow the stack.
  for (;;) {
    if (auto ev = next_once(raw, frame, error)) {
      return *ev;
    }
  }
}

std::optional<RtspParseEvent> RtspFramer::next_once(Raw& raw, InterleavedFrame& frame,
                                                    RtspParseError& error) {
  if (resyncing_ && !resync()) {
    return RtspParseEvent::kNeedMore;
  }
  // Empty lines between messages are tolerated (RFC 2616 §4.1, which RTSP inherits).
  if (scan_ <= pos_) {
    while (pos_ < buffer_.size() && (buffer_[pos_] == '\r' || buffer_[pos_] == '\n')) {
      ++pos_;
    }
    scan_ = pos_;
    lines_ = 0;
  }
  if (pos_ >= buffer_.size()) {
    return RtspParseEvent::kNeedMore;
  }

  if (buffer_[pos_] == '$') {
    // RFC 2326 §10.12: '$', one-byte channel, two-byte big-endian length, then the data.
    if (buffered() < 4) {
      return RtspParseEvent::kNeedMore;
    }
    const auto b = [&](std::size_t i) { return static_cast<std::uint8_t>(buffer_[pos_ + i]); };
    const std::size_t len = (static_cast<std::size_t>(b(2)) << 8) | b(3);
    if (len > limits_.max_interleaved_bytes) {
      // Not waited for: its payload would swallow whatever follows (see RtspParserLimits).
      ++dropped_.bad_length;
      pos_ += 4;
      dropped_.skipped_bytes += 4;
      resyncing_ = true;
      resync_line_start_ = true;  // a request may follow the header directly
      return std::nullopt;
    }
    if (buffered() < 4 + len) {
      return RtspParseEvent::kNeedMore;
    }
    frame.channel = b(1);
    const auto* data = reinterpret_cast<const std::uint8_t*>(buffer_.data() + pos_ + 4);
    frame.payload.assign(data, data + len);
    pos_ += 4 + len;
    scan_ = pos_;
    return RtspParseEvent::kInterleaved;
  }

  // Find the blank line that ends the header block, resuming where the last call stopped
  // (or reusing it when only the body was missing last time).
  std::size_t end = block_end_ > pos_ ? block_end_ : std::string::npos;  // one past the blank line
  while (end == std::string::npos) {
    const auto nl = buffer_.find('\n', scan_);
    if (nl == std::string::npos) {
      break;
    }
    const bool blank = nl == scan_ || (nl == scan_ + 1 && buffer_[scan_] == '\r');
    scan_ = nl + 1;
    if (blank) {
      end = scan_;
      break;
    }
    // The byte limit is checked before the line count so that the error does not depend on
    // how the input was split into reads.
    if (scan_ - pos_ > limits_.max_header_bytes) {
      break;
    }
    if (++lines_ > limits_.max_headers + 1) {
      error = {431,
               "more than " + std::to_string(limits_.max_headers) +
                   " header fields (431 Request Header Fields Too Large)",
               std::nullopt, true};
      return RtspParseEvent::kError;
    }
  }
  const std::size_t header_len = (end == std::string::npos ? scan_ : end) - pos_;
  if (header_len > limits_.max_header_bytes ||
      (end == std::string::npos && buffered() > limits_.max_header_bytes)) {
    error = {431,
             "header block exceeds " + std::to_string(limits_.max_header_bytes) +
                 " bytes (431 Request Header Fields Too Large)",
             std::nullopt, true};
    return RtspParseEvent::kError;
  }
  if (end == std::string::npos) {
    return RtspParseEvent::kNeedMore;
  }

  // Split the block into lines (LF or CRLF), unfolding continuation lines.
  const std::string_view block(buffer_.data() + pos_, end - pos_);
  raw.headers.clear();
  raw.header_error.reset();
  raw.start_line = {};
  bool first = true;
  std::size_t at = 0;
  while (at < block.size()) {
    const auto nl = block.find('\n', at);
    if (nl == std::string_view::npos) {
      break;  // cannot happen: the block ends with a blank line
    }
    std::string_view line = block.substr(at, nl - at);
    at = nl + 1;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      break;
    }
    if (first) {
      raw.start_line = line;
      first = false;
      continue;
    }
    if (raw.header_error) {
      continue;
    }
    if (line.find('\r') != std::string_view::npos || line.find('\0') != std::string_view::npos) {
      // A bare CR inside a line is how header smuggling starts; refuse the message.
      raw.header_error = "control character in header line " + core::text::quote_for_error(line);
      continue;
    }
    if (core::text::is_space(line.front())) {
      if (raw.headers.empty()) {
        raw.header_error = "continuation line before any header";
        continue;
      }
      // A folded line is part of the header's value and gets the value's control-character
      // check (fuzz_rtsp found a \x16 that passed here and failed the re-parse of its own
      // serialisation).
      const auto folded = core::text::trim(line);
      if (core::text::has_ctl(folded)) {
        raw.header_error = "control character in header " + raw.headers.back().first;
        continue;
      }
      auto& value = raw.headers.back().second;
      if (!value.empty()) {
        value += ' ';
      }
      value += folded;
      continue;
    }
    const auto colon = line.find(':');
    const auto name = colon == std::string_view::npos ? line : line.substr(0, colon);
    if (colon == std::string_view::npos || !core::text::is_token(name)) {
      raw.header_error = "malformed header line " + core::text::quote_for_error(line);
      continue;
    }
    const auto value = core::text::trim(line.substr(colon + 1));
    if (core::text::has_ctl(value)) {
      raw.header_error = "control character in header " + std::string(name);
      continue;
    }
    raw.headers.emplace_back(std::string(name), std::string(value));
  }

  // Body length: every Content-Length must agree and be a plain number within the limit.
  std::optional<std::size_t> content_length;
  for (const auto& [name, value] : raw.headers) {
    if (!core::text::iequals(name, "Content-Length")) {
      continue;
    }
    const auto n = core::text::parse_uint<std::uint64_t>(value);
    if (!n || (content_length && *content_length != *n)) {
      error = {400, "invalid Content-Length " + core::text::quote_for_error(value), std::nullopt,
               true};
      return RtspParseEvent::kError;
    }
    if (*n > limits_.max_body_bytes) {
      error = {413,
               "body of " + std::to_string(*n) + " bytes exceeds " +
                   std::to_string(limits_.max_body_bytes) + " (413 Request Entity Too Large)",
               std::nullopt, true};
      return RtspParseEvent::kError;
    }
    content_length = static_cast<std::size_t>(*n);
  }
  const std::size_t body_len = content_length.value_or(0);
  if (buffer_.size() - end < body_len) {
    block_end_ = end;
    return RtspParseEvent::kNeedMore;
  }

  raw.body.assign(buffer_, end, body_len);
  pos_ = end + body_len;
  block_end_ = 0;
  // The start line view stays valid: the buffer is only compacted in append().
  return RtspParseEvent::kMessage;
}

}  // namespace detail

// ---- start lines ----------------------------------------------------------------------------

namespace {

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
  if (parts[2] != kVersion) {
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
  if (parts.size() >= 2 && parts[0] != kVersion && parts.back().ends_with(kVersion)) {
    return StartLineError{
        501, "request " + core::text::quote_for_error(parts[0]) + " from the server skipped"};
  }
  if (parts.size() < 2) {
    return StartLineError{400, "malformed status line " + core::text::quote_for_error(line)};
  }
  if (parts[0] != kVersion) {
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

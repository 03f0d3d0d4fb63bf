// RTSP 1.0 messages (RFC 2326 §6, §7, §10, §12): method names, status phrases, header fields, and
// building and serialising requests and responses. Framing: rtsp_framer.cpp; parsing:
// rtsp_message_parser.cpp.
#include "predrop/rtsp/rtsp_message.hpp"

#include <array>
#include <cstdio>
#include <string>

#include "predrop/core/text_util.hpp"

namespace predrop::rtsp {

using core::text::iequals;
using core::text::trim;

namespace {

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
  out += kRtspVersion;
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
  out += kRtspVersion;
  out += "\r\n";
  RtspHeaders headers = request.headers;
  if (!headers.contains("CSeq")) {
    headers.add("CSeq", std::to_string(request.cseq));
  }
  append_headers_and_body(out, headers, request.body);
  return out;
}

}  // namespace predrop::rtsp

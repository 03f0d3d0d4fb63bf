// Session, RTP-Info and Range header values and rtsp:// URLs (RFC 2326 §3.2, §3.6, §12.29,
// §12.33, §12.37).
#include "predrop/rtsp/rtsp_headers.hpp"

#include <cstdio>

#include "predrop/core/text_util.hpp"

namespace predrop::rtsp {

using core::make_error;
using core::text::iequals;
using core::text::quote_for_error;
using core::text::trim;

namespace {

constexpr std::size_t kMaxSessionId = 64;
constexpr std::size_t kMaxRtpInfoEntries = 64;

bool is_safe_id_char(char c) {
  return core::text::is_alpha(c) || core::text::is_digit(c) || c == '$' || c == '-' || c == '_' ||
         c == '.' || c == '+';
}

// "12.345" or "now" (0); NPT times are non-negative.
std::optional<double> parse_npt_time(std::string_view s) {
  if (s == "now") {
    return 0.0;
  }
  // NPT also allows "h:mm:ss.fff"; accept it by summing the parts.
  double total = 0.0;
  int parts = 0;
  bool ok = true;
  core::text::for_each_piece(s, ':', [&](std::string_view piece) {
    ++parts;
    const auto v = core::text::parse_double(piece);
    if (!v || *v < 0 || piece.front() == '-') {
      ok = false;
    }
    total = total * 60.0 + v.value_or(0.0);
  });
  if (!ok || parts > 3) {
    return std::nullopt;
  }
  return total;
}

}  // namespace

bool is_valid_session_id(std::string_view id) {
  return !id.empty() && id.size() <= kMaxSessionId &&
         std::all_of(id.begin(), id.end(), is_safe_id_char);
}

core::Result<SessionHeader> parse_session(std::string_view value) {
  auto [id, params] = core::text::split_once(core::text::trim(value), ';');
  id = core::text::trim(id);
  if (!is_valid_session_id(id)) {
    return make_error("invalid session id " + core::text::quote_for_error(id));
  }
  SessionHeader out;
  out.id = std::string(id);
  std::string error;
  if (!params.empty()) {
    core::text::for_each_piece(params, ';', [&](std::string_view p) {
      const auto [name, val] = core::text::split_once(core::text::trim(p), '=');
      if (!core::text::iequals(core::text::trim(name), "timeout") || !error.empty()) {
        return;
      }
      const auto t = core::text::parse_uint<std::uint32_t>(core::text::trim(val));
      if (!t) {
        error = "invalid session timeout " + core::text::quote_for_error(val);
      } else {
        out.timeout_s = *t;
      }
    });
  }
  if (!error.empty()) {
    return make_error(error);
  }
  return out;
}

std::string format_session(const SessionHeader& session) {
  std::string out = session.id;
  if (session.timeout_s) {
    out += ";timeout=" + std::to_string(*session.timeout_s);
  }
  return out;
}

std::string format_rtp_info(const std::vector<RtpInfoEntry>& entries) {
  std::string out;
  for (const auto& e : entries) {
    if (!out.empty()) {
      out += ',';
    }
    out += "url=" + e.url;
    if (e.seq) {
      out += ";seq=" + std::to_string(*e.seq);
    }
    if (e.rtptime) {
      out += ";rtptime=" + std::to_string(*e.rtptime);
    }
  }
  return out;
}

core::Result<std::vector<RtpInfoEntry>> parse_rtp_info(std::string_view value) {
  std::vector<RtpInfoEntry> out;
  std::string error;
  core::text::for_each_piece(value, ',', [&](std::string_view item) {
    if (!error.empty()) {
      return;
    }
    item = core::text::trim(item);
    if (item.empty()) {
      return;
    }
    if (out.size() == kMaxRtpInfoEntries) {
      error = "more than 64 RTP-Info entries";
      return;
    }
    RtpInfoEntry e;
    bool has_url = false;
    core::text::for_each_piece(item, ';', [&](std::string_view p) {
      if (!error.empty()) {
        return;
      }
      const auto [name, val] = core::text::split_once(core::text::trim(p), '=');
      if (core::text::iequals(name, "url")) {
        e.url = std::string(core::text::trim(val));
        has_url = !e.url.empty();
      } else if (core::text::iequals(name, "seq")) {
        const auto v = core::text::parse_uint<std::uint16_t>(core::text::trim(val));
        if (!v) {
          error = "invalid RTP-Info seq " + core::text::quote_for_error(val);
        }
        e.seq = v;
      } else if (core::text::iequals(name, "rtptime")) {
        const auto v = core::text::parse_uint<std::uint32_t>(core::text::trim(val));
        if (!v) {
          error = "invalid RTP-Info rtptime " + core::text::quote_for_error(val);
        }
        e.rtptime = v;
      }
    });
    if (error.empty() && !has_url) {
      error = "RTP-Info entry without url";
    }
    out.push_back(std::move(e));
  });
  if (!error.empty()) {
    return make_error(error);
  }
  if (out.empty()) {
    return make_error("empty RTP-Info");
  }
  return out;
}

core::Result<NptRange> parse_npt_range(std::string_view value) {
  value = core::text::trim(value);
  // A ";time=" suffix (§12.29) says when to start; we start immediately and ignore it.
  value = core::text::trim(core::text::split_once(value, ';').first);
  if (!core::text::istarts_with(value, "npt=")) {
    return make_error("unsupported range " + core::text::quote_for_error(value) + " (only npt)");
  }
  value.remove_prefix(4);
  const auto dash = value.find('-');
  if (dash == std::string_view::npos) {
    return make_error("range without '-'");
  }
  NptRange out;
  const auto start = core::text::trim(value.substr(0, dash));
  const auto end = core::text::trim(value.substr(dash + 1));
  if (start.empty()) {
    out.start_s = 0.0;  // "npt=-20" means from the start (§3.6 allows an open start).
  } else {
    const auto s = parse_npt_time(start);
    if (!s) {
      return make_error("invalid range start " + core::text::quote_for_error(start));
    }
    out.start_s = *s;
  }
  if (!end.empty()) {
    const auto e = parse_npt_time(end);
    if (!e || *e < out.start_s) {
      return make_error("invalid range end " + core::text::quote_for_error(end));
    }
    out.end_s = e;
  }
  return out;
}

std::string format_npt_range(const NptRange& range) {
  char buf[96];
  if (range.end_s) {
    std::snprintf(buf, sizeof buf, "npt=%.3f-%.3f", range.start_s, *range.end_s);
  } else {
    std::snprintf(buf, sizeof buf, "npt=%.3f-", range.start_s);
  }
  return buf;
}

core::Result<RtspUrl> parse_rtsp_url(std::string_view url) {
  if (url.size() > 4096) {
    return make_error("URL longer than 4096 bytes");
  }
  if (core::text::has_ctl(url) || url.find(' ') != std::string_view::npos) {
    return make_error("control character or space in URL");
  }
  constexpr std::string_view kScheme = "rtsp://";
  if (!core::text::istarts_with(url, kScheme)) {
    return make_error("URL " + core::text::quote_for_error(url) + " does not start with rtsp://");
  }
  std::string_view rest = url.substr(kScheme.size());
  const auto auth_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, auth_end);
  std::string_view path_q = auth_end == std::string_view::npos ? "" : rest.substr(auth_end);
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);  // user:password@ is never used for routing
  }
  RtspUrl out;
  std::string_view host;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) {
      return make_error("unterminated IPv6 literal in URL");
    }
    host = authority.substr(1, close - 1);
    const auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return make_error("garbage after IPv6 literal in URL");
      }
      port_text = after.substr(1);
    }
  } else {
    const auto colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
    }
  }
  if (host.empty()) {
    return make_error("URL without host");
  }
  out.host = std::string(host);
  if (!port_text.empty()) {
    const auto port = core::text::parse_uint<std::uint16_t>(port_text);
    if (!port || *port == 0) {
      return make_error("invalid port " + core::text::quote_for_error(port_text));
    }
    out.port = *port;
  }
  const auto path = path_q.substr(0, path_q.find_first_of("?#"));
  out.path = path.empty() ? "/" : std::string(path);

  std::string_view name = path;
  while (!name.empty() && name.front() == '/') {
    name.remove_prefix(1);
  }
  while (!name.empty() && name.back() == '/') {
    name.remove_suffix(1);
  }
  const auto slash = name.rfind('/');
  const auto last = slash == std::string_view::npos ? name : name.substr(slash + 1);
  for (const std::string_view prefix : {"trackID=", "streamid="}) {
    if (!core::text::istarts_with(last, prefix)) {
      continue;
    }
    const auto n = core::text::parse_uint<std::uint32_t>(last.substr(prefix.size()));
    if (!n) {
      return make_error("invalid track in URL " + core::text::quote_for_error(last));
    }
    out.track = *n;
    name = slash == std::string_view::npos ? std::string_view{} : name.substr(0, slash);
    while (!name.empty() && name.back() == '/') {
      name.remove_suffix(1);
    }
    break;
  }
  out.stream = std::string(name);
  return out;
}

std::string resolve_control_url(std::string_view base, std::string_view control) {
  if (control.empty() || control == "*") {
    return std::string(base);
  }
  if (core::text::istarts_with(control, "rtsp://")) {
    return std::string(control);
  }
  std::string out(base);
  if (const auto q = out.find_first_of("?#"); q != std::string::npos) {
    out.resize(q);
  }
  if (out.empty() || out.back() != '/') {
    out += '/';
  }
  while (!control.empty() && control.front() == '/') {
    control.remove_prefix(1);
  }
  out += control;
  return out;
}

}  // namespace predrop::rtsp

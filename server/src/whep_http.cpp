// WHEP routes and the player page; see predrop/server/whep_http.hpp.
#include "predrop/server/whep_http.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "whep_player.hpp"

namespace predrop::server {
namespace {

HttpReply text(int status, std::string body) {
  HttpReply r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(body);
  if (!r.body.empty()) r.body += '\n';
  return r;
}

// The page's only script is its own file; it talks to this origin only.
constexpr std::string_view kPageCsp =
    "Content-Security-Policy: default-src 'none'; script-src 'self'; connect-src 'self'; "
    "style-src 'unsafe-inline'; media-src 'self' blob:\r\n";

HttpReply offer(const HttpRequest& q, std::string_view stream, const WhepBackend& b) {
  if (!b.offer) return text(503, "WHEP is not available");
  // The host candidate: the address the browser reached this listener at, unless the RTP
  // socket is bound to one address of its own.
  const bool local_known = q.local.port() != 0;
  const WhepOutcome o = b.offer(stream, q.body, q.peer, local_known ? q.local.ip_string() : "");
  if (o.status != 201) return text(o.status, o.error);
  HttpReply r;
  r.status = 201;
  r.content_type = "application/sdp";
  r.body = o.answer;
  r.headers = "Location: /" + std::string(stream) + "/whep/" + o.session + "\r\n";
  return r;
}

// "key=value" pairs separated by '&' (a form body): calls `f(key, value)` for each.
template <class F>
void for_each_pair(std::string_view body, F f) {
  while (!body.empty()) {
    const std::size_t amp = body.find('&');
    const std::string_view pair = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view{} : body.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    if (eq != std::string_view::npos) f(pair.substr(0, eq), pair.substr(eq + 1));
  }
}

}  // namespace

std::optional<PageQuality> parse_page_quality(std::string_view body) {
  if (body.size() > 256) return std::nullopt;
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) {
    body.remove_suffix(1);
  }
  PageQuality q;
  bool have_p = false;
  bool ok = true;
  int rtp_keys = 0;
  for_each_pair(body, [&](std::string_view key, std::string_view value) {
    const char* end = value.data() + value.size();
    if (key == "p") {
      const auto r = std::from_chars(value.data(), end, q.p);
      have_p = r.ec == std::errc{} && r.ptr == end && std::isfinite(q.p) && q.p >= 0 && q.p <= 1;
      ok = ok && have_p;
      return;
    }
    if (key == "rtp_from" || key == "rtp_to") {
      // RTP timestamps: any 32-bit value, each key once.
      std::uint32_t& field = key == "rtp_from" ? q.rtp_from : q.rtp_to;
      const auto r = std::from_chars(value.data(), end, field);
      ok = ok && r.ec == std::errc{} && r.ptr == end && !value.empty();
      rtp_keys |= key == "rtp_from" ? 1 : 2;
      return;
    }
    std::uint32_t* field = key == "decoded"     ? &q.frames_decoded
                           : key == "dropped"   ? &q.frames_dropped
                           : key == "freezes"   ? &q.freezes
                           : key == "freeze_ms" ? &q.freeze_ms
                                                : nullptr;
    if (field == nullptr) return;  // unknown keys: room for more
    const auto r = std::from_chars(value.data(), end, *field);
    ok = ok && r.ec == std::errc{} && r.ptr == end && *field < 1'000'000;
  });
  // The RTP span names the media played: both ends or neither.
  if (!ok || !have_p || rtp_keys == 1 || rtp_keys == 2) return std::nullopt;
  q.has_rtp = rtp_keys == 3;
  return q;
}

HttpReply handle_whep(const HttpRequest& q, const WhepBackend& b) {
  const std::string_view path = q.target.substr(0, q.target.find('?'));
  const std::size_t slash = path.find('/', 1);
  const std::string_view stream = path.substr(1, slash - 1);
  const std::string_view rest = path.substr(slash + 1);
  const bool known = std::find(b.streams.begin(), b.streams.end(), stream) != b.streams.end();
  if (rest.empty() || rest == "player.js") {
    if (q.method != "GET" && q.method != "HEAD") {
      HttpReply r = text(405, {});
      r.allow = "GET, HEAD";
      return r;
    }
    if (!known) return text(404, "no such stream");
    HttpReply r;
    r.content_type = rest.empty() ? "text/html; charset=utf-8" : "text/javascript; charset=utf-8";
    r.body = std::string(rest.empty() ? detail::kWhepPlayerHtml : detail::kWhepPlayerJs);
    r.headers = std::string(kPageCsp);
    return r;
  }
  if (rest == "whep") {
    if (q.method != "POST") {
      HttpReply r = text(405, {});
      r.allow = "POST";
      return r;
    }
    return offer(q, stream, b);
  }
  // /<stream>/whep/<session>/quality (a session id before it: "whep/quality" is a DELETE path)
  constexpr std::string_view kQuality = "/quality";
  if (rest.size() > 5 + kQuality.size() && rest.ends_with(kQuality)) {
    if (q.method != "POST") {
      HttpReply r = text(405, {});
      r.allow = "POST";
      return r;
    }
    const auto report = parse_page_quality(q.body);
    if (!report) {
      return text(
          400, "want p=<0..1>[&decoded=N&dropped=N&freezes=N&freeze_ms=N][&rtp_from=T&rtp_to=T]");
    }
    const std::string_view session = rest.substr(5, rest.size() - 5 - kQuality.size());
    if (!b.quality || !b.quality(session, *report)) return text(404, "no such session");
    return text(204, {});
  }
  // /<stream>/whep/<session>
  if (q.method != "DELETE") {
    HttpReply r = text(405, {});
    r.allow = "DELETE";
    return r;
  }
  const std::string_view session = rest.substr(5);
  if (!b.end || !b.end(session)) return text(404, "no such session");
  return text(200, {});
}

}  // namespace predrop::server

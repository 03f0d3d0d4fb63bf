// WHEP routes and the player page; see predrop/server/whep_http.hpp.
#include "predrop/server/whep_http.hpp"

#include <algorithm>

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

}  // namespace

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

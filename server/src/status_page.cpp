#include "predrop/server/status_page.hpp"

#include <string_view>

#include "status_page_html.hpp"

namespace predrop::server {

std::optional<HttpReply> serve_status_page(const HttpRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") return std::nullopt;
  std::string_view path = request.target;
  if (const std::size_t query = path.find('?'); query != std::string_view::npos) {
    path = path.substr(0, query);
  }
  while (path.size() > 1 && path.back() == '/') {
    path.remove_suffix(1);
  }
  if (path != "/" && path != "/status") return std::nullopt;
  HttpReply r;
  r.content_type = "text/html; charset=utf-8";
  r.body = std::string(kStatusPageHtml);
  // The page's script and style are inline and it talks to its own origin only: nothing else
  // may load, frame it or be sniffed into another type.
  r.headers =
      "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; "
      "style-src 'unsafe-inline'; connect-src 'self'; img-src data:; frame-ancestors 'none'\r\n"
      "X-Content-Type-Options: nosniff\r\n";
  return r;
}

}  // namespace predrop::server

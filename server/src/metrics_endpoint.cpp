#include "predrop/server/metrics_endpoint.hpp"

#include <cctype>
#include <stdexcept>
#include <utility>

namespace predrop::server {

namespace {

bool is_token_char(char ch) {
  // RFC 9110 §5.6.2 tchar.
  if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) {
    return true;
  }
  return std::string_view("!#$%&'*+-.^_`|~").find(ch) != std::string_view::npos;
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 406:
      return "Not Acceptable";
    case 413:
      return "Content Too Large";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 422:
      return "Unprocessable Content";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Status";
  }
}

std::string status_reply(int status, std::string_view reason) {
  return "HTTP/1.0 " + std::to_string(status) + " " + std::string(reason) +
         "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
}

// The status line, headers and (unless HEAD) body of a handler's reply; one request per
// connection, so always Connection: close.
std::string reply_text(const HttpReply& r, bool head_only) {
  std::string out = "HTTP/1.0 " + std::to_string(r.status) + " " +
                    std::string(reason_phrase(r.status)) + "\r\nContent-Type: " + r.content_type +
                    "\r\nContent-Length: " + std::to_string(r.body.size()) +
                    "\r\nCache-Control: no-store\r\n";
  if (!r.allow.empty()) out += "Allow: " + r.allow + "\r\n";
  if (r.status == 401) out += "WWW-Authenticate: Bearer\r\n";
  out += r.headers;
  out += "Connection: close\r\n\r\n";
  if (!head_only) out += r.body;
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto x = static_cast<unsigned char>(a[i]);
    const auto y = static_cast<unsigned char>(b[i]);
    if (std::tolower(x) != std::tolower(y)) return false;
  }
  return true;
}

// The value of header `name` in the head's field lines (after the request line), trimmed.
std::string_view header_value(std::string_view head, std::string_view name) {
  std::size_t pos = head.find('\n');
  while (pos != std::string_view::npos && pos + 1 < head.size()) {
    const std::size_t start = pos + 1;
    const std::size_t end = head.find('\n', start);
    std::string_view line = head.substr(start, end == std::string_view::npos ? end : end - start);
    if (line.ends_with('\r')) line.remove_suffix(1);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && iequals(line.substr(0, colon), name)) {
      std::string_view v = line.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) {
        v.remove_prefix(1);
      }
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) {
        v.remove_suffix(1);
      }
      return v;
    }
    pos = end;
  }
  return {};
}

}  // namespace

bool is_control_target(std::string_view target) {
  return target == "/api" || target.starts_with("/api/") || target.starts_with("/api?");
}

bool is_whep_target(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  if (path.size() < 3 || path.front() != '/') return false;
  const std::size_t slash = path.find('/', 1);
  if (slash == std::string_view::npos || slash == 1 || path.substr(1, slash - 1) == "api") {
    return false;
  }
  const std::string_view rest = path.substr(slash + 1);
  if (rest.empty() || rest == "player.js" || rest == "whep") return true;
  if (!rest.starts_with("whep/") || rest.size() <= 5) return false;
  // whep/<session>, or whep/<session>/quality (the page's report, docs/webrtc.md)
  const std::size_t next = rest.find('/', 5);
  return next == std::string_view::npos || (next > 5 && rest.substr(next) == "/quality");
}

MetricsRequest parse_metrics_request(std::string_view head) {
  // Empty lines before the request line are skipped (RFC 9112 §2.2).
  while (head.starts_with("\r\n") || head.starts_with("\n")) {
    head.remove_prefix(head.front() == '\r' ? 2 : 1);
  }
  std::string_view line = head.substr(0, head.find('\n'));
  if (line.ends_with('\r')) line.remove_suffix(1);
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return {400, false};
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (method.empty() || target.empty()) return {400, false};
  for (char ch : method) {
    if (!is_token_char(ch)) return {400, false};
  }
  for (char ch : target) {
    const auto u = static_cast<unsigned char>(ch);
    if (u <= 0x20 || u == 0x7f) return {400, false};
  }
  if (!version.starts_with("HTTP/")) return {400, false};
  if (version != "HTTP/1.0" && version != "HTTP/1.1") return {505, false};
  MetricsRequest ok{200, method == "HEAD", method, target, header_value(head, "Authorization")};
  if (method == "GET" || method == "HEAD") return ok;
  if ((method == "POST" || method == "DELETE") &&
      (is_control_target(target) || is_whep_target(target))) {
    return ok;
  }
  return {405, false};
}

const net::Clock& MetricsEndpoint::default_clock() {
  static const net::MonotonicClock clock;
  return clock;
}

MetricsEndpoint::MetricsEndpoint(net::EventLoop& loop, const net::SocketAddress& listen,
                                 std::function<std::string()> render,
                                 MetricsEndpointOptions options, const net::Clock& clock)
    : clock_(clock), options_(options), render_(std::move(render)) {
  auto l = net::TcpListener::listen(loop, listen, [this](std::unique_ptr<net::TcpConnection> c) {
    guard_.run(CallbackKind::kMetrics, [&] { on_accept(std::move(c)); });
  });
  if (!l) {
    throw std::runtime_error("metrics listen on " + listen.to_string() + ": " + l.error().message);
  }
  listener_ = std::move(l.value());
  deadline_timer_ = std::make_unique<net::Timer>(
      loop, [this] { guard_.run(CallbackKind::kMetrics, [&] { run_housekeeping(); }); });
  deadline_timer_->start(250, 250);
  deadline_timer_->keep_loop_alive(false);
}

MetricsEndpoint::~MetricsEndpoint() = default;

void MetricsEndpoint::prune() {
  // Connections that finished their reply close themselves; TcpConnection allows destruction
  // from inside its own callbacks too.
  for (auto it = open_.begin(); it != open_.end();) {
    it = it->second.is_open() ? std::next(it) : open_.erase(it);
  }
}

std::uint64_t MetricsEndpoint::admit(Client client) {
  prune();
  if (open_.size() >= options_.max_connections) {
    ++stats_.refused;
    if (client.tcp) client.tcp->close();
    return 0;
  }
  ++stats_.accepted;
  const std::uint64_t id = ++ids_;
  client.deadline_us = clock_.now_us() + options_.request_deadline_us;
  open_.emplace(id, std::move(client));
  return id;
}

void MetricsEndpoint::on_accept(std::unique_ptr<net::TcpConnection> c) {
  Client client;
  client.tcp = std::move(c);
  const std::uint64_t id = admit(std::move(client));
  if (id == 0) return;
  auto on_data = [this, id](std::span<const std::uint8_t> data) { on_data_guarded(id, data); };
  auto done = [this, id](const core::Status&) { open_.erase(id); };
  if (!open_.at(id).tcp->start(on_data, done)) open_.erase(id);
}

void MetricsEndpoint::on_data_guarded(std::uint64_t id, std::span<const std::uint8_t> data) {
  if (guard_.run(CallbackKind::kMetrics, [&] { on_data(id, data); })) return;
  // Only this connection goes (TcpConnection may be destroyed inside its callback).
  open_.erase(id);
}

std::uint64_t MetricsEndpoint::attach_connection() {
  return admit(Client{});
}

void MetricsEndpoint::receive(std::uint64_t id, std::span<const std::uint8_t> bytes) {
  auto it = open_.find(id);
  if (it == open_.end() || it->second.tcp || !it->second.is_open()) return;
  on_data_guarded(id, bytes);
}

std::string MetricsEndpoint::take_output(std::uint64_t id) {
  auto it = open_.find(id);
  if (it == open_.end()) return {};
  return std::exchange(it->second.output, {});
}

bool MetricsEndpoint::connection_open(std::uint64_t id) const {
  auto it = open_.find(id);
  return it != open_.end() && it->second.is_open();
}

void MetricsEndpoint::answer(Client& c, std::string reply) {
  c.answered = true;
  if (c.tcp) {
    (void)c.tcp->write(std::move(reply));
    c.tcp->close_after_writes();
  } else {
    c.output += reply;
    c.attached_open = false;
  }
}

void MetricsEndpoint::on_data(std::uint64_t id, std::span<const std::uint8_t> data) {
  stats_.bytes_received += data.size();
  auto it = open_.find(id);
  if (it == open_.end() || it->second.answered) return;
  Client& c = it->second;
  // The head may come in several reads: answer once it is complete, or refuse it once it is
  // longer than the bound without being complete.
  c.head.append(reinterpret_cast<const char*>(data.data()), data.size());
  const std::string_view head(c.head);
  std::size_t end = head.find("\r\n\r\n");
  if (const std::size_t lf = head.find("\n\n"); lf < end) end = lf;
  if (end == std::string_view::npos || end > options_.max_request_bytes) {
    if (c.head.size() > options_.max_request_bytes) {
      ++stats_.oversized;
      answer(c, status_reply(431, "Request Header Fields Too Large"));
    }
    return;
  }
  const MetricsRequest request = parse_metrics_request(head.substr(0, end));
  // A WHEP offer's body follows the head: wait for all of it (within the same deadline).
  std::string_view request_body;
  if (request.status == 200 && request.method == "POST" && is_whep_target(request.target)) {
    const std::size_t start = end + (head.substr(end, 4) == "\r\n\r\n" ? 4 : 2);
    std::size_t length = 0;
    const std::string_view cl = header_value(head.substr(0, end), "Content-Length");
    for (char ch : cl) {
      if (ch < '0' || ch > '9' || length > options_.max_body_bytes) {
        length = options_.max_body_bytes + 1;
        break;
      }
      length = length * 10 + static_cast<std::size_t>(ch - '0');
    }
    if (length > options_.max_body_bytes) {
      ++stats_.oversized;
      answer(c, status_reply(413, "Content Too Large"));
      return;
    }
    if (head.size() < start + length) return;
    request_body = head.substr(start, length);
  }
  if (request.status != 200) {
    ++stats_.bad_requests;
    answer(c, status_reply(request.status, request.status == 405   ? "Method Not Allowed"
                                           : request.status == 505 ? "HTTP Version Not Supported"
                                                                   : "Bad Request"));
    return;
  }
  HttpRequest q{request.method, request.target, request.authorization, request_body, {}, {}};
  if (c.tcp) {
    q.peer = c.tcp->peer_address();
    q.local = c.tcp->local_address();
  }
  if (whep_ && is_whep_target(request.target)) {
    HttpReply r;
    if (!guard_.run(CallbackKind::kMetrics, [&] { r = whep_(q); })) {
      answer(c, status_reply(500, "Internal Server Error"));
      return;
    }
    ++stats_.answered;
    answer(c, reply_text(r, request.head_only));
    return;
  }
  if (control_ && is_control_target(request.target)) {
    ++stats_.api_requests;
    HttpReply r;
    if (!guard_.run(CallbackKind::kMetrics, [&] { r = control_(q); })) {
      // The backend threw (counted and logged by the guard): this client gets a 500.
      answer(c, status_reply(500, "Internal Server Error"));
      return;
    }
    answer(c, reply_text(r, request.head_only));
    return;
  }
  if (pages_ && (request.method == "GET" || request.method == "HEAD")) {
    std::optional<HttpReply> page;
    if (!guard_.run(CallbackKind::kMetrics, [&] { page = pages_(q); })) {
      answer(c, status_reply(500, "Internal Server Error"));
      return;
    }
    if (page) {
      ++stats_.answered;
      answer(c, reply_text(*page, request.head_only));
      return;
    }
  }
  if (request.method != "GET" && request.method != "HEAD") {
    ++stats_.bad_requests;
    answer(c, status_reply(405, "Method Not Allowed"));
    return;
  }
  std::string body;
  if (!guard_.run(CallbackKind::kMetrics, [&] { body = render_(); })) {
    // The renderer threw (counted and logged by the guard): this client gets a 500.
    answer(c, status_reply(500, "Internal Server Error"));
    return;
  }
  ++stats_.answered;
  std::string reply =
      "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  if (!request.head_only) reply += body;
  answer(c, std::move(reply));
}

void MetricsEndpoint::run_housekeeping() {
  const std::uint64_t now = clock_.now_us();
  for (auto& [id, c] : open_) {
    if (!c.answered && c.is_open() && now > c.deadline_us) {
      ++stats_.timed_out;
      if (c.tcp) {
        c.tcp->close();
      } else {
        c.attached_open = false;
      }
    }
  }
  prune();
}

}  // namespace predrop::server

#pragma once
// A Prometheus text-format endpoint (exposition format 0.0.4): an HTTP/1.x GET of any path on
// the listen address gets the current metrics (HEAD: the headers only). Deliberately tiny: one
// request per connection, then close. Another method gets 405, a malformed request line 400,
// another HTTP version 505. With a control handler set (set_control()), paths under /api/ go to
// it instead (the JSON control API, control_api.hpp), with GET, HEAD, POST and DELETE; a request
// body is not read (none of the API's requests has one). With a page handler set (set_pages()),
// a GET or HEAD it answers (the status page at / and /status, status_page.hpp) gets its reply
// instead of the metrics. With a WHEP handler set (set_whep(), whep_http.hpp), the paths
// is_whep_target() names go to it, POST included, with the request body (Content-Length, at most
// max_body_bytes; docs/webrtc.md).
//
// Limits: at most max_connections open at once (more are closed at accept), a request head of
// at most max_request_bytes, and a deadline from the accept to the end of the request head that
// does not restart when a byte arrives (a client trickling one byte a second cannot hold a
// connection). The deadline runs on the injected clock; a timer checks it four times a second.
// Threading: the loop thread. Errors: start-up throws; a bad client only loses its connection.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/tcp.hpp"
#include "predrop/server/callback_guard.hpp"

namespace predrop::server {

/// What the endpoint hands a control handler of one request (control_api.hpp).
struct HttpRequest {
  std::string_view method;
  std::string_view target;         ///< As sent: path, maybe "?query".
  std::string_view authorization;  ///< The Authorization header's value, or empty.
  std::string_view body;           ///< The request body (WHEP POST only), else empty.
  net::SocketAddress peer;         ///< Who sent it (0.0.0.0:0 on attached connections).
  net::SocketAddress local;        ///< The address it came in on (0.0.0.0:0 when attached).
};

/// The answer to one request.
struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string allow;    ///< For 405: the methods the path takes.
  std::string headers;  ///< More header lines, each ending in CRLF (e.g. a page's CSP).
};

/// True if `target` is one for the control API (its path starts with /api/).
bool is_control_target(std::string_view target);

/// True if `target` is a WHEP path: /<stream>/ (the player page), /<stream>/player.js,
/// /<stream>/whep (POST an offer), /<stream>/whep/<session> (DELETE) or
/// /<stream>/whep/<session>/quality (POST the page's report), <stream> not "api".
bool is_whep_target(std::string_view target);

/// What the endpoint makes of a complete request head (parse_metrics_request()).
struct MetricsRequest {
  int status = 200;         ///< 200: serve it (metrics or API); else the error to answer.
  bool head_only = false;   ///< HEAD: the headers without the body.
  std::string_view method;  ///< Views into the head given.
  std::string_view target;
  std::string_view authorization;  ///< The Authorization header's value (trimmed), or empty.
};

/// Reads the request line of a complete HTTP/1.x request head (RFC 9112 §3: method SP target SP
/// version; empty lines before it are skipped, §2.2) and its Authorization header. Methods other
/// than GET and HEAD are 405 except POST and DELETE on /api/ targets. Pure; never throws.
MetricsRequest parse_metrics_request(std::string_view head);

/// Limits of the metrics endpoint.
struct MetricsEndpointOptions {
  std::size_t max_connections = 32;
  std::uint64_t request_deadline_us = 5'000'000;  ///< From accept to the end of the head.
  std::size_t max_request_bytes = 8192;           ///< Longer heads are refused (431).
  std::size_t max_body_bytes = 65536;             ///< Longer WHEP offers are refused (413).
};

/// Counters of the endpoint itself.
struct MetricsEndpointStats {
  std::uint64_t accepted = 0;
  std::uint64_t refused = 0;  ///< Over max_connections: closed at accept.
  std::uint64_t answered = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t timed_out = 0;     ///< Request head not complete by the deadline.
  std::uint64_t oversized = 0;     ///< Request head longer than max_request_bytes.
  std::uint64_t bad_requests = 0;  ///< Answered 400, 405 or 505.
  std::uint64_t api_requests = 0;  ///< Requests for /api/ paths (any status).
};

/// Serves `render()` as text/plain; version=0.0.4.
class MetricsEndpoint {
 public:
  /// Throws std::runtime_error if the address cannot be bound. `clock` must outlive it.
  MetricsEndpoint(net::EventLoop& loop, const net::SocketAddress& listen,
                  std::function<std::string()> render, MetricsEndpointOptions options = {},
                  const net::Clock& clock = default_clock());
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;
  /// Requests for /api/ paths go to `handler` (handle_control() over a backend) from now on.
  void set_control(std::function<HttpReply(const HttpRequest&)> handler) {
    control_ = std::move(handler);
  }
  /// GET and HEAD requests outside /api/ go to `handler` first; what it answers with a reply
  /// (the status page) is served, the rest gets the metrics as before.
  void set_pages(std::function<std::optional<HttpReply>(const HttpRequest&)> handler) {
    pages_ = std::move(handler);
  }
  /// Requests for WHEP paths (is_whep_target()) go to `handler` from now on.
  void set_whep(std::function<HttpReply(const HttpRequest&)> handler) {
    whep_ = std::move(handler);
  }
  /// The address actually bound.
  const net::SocketAddress& address() const { return listener_->local_address(); }
  const MetricsEndpointStats& stats() const { return stats_; }
  /// Exceptions caught in its callbacks (kind metrics): a render() that threw (that client got
  /// a 500) or a request handler that did (that connection was closed).
  const CallbackGuard& callback_guard() const { return guard_; }
  /// Connections open now.
  std::size_t connection_count() const { return open_.size(); }
  /// What the deadline timer does, now (for tests on a fake clock).
  void run_housekeeping();

  // Entry points for tests and fuzzing: connections without a socket, on the same paths.
  /// A connection admitted like an accepted one; 0 if refused (over the cap).
  std::uint64_t attach_connection();
  /// Bytes as received on attached connection `id` (ignored once it is closed).
  void receive(std::uint64_t id, std::span<const std::uint8_t> bytes);
  /// What the endpoint wrote to attached connection `id` since the last call.
  std::string take_output(std::uint64_t id);
  /// True while connection `id` is open.
  bool connection_open(std::uint64_t id) const;
  /// The real monotonic clock, shared.
  static const net::Clock& default_clock();

 private:
  struct Client {
    std::unique_ptr<net::TcpConnection> tcp;  // null: attached (tests, fuzzing)
    std::string output;                       // what an attached connection was sent
    bool attached_open = true;
    std::string head;  // request bytes so far
    std::uint64_t deadline_us = 0;
    bool answered = false;
    bool is_open() const { return tcp ? tcp->is_open() : attached_open; }
  };
  void on_accept(std::unique_ptr<net::TcpConnection> c);
  std::uint64_t admit(Client client);
  void on_data(std::uint64_t id, std::span<const std::uint8_t> data);
  void on_data_guarded(std::uint64_t id, std::span<const std::uint8_t> data);
  // Sends `reply` and hangs up after it.
  static void answer(Client& c, std::string reply);
  void prune();

  const net::Clock& clock_;
  MetricsEndpointOptions options_;
  std::function<std::string()> render_;
  std::function<HttpReply(const HttpRequest&)> control_;
  std::function<std::optional<HttpReply>(const HttpRequest&)> pages_;
  std::function<HttpReply(const HttpRequest&)> whep_;
  std::unique_ptr<net::TcpListener> listener_;
  std::unique_ptr<net::Timer> deadline_timer_;
  std::map<std::uint64_t, Client> open_;
  std::uint64_t ids_ = 0;
  MetricsEndpointStats stats_;
  CallbackGuard guard_{"server"};
};

}  // namespace predrop::server

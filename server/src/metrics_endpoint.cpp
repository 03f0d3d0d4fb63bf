#include "predrop/server/metrics_endpoint.hpp"

#include <stdexcept>
#include <string_view>
#include <utility>

namespace predrop::server {

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
  if (!l)
    throw std::runtime_error("metrics listen on " + listen.to_string() + ": " + l.error().message);
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
    it = it->second.tcp->is_open() ? std::next(it) : open_.erase(it);
  }
}

void MetricsEndpoint::on_accept(std::unique_ptr<net::TcpConnection> c) {
  prune();
  if (open_.size() >= options_.max_connections) {
    ++stats_.refused;
    c->close();
    return;
  }
  ++stats_.accepted;
  const std::uint64_t id = ++ids_;
  auto on_data = [this, id](std::span<const std::uint8_t> data) {
    if (guard_.run(CallbackKind::kMetrics, [&] { this->on_data(id, data); })) return;
    // Only this connection goes (TcpConnection may be destroyed inside its callback).
    open_.erase(id);
  };
  auto done = [this, id](const core::Status&) { open_.erase(id); };
  if (!c->start(on_data, done)) return;
  Client client;
  client.tcp = std::move(c);
  client.deadline_us = clock_.now_us() + options_.request_deadline_us;
  open_.emplace(id, std::move(client));
}

void MetricsEndpoint::on_data(std::uint64_t id, std::span<const std::uint8_t> data) {
  stats_.bytes_received += data.size();
  auto it = open_.find(id);
  if (it == open_.end() || it->second.answered) return;
  Client& c = it->second;
  // The head may come in several reads: answer once it is complete; what it asks for does not
  // matter.
  c.head.append(reinterpret_cast<const char*>(data.data()), data.size());
  const std::string_view head(c.head);
  const bool complete = head.find("\r\n\r\n") != std::string_view::npos ||
                        head.find("\n\n") != std::string_view::npos;
  if (!complete) {
    if (c.head.size() > options_.max_request_bytes) {
      ++stats_.oversized;
      (void)c.tcp->write(
          "HTTP/1.0 431 Request Header Fields Too Large\r\nContent-Length: 0\r\n"
          "Connection: close\r\n\r\n");
      c.answered = true;
      c.tcp->close_after_writes();
    }
    return;
  }
  c.answered = true;
  std::string body;
  std::string reply;
  if (guard_.run(CallbackKind::kMetrics, [&] { body = render_(); })) {
    reply =
        "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    ++stats_.answered;
  } else {
    // The renderer threw (counted and logged by the guard): this client gets a 500.
    reply = "HTTP/1.0 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  }
  (void)c.tcp->write(std::move(reply));
  c.tcp->close_after_writes();
}

void MetricsEndpoint::run_housekeeping() {
  const std::uint64_t now = clock_.now_us();
  for (auto& [id, c] : open_) {
    if (!c.answered && c.tcp->is_open() && now > c.deadline_us) {
      ++stats_.timed_out;
      c.tcp->close();
    }
  }
  prune();
}

}  // namespace predrop::server

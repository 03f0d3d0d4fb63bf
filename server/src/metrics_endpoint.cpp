#include "predrop/server/metrics_endpoint.hpp"

#include <stdexcept>
#include <utility>

namespace predrop::server {

MetricsEndpoint::MetricsEndpoint(net::EventLoop& loop, const net::SocketAddress& listen,
                                 std::function<std::string()> render)
    : render_(std::move(render)) {
  auto l = net::TcpListener::listen(loop, listen, [this](std::unique_ptr<net::TcpConnection> c) {
    net::TcpConnection* raw = c.get();
    c->set_idle_timeout(5000);
    // Connections that finished their reply are pruned here; TcpConnection allows destruction
    // from inside its own callbacks too.
    for (auto it = open_.begin(); it != open_.end();) {
      it = it->second->is_open() ? std::next(it) : open_.erase(it);
    }
    auto done = [this, raw](const core::Status&) { open_.erase(raw); };
    auto on_data = [this, raw](std::span<const std::uint8_t> data) {
      // Answer once the request head is complete; the request itself does not matter.
      const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
      if (text.find("\r\n\r\n") == std::string_view::npos &&
          text.find("\n\n") == std::string_view::npos) {
        return;
      }
      const std::string body = render_();
      std::string reply =
          "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
          "Content-Length: " +
          std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
      (void)raw->write(std::move(reply));
      raw->close_after_writes();
    };
    if (c->start(on_data, done)) open_.emplace(raw, std::move(c));
  });
  if (!l)
    throw std::runtime_error("metrics listen on " + listen.to_string() + ": " + l.error().message);
  listener_ = std::move(l.value());
}

MetricsEndpoint::~MetricsEndpoint() = default;

}  // namespace predrop::server

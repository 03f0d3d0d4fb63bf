#pragma once
// A Prometheus text-format endpoint (exposition format 0.0.4): any HTTP GET on the listen address
// gets the current metrics. Deliberately tiny: one request per connection, then close.
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/tcp.hpp"

namespace predrop::server {

/// Serves `render()` as text/plain; version=0.0.4.
class MetricsEndpoint {
 public:
  /// Throws std::runtime_error if the address cannot be bound.
  MetricsEndpoint(net::EventLoop& loop, const net::SocketAddress& listen,
                  std::function<std::string()> render);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;
  /// The address actually bound.
  const net::SocketAddress& address() const { return listener_->local_address(); }

 private:
  std::function<std::string()> render_;
  std::unique_ptr<net::TcpListener> listener_;
  std::map<net::TcpConnection*, std::unique_ptr<net::TcpConnection>> open_;
};

}  // namespace predrop::server

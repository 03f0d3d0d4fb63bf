#pragma once
// One scrape at a time of predrop-server's Prometheus endpoint (HTTP/1.0 GET /metrics over
// TCP; the server closes the connection after the reply), reduced to the figures the load
// report uses: per-session reports_total (for the feedback round trip), per-session and total
// packets_sent_total (the server's packet rate) and late blocks.
//
// Threading: loop thread. The callback may destroy the probe.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "predrop/core/result.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/tcp.hpp"

namespace predrop::load {

/// The figures of one scrape.
struct MetricsSnapshot {
  std::uint64_t fetched_us = 0;
  std::unordered_map<std::string, double> reports;  ///< session id -> reports_total
  std::unordered_map<std::string, double> sent;     ///< session id -> packets_sent_total
  double packets_sent = 0;                          ///< Sum over the sessions listed.
  /// Late blocks since the server started (predrop_late_blocks_total), or, from a server
  /// without that counter, the sum over its live sessions.
  double late_blocks = 0;
  bool late_known = false;  ///< A late-blocks counter was present.
};

/// Reads an HTTP/1.x reply carrying a scrape. An error unless its status is 200.
core::Result<MetricsSnapshot> read_metrics_reply(std::string_view reply, std::uint64_t at_us);

/// Fetches /metrics from one address, one request at a time.
class MetricsProbe {
 public:
  /// The scrape, or an error whose message is the kind: "metrics connect" or "metrics reply".
  using OnSnapshot = std::function<void(core::Result<MetricsSnapshot> snapshot)>;

  /// `clock` stamps each scrape (MetricsSnapshot::fetched_us); it must outlive the probe.
  MetricsProbe(net::EventLoop& loop, const net::Clock& clock, net::SocketAddress address);
  ~MetricsProbe();
  MetricsProbe(const MetricsProbe&) = delete;
  MetricsProbe& operator=(const MetricsProbe&) = delete;

  /// True while a scrape is under way.
  bool busy() const { return conn_ != nullptr; }
  /// Starts a scrape unless one is under way (then returns false and `done` never runs).
  bool fetch(OnSnapshot done);

 private:
  void on_done();

  net::EventLoop& loop_;
  const net::Clock& clock_;
  net::SocketAddress address_;
  std::unique_ptr<net::TcpConnection> conn_;
  std::string reply_;
  OnSnapshot done_;
};

}  // namespace predrop::load

#pragma once
// The server's Prometheus text exposition (format 0.0.4): the counters of every worker summed,
// each live session's rate, reports and lateness, the callback boundaries' exceptions, and the
// endpoint's and trace's own counters. A snapshot is copied on its worker's thread
// (snapshot_of()) and rendered anywhere (the metrics endpoint on the main loop).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/server/block_trace_csv.hpp"
#include "predrop/server/callback_guard.hpp"
#include "predrop/server/live_pull.hpp"
#include "predrop/server/metrics_endpoint.hpp"
#include "predrop/server/server_options.hpp"
#include "predrop/server/stream_server.hpp"
#include "predrop/server/stream_session.hpp"

namespace predrop::server {

/// What /metrics shows of one session, copied on its worker's thread.
struct SessionMetrics {
  std::uint64_t number = 0;
  std::string policy;
  double rate = 0.0;
  SessionStats stats;
  chain::TransmitterStats transmitter;
  // What the control API shows beside the metrics (GET /api/v1/sessions).
  std::string stream;
  std::string client;     ///< The client's IP (push: destination).
  std::string transport;  ///< "udp", "tcp" or "push".
  bool playing = false;
  std::uint64_t bytes_sent = 0;           ///< Link bytes (StreamSession::bytes_sent()).
  std::uint64_t age_us = 0;               ///< Time since it was set up.
  std::optional<BlockRecord> last_block;  ///< Its newest block record, if any yet.
  double rmax = 0.0;                      ///< The most its policy may discard.
};

/// One server's counters and sessions at one moment, for rendering on another thread.
struct ServerSnapshot {
  std::uint32_t worker = 0;
  ServerStats stats;
  std::array<std::uint64_t, kCallbackKinds> callback_exceptions{};
  std::size_t sessions = 0;  ///< Live sessions (set up or playing).
  std::size_t connections = 0;
  std::vector<SessionMetrics> session_rows;  ///< Playing sessions.
};

/// The snapshot of `server`; on its loop's thread.
ServerSnapshot snapshot_of(const StreamServer& server);

/// Adds every counter of `b` to `a` (the metrics of all workers are their sum).
void add_stats(ServerStats& a, const ServerStats& b);

/// Parts of the process beside the StreamServer whose counters /metrics shows (null = absent).
struct MetricsSources {
  const MetricsEndpoint* endpoint = nullptr;
  const BlockTraceCsv* trace = nullptr;
  /// The pulled streams (docs/live.md "Pull"), per stream.
  std::span<const PullStatus> pulls;
};

/// Prometheus text exposition of the server's and its sessions' state.
std::string render_metrics(const StreamServer& server, const MetricsSources& more = {});
/// The same gathered from every worker: counters summed, sessions of all workers, and per
/// worker predrop_worker_sessions{worker="k"}.
std::string render_metrics(std::span<const ServerSnapshot> workers,
                           const MetricsSources& more = {});

}  // namespace predrop::server

#pragma once
// N worker loops for one streaming server (issue 14 item 3): every core streams.
//
// Each worker is a thread with its own net::EventLoop and its own StreamServer: its sessions,
// its RTP/RTCP socket pair (ports base + 2k and base + 2k + 1 for worker k, or a free pair each
// when no base is given), its deadline pacer and its housekeeping. A session's state lives on
// the worker that set it up and is touched by that thread only, so the packet path takes no
// lock.
//
// RTSP is accepted once, on the loop given at construction (the program's main loop, which also
// serves /metrics and the signals), and each new connection is handed to the next worker in
// turn (round robin) as a net::DetachedTcpSocket: the worker adopts the socket onto its loop and
// serves it from then on. Accepting once rather than with one SO_REUSEPORT listener per worker
// keeps the spread deterministic (the kernel's 4-tuple hash may put every connection of a small
// test on one worker) and needs no listener option in the net layer. A session is bound to the
// worker of the connection that set it up: a request naming it on a connection of another worker
// (the client reconnected) gets 454 and is counted and logged (docs/rtsp.md "Workers").
//
// Limits: max_sessions and max_sessions_per_address hold for the process (one SessionDirectory
// shared by the workers); max_connections is split, each worker admitting ceil(max / N). Push
// targets are all started on worker 0.
//
// Threading: construct, start(), stop() and every query on the acceptor loop's thread. The
// on_block callback runs on the worker threads, concurrently: it must be thread-safe. Queries
// (snapshots(), run_on()) post to a worker and wait for it, which is fine off the packet path.
// Errors: start() throws std::runtime_error if a worker cannot start (ports taken) or the RTSP
// port cannot be bound; every callback runs inside a CallbackGuard.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/tcp.hpp"
#include "predrop/server/callback_guard.hpp"
#include "predrop/server/metrics_text.hpp"
#include "predrop/server/session_directory.hpp"
#include "predrop/server/stream_server.hpp"

namespace predrop::server {

/// N StreamServers on N threads behind one RTSP port.
class StreamWorkers {
 public:
  using OnBlock = StreamServer::OnBlock;

  /// `workers` >= 1 servers configured from `options` (rtp_port is the base of the pairs).
  /// `on_block` runs on the worker threads.
  StreamWorkers(net::EventLoop& acceptor_loop, StreamServerOptions options, std::size_t workers,
                OnBlock on_block = {});
  /// Calls stop().
  ~StreamWorkers();
  StreamWorkers(const StreamWorkers&) = delete;
  StreamWorkers& operator=(const StreamWorkers&) = delete;

  /// Starts every worker (each binds its RTP/RTCP pair and starts its pushes), then listens for
  /// RTSP. Throws std::runtime_error; the workers already started are stopped again.
  void start();
  /// Stops listening, stops every worker (RTCP BYE to each started session, every handle
  /// closed), joins the threads. Idempotent.
  void stop();

  /// The RTSP address bound.
  const net::SocketAddress& rtsp_address() const;
  /// Worker k's RTP port (its RTCP port is +1).
  std::uint16_t rtp_port(std::size_t worker) const;
  std::size_t worker_count() const { return workers_.size(); }
  /// Connections handed to the workers, and those lost on the way (the socket could not be
  /// moved, or the worker was stopping).
  std::uint64_t connections_handed_off() const { return handed_off_; }
  std::uint64_t handoff_failures() const { return handoff_failures_; }
  /// The acceptor loop's exception boundary (for the program's own callbacks beside it).
  CallbackGuard& callback_guard() { return guard_; }
  const CallbackGuard& callback_guard() const { return guard_; }

  /// Every running worker's snapshot, taken on its thread (waits at most `timeout_ms` per
  /// worker; one that does not answer in time is left out).
  std::vector<ServerSnapshot> snapshots(std::uint64_t timeout_ms = 2000) const;
  /// Runs `fn` on worker k's thread with its server and waits until it has run; false if the
  /// worker is not running, stopped first, or `fn` threw. Not from a worker thread.
  bool run_on(std::size_t worker, const std::function<void(StreamServer&)>& fn) const;
  /// The worker that holds session `number` (numbers are worker + 1 + k * worker_count).
  std::size_t worker_of(std::uint64_t number) const;
  /// Session `number`'s last blocks (StreamServer::session_history() on its worker).
  std::optional<std::vector<BlockRecord>> session_history(std::uint64_t number) const;
  /// Ends session `number` on its worker (StreamServer::end_session()); false if none.
  bool end_session(std::uint64_t number) const;
  /// A WHEP offer, answered by the next worker in turn (StreamServer::whep_offer()).
  WhepOutcome whep_offer(std::string_view stream, std::string_view offer,
                         const net::SocketAddress& peer, std::string_view candidate_ip);
  /// Ends WHEP session `session` on the worker holding it; false if none does.
  bool whep_delete(std::string_view session) const;
  /// The player page's report for `session` (StreamServer::whep_quality()); false if unknown.
  bool whep_quality(std::string_view session, const PageQuality& report) const;
  /// Every worker's set_session_control(`control`); false if a worker did not take it.
  bool set_session_control(const SessionControl& control) const;

 private:
  struct Worker;
  void on_connection(std::unique_ptr<net::TcpConnection> tcp);
  void stop_workers();

  net::EventLoop& loop_;
  StreamServerOptions options_;
  OnBlock on_block_;
  std::shared_ptr<SessionDirectory> directory_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<net::TcpListener> listener_;
  std::size_t next_worker_ = 0;
  std::uint64_t handed_off_ = 0;
  std::uint64_t handoff_failures_ = 0;
  CallbackGuard guard_{"server"};
};

}  // namespace predrop::server

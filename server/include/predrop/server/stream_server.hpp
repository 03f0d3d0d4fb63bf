#pragma once
// The streaming server: RTSP 1.0 over TCP (RFC 2326) in front of per-client StreamSessions, one
// shared RTP socket and one shared RTCP socket (the server_port pair), a deadline pacer, and
// housekeeping (session timeouts, idle connections).
//
// Pacing: every playing session sits in a min-heap (core::DeadlineQueue) keyed by the time it
// next has something to send (StreamSession::next_due_us()); one one-shot timer sleeps until the
// earliest. A wake-up pumps only the sessions due by then, all into one shared sendmmsg batch,
// and re-queues each at its new due time; a paused, finished or idle session costs nothing. While
// a connection carries interleaved media or a paused RTSP connection waits for its socket, the
// pacer also wakes every millisecond to flush it (as the old 1 ms tick did).
//
// Time: every decision (session and report timeouts, RTSP idle limits and request deadlines,
// the pacing "now") reads the net::Clock given at construction; the loop's timers only say
// when to look. Tests pass a FakeClock and call run_housekeeping() / run_pacing().
//
// Threading: everything runs on the one loop given at construction. A process with several
// cores runs several StreamServers, one per worker thread and loop (StreamWorkers,
// stream_workers.hpp): each holds its own sessions, RTP/RTCP socket pair and pacer, so the
// packet path takes no lock; only the SessionDirectory they share (SETUP, TEARDOWN, expiry, a
// request naming a session of another worker) and the metrics snapshots cross threads.
// Errors: start() throws on bad set-up (ports taken); requests get RTSP status codes; bad
// datagrams are counted in ServerStats.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/tcp.hpp"
#include "predrop/server/block_history.hpp"
#include "predrop/server/callback_guard.hpp"
#include "predrop/server/server_options.hpp"
#include "predrop/server/stream_session.hpp"
#include "predrop/server/whep_outcome.hpp"

namespace predrop::server {

/// A started session as the control API shows it (StreamServer::session_views()); pointers
/// valid on the server's loop thread until the next event.
struct SessionView {
  const StreamSession* session = nullptr;
  std::string stream;          ///< The stream's name.
  std::string client;          ///< The client's IP (a push session: its destination address).
  std::string transport;       ///< "udp", "tcp" (interleaved) or "push".
  std::uint64_t setup_us = 0;  ///< When it was set up, on the server's clock.
  const BlockHistory* history = nullptr;
};

/// The streaming server. Construct, start(), run the loop.
///
/// The class is the facade of the units in server/src/ (the file comment of stream_server.cpp
/// maps them): it owns the sockets, the timers and the callback guard, routes each event to the
/// unit that owns it and applies what the unit returns.
class StreamServer {
 public:
  using OnBlock = StreamSession::OnBlock;

  /// A server on the real monotonic clock.
  StreamServer(net::EventLoop& loop, StreamServerOptions options, OnBlock on_block = {});
  /// A server on `clock`, which must outlive it.
  StreamServer(net::EventLoop& loop, const net::Clock& clock, StreamServerOptions options,
               OnBlock on_block = {});
  ~StreamServer();
  StreamServer(const StreamServer&) = delete;
  StreamServer& operator=(const StreamServer&) = delete;

  /// Binds the sockets, starts the push sessions and the timers. Throws std::runtime_error.
  void start();
  /// Stops listening, sends RTCP BYE for every session that was started, tears every session
  /// down and closes every handle. Idempotent.
  void stop();

  /// The RTSP address actually bound (options.rtsp_listen when this server does not listen).
  const net::SocketAddress& rtsp_address() const;
  /// Serves a connection accepted elsewhere and moved onto this server's loop (StreamWorkers);
  /// it is admitted like one from the server's own listener. Loop thread only.
  void adopt_connection(std::unique_ptr<net::TcpConnection> tcp);
  /// The server's RTP port (RTCP is +1).
  std::uint16_t rtp_port() const;

  const ServerStats& stats() const;
  /// The worker index it was configured with (StreamServerOptions::worker).
  std::uint32_t worker() const;
  /// Exceptions caught at the server's callback boundaries, by kind.
  const CallbackGuard& callback_guard() const;
  /// The same boundary, for the program's own callbacks (signals, timers) beside the server.
  CallbackGuard& callback_guard();
  std::size_t session_count() const;
  std::size_t connection_count() const;
  /// Sessions the open connections carry, summed (each session counts on the connection that
  /// set it up, until TEARDOWN or expiry).
  std::size_t connection_session_refs() const;
  /// Live sessions, for metrics.
  std::vector<const StreamSession*> sessions() const;

  /// Started sessions with what the control API shows of them.
  std::vector<SessionView> session_views() const;
  /// The last blocks of session `number` (its public number), oldest first; nullopt if this
  /// server holds no such session.
  std::optional<std::vector<BlockRecord>> session_history(std::uint64_t number) const;
  /// Ends session `number` as a TEARDOWN would, after an RTCP BYE to its client; false if this
  /// server holds no such session.
  bool end_session(std::uint64_t number);
  /// Answers a WHEP offer for `stream` from `peer`: a session counted against the same limits
  /// as RTSP ones, started when the browser's DTLS handshake completes. `candidate_ip` is the
  /// host candidate's address when the RTP socket is bound to every interface.
  WhepOutcome whep_offer(std::string_view stream, std::string_view offer,
                         const net::SocketAddress& peer, std::string_view candidate_ip);
  /// Ends the WHEP session `session` (its DELETE); false if this server holds no such session.
  bool whep_delete(std::string_view session);
  /// The player page's report of one second of play for the WHEP session `session`
  /// (docs/webrtc.md "Quality in the page"); false if this server holds no such session.
  bool whep_quality(std::string_view session, const PageQuality& report);
  /// Sessions started from now on are controlled by `control` (a configuration reload);
  /// playing sessions keep their controllers.
  void set_session_control(const SessionControl& control);
  /// The server's clock now (the time base of SessionView::setup_us).
  std::uint64_t now_us() const;

  /// What the 1 s housekeeping timer does, now: closes idle connections and connections whose
  /// request is overdue, expires sessions. For tests on a fake clock.
  void run_housekeeping();
  /// What the pacing timer does, now: pumps every session that is due by now plus the pacing
  /// quantum (and only those), re-queues them, flushes the interleaved queues and re-arms the
  /// timer.
  void run_pacing();
  /// The earliest time a session is queued for (StreamSession::kNoDeadline if none). For tests.
  std::uint64_t next_pacing_due_us() const;
  /// When the pacer runs next: a quantum before the earliest deadline, but not sooner than a
  /// quantum after its last run (kNoDeadline if nothing is queued). For tests.
  std::uint64_t next_pacing_run_us() const;

  // Entry points for tests and fuzzing: RTSP connections without a socket, and RTCP datagrams
  // without one. They take the same paths (limits, parsing, handlers, exception boundary) as
  // the real ones.
  /// A connection from `peer`, admitted like an accepted one; 0 if refused at once.
  std::uint64_t attach_connection(const net::SocketAddress& peer);
  /// Bytes as received on attached connection `id` (ignored once it is closed).
  void receive(std::uint64_t id, std::span<const std::uint8_t> bytes);
  /// What the server wrote to attached connection `id` since the last call (its write queue).
  std::string take_output(std::uint64_t id);
  /// True while connection `id` is open.
  bool connection_open(std::uint64_t id) const;
  /// Attached connection `id` hangs up.
  void detach_connection(std::uint64_t id);
  /// An RTCP datagram from `from`, as if received on the RTCP port.
  void receive_rtcp(std::span<const std::uint8_t> data, const net::SocketAddress& from);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace predrop::server

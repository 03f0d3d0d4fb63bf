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
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/core/deadline_queue.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/tcp.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/rtsp/rtsp_headers.hpp"
#include "predrop/rtsp/rtsp_message.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/server/callback_guard.hpp"
#include "predrop/server/session_directory.hpp"
#include "predrop/server/stream_session.hpp"
#include "predrop/wire/mikey.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::server {

/// A named stream the server offers (rtsp://host:port/<name>).
struct StreamDefinition {
  std::string name;
  std::shared_ptr<const media::MediaFile> media;
};

/// A session started without RTSP: the server sends to a fixed destination and writes an SDP
/// file that any player can open (`ffplay -protocol_whitelist file,udp,rtp,srtp,crypto -i f.sdp`).
struct PushTarget {
  std::string stream;
  net::SocketAddress destination;  ///< Video RTP port; audio goes to port + 2.
  std::string sdp_file;
};

/// How R is set for a session whose client sends no PDFB.
enum class PlayerAdaptation {
  kReceiverReports,  ///< Its RTCP Receiver Reports feed player_policy (network signals only).
  kFixed,            ///< R = player_rate always.
};

/// The capacity policy with its defaults, started at R = 0: what players get by default.
inline core::PolicyConfig default_player_policy() {
  core::PolicyConfig p;
  p.policy = "capacity";
  p.capacity.rmax = 0.5;  // control.rmax's default
  return p;
}

/// Settings of the streaming server (mapped from the TOML configuration by the program).
struct StreamServerOptions {
  net::SocketAddress rtsp_listen = net::SocketAddress::any_v4(8554);
  std::uint16_t rtp_port = 0;  ///< Server RTP port (RTCP = +1); 0 picks a free even pair.
  std::string bind_ip = "0.0.0.0";
  std::vector<StreamDefinition> streams;
  std::vector<PushTarget> pushes;
  std::optional<wire::SrtpSuite> srtp = wire::SrtpSuite::AesCm128HmacSha1_80;  ///< Empty: plain.
  core::PolicyConfig policy;  ///< For clients that send PDFB.
  double player_rate = 0.0;   ///< Fixed R for clients that do not, with kFixed (ffplay, VLC).
  /// How clients without PDFB are controlled (docs/rtsp.md "Adaptation from Receiver Reports").
  PlayerAdaptation player_adaptation = PlayerAdaptation::kReceiverReports;
  /// Policy of those clients with kReceiverReports; its `policy` should be "capacity".
  core::PolicyConfig player_policy = default_player_policy();
  core::DiscardPolicy discard = core::DiscardPolicy::kPriority;
  std::uint64_t discard_seed = 1;
  bool paced = true;
  /// The pacer runs at most once per quantum and sends what falls due before its next run:
  /// packets leave up to this much early, never late (config blocks.pacing_quantum_ms).
  /// 0: each session at its own deadline, at most one run per millisecond.
  std::uint32_t pacing_quantum_us = 5000;
  bool loop = false;
  std::uint32_t max_stages = 0;
  std::size_t max_sessions = 1000;
  /// Sessions one client IP may hold at once (0 = no limit); over it SETUP gets 453.
  /// predrop-server sets it from server.max_sessions_per_address (default 16).
  std::size_t max_sessions_per_address = 0;
  std::size_t max_connections = 2000;
  /// Bound on what one RTSP connection may have waiting: replies queued for writing plus
  /// requests received and not yet answered. Past a quarter of it the server stops answering
  /// the connection until its queue drains; past all of it the connection is closed.
  std::size_t max_write_queue_bytes = std::size_t{1} << 20;
  /// Bound on the media queue of a connection carrying interleaved sessions (RTP/AVP/TCP,
  /// RFC 2326 §10.12): packets that do not fit are dropped, so a slow reader cannot grow server
  /// memory. 0 refuses interleaved transport (461). The default holds about 0.3 s at 8 Mbit/s.
  std::size_t interleaved_queue_bytes = std::size_t{256} * 1024;
  std::uint32_t session_timeout_s = 60;
  std::uint32_t rtsp_idle_timeout_s = 30;
  std::uint64_t report_timeout_us = 3'000'000;
  std::size_t max_payload_size = 1400;
  std::string block_attribute;  ///< SDP a=x-predrop-block value describing the block size.
  /// UDP GSO on the RTP socket: the packets of one frame to one client go as one UDP_SEGMENT
  /// message inside the shared sendmmsg (net::UdpEndpoint::set_gso); plain sendmmsg if false or
  /// if the kernel refuses it. On by default: it wins in bench/perf (README section 8).
  bool gso = true;
  /// Open the RTSP listener in start(). False for a worker of StreamWorkers, whose connections
  /// are accepted on another loop and handed over with adopt_connection().
  bool listen = true;
  /// Shared by the workers of one process: global session limits and the worker of each session
  /// id (a request naming a session of another worker gets 454). Empty: the server makes its
  /// own, so one server and N workers count their limits the same way.
  std::shared_ptr<SessionDirectory> directory;
  /// This server's worker index (logs, 454 replies) and the number of workers; session numbers
  /// (the metrics label) are worker + 1 + k * worker_count, unique across the workers.
  std::uint32_t worker = 0;
  std::uint32_t worker_count = 1;
  /// Tests only: called inside the callback boundaries (per RTSP request, per RTCP datagram of
  /// a known session, per session per pacing tick) with the callback's kind; it may throw to
  /// stand for a bug in a handler. Empty in production.
  std::function<void(CallbackKind)> fault_injection;
};

/// Server-wide counters.
struct ServerStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_refused = 0;  ///< Over max_connections (answered 503).
  std::uint64_t requests = 0;
  std::uint64_t bad_requests = 0;
  std::uint64_t sessions_created = 0;
  std::uint64_t sessions_refused = 0;              ///< Over max_sessions (answered 453).
  std::uint64_t sessions_refused_per_address = 0;  ///< Over max_sessions_per_address (453).
  std::uint64_t connections_closed_backlog = 0;    ///< Over max_write_queue_bytes (not reading).
  std::uint64_t connections_paused = 0;  ///< Times a connection was no longer answered (backlog).
  std::uint64_t sessions_timed_out = 0;
  std::uint64_t connections_timed_out = 0;  ///< Idle, or a request not complete in time.
  std::uint64_t rtsp_bytes_received = 0;
  std::uint64_t session_requests_foreign = 0;  ///< Named a session from another IP (454).
  /// Named a session that another worker holds (454): the client reconnected and its new
  /// connection went to another worker (a session is bound to its connection's worker).
  std::uint64_t session_requests_other_worker = 0;
  std::uint64_t rtcp_datagrams = 0;
  std::uint64_t rtcp_unknown_source = 0;
  std::uint64_t rtp_port_datagrams = 0;  ///< NAT-punch packets and strays on the RTP port.
  std::uint64_t rtcp_byes_sent = 0;      ///< BYE compounds sent when stopping.
  std::uint64_t connections_closed_by_exception = 0;  ///< A handler threw while serving it.
  std::uint64_t sessions_closed_by_exception = 0;     ///< Its pacing or RTCP handler threw.
  std::uint64_t interleaved_sessions = 0;             ///< Sessions set up with RTP/AVP/TCP.
  std::uint64_t interleaved_frames_received = 0;      ///< "$" frames from clients, all kinds.
  std::uint64_t interleaved_unknown_channel = 0;      ///< On no RTCP channel of the connection.
  std::uint64_t interleaved_bad_length = 0;           ///< Longer than an RTCP compound may be.
  std::uint64_t interleaved_truncated = 0;            ///< Connection ended inside a frame.
  std::uint64_t interleaved_frames_sent = 0;          ///< Frames queued to clients.
  std::uint64_t interleaved_frames_dropped = 0;       ///< Refused: the connection's queue was full.
  std::uint64_t pacing_wakeups = 0;                   ///< Pacer runs (timer or run_pacing()).
  std::uint64_t session_pumps = 0;  ///< Sessions pumped, summed over the wake-ups.
  /// Pacer runs that stopped at their time budget with sessions still due: the loop is
  /// overloaded (it polls its sockets, then goes on where it stopped).
  std::uint64_t pacing_runs_cut = 0;
  /// Late blocks (a packet sent past its due time) of the sessions that have ended; with the
  /// live sessions' own counts, every late block since start (predrop_late_blocks_total).
  std::uint64_t late_blocks_of_ended_sessions = 0;
};

/// The streaming server. Construct, start(), run the loop.
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
  /// The SDP a DESCRIBE of `stream` returns, with `key` in its a=crypto lines (when SRTP is on).
  std::string describe(const StreamDefinition& stream, const wire::SrtpKeyMaterial* key,
                       std::string_view host) const;

  const ServerStats& stats() const { return stats_; }
  /// The worker index it was configured with (StreamServerOptions::worker).
  std::uint32_t worker() const { return options_.worker; }
  /// Exceptions caught at the server's callback boundaries, by kind.
  const CallbackGuard& callback_guard() const { return guard_; }
  /// The same boundary, for the program's own callbacks (signals, timers) beside the server.
  CallbackGuard& callback_guard() { return guard_; }
  std::size_t session_count() const { return sessions_.size(); }
  std::size_t connection_count() const { return connections_.size(); }
  /// Sessions the open connections carry, summed (each session counts on the connection that
  /// set it up, until TEARDOWN or expiry).
  std::size_t connection_session_refs() const;
  /// Live sessions, for metrics.
  std::vector<const StreamSession*> sessions() const;

  /// What the 1 s housekeeping timer does, now: closes idle connections and connections whose
  /// request is overdue, expires sessions. For tests on a fake clock.
  void run_housekeeping() { housekeeping(); }
  /// What the pacing timer does, now: pumps every session that is due by now plus the pacing
  /// quantum (and only those), re-queues them, flushes the interleaved queues and re-arms the
  /// timer.
  void run_pacing() { tick(); }
  /// The earliest time a session is queued for (StreamSession::kNoDeadline if none). For tests.
  std::uint64_t next_pacing_due_us() const { return schedule_.next_due(); }
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
  struct Connection;
  struct PendingSession;
  struct SessionEntry;

  using ConnectionMap = std::map<std::uint64_t, std::unique_ptr<Connection>>;

  void on_connection(std::unique_ptr<net::TcpConnection> tcp);
  Connection* admit(std::unique_ptr<Connection> c);
  void on_data_guarded(std::uint64_t id, std::span<const std::uint8_t> data);
  void on_data(std::uint64_t id, std::span<const std::uint8_t> data);
  void close_connection(std::uint64_t id);
  void drop_connection(std::uint64_t id);
  void on_rtcp_guarded(std::span<const std::uint8_t> data, const net::SocketAddress& from);
  void on_interleaved(Connection& c, const rtsp::InterleavedFrame& frame);
  // Flushes every interleaved media queue; true if one still holds bytes for its socket.
  bool flush_interleaved();
  void inject_fault(CallbackKind kind);
  void prune_connections();
  ConnectionMap::iterator forget_connection(ConnectionMap::iterator it);
  // Parses and answers what a connection sent, unless its client stopped reading.
  void serve(Connection& c);
  void close_for_backlog(Connection& c);
  std::size_t pause_threshold() const;
  void resume_paused();
  std::uint64_t idle_limit_us(const Connection& c) const;

  // RTSP request handling: handle() resolves the Session header and dispatch() calls one
  // handler per method; each returns the response to send.
  struct Request;
  struct StreamLookup {
    const StreamDefinition* stream = nullptr;
    rtsp::RtspUrl url;
    std::optional<rtsp::RtspResponse> error;  // set: the reply (400 bad URL, 404 no stream)
  };
  std::string handle(Connection& c, rtsp::RtspRequest& request);
  rtsp::RtspResponse dispatch(Request& q);
  rtsp::RtspResponse handle_options(Request& q);
  rtsp::RtspResponse handle_describe(Request& q);
  rtsp::RtspResponse handle_setup(Request& q);
  rtsp::RtspResponse handle_play(Request& q);
  // SETUP of a track interleaved on the request's connection (RTP/AVP/TCP), after the checks.
  rtsp::RtspResponse setup_interleaved(Request& q, const rtsp::TransportSpec& spec,
                                       std::uint32_t track,
                                       const std::optional<wire::MikeyKey>& client_key);
  rtsp::RtspResponse handle_pause(Request& q);
  rtsp::RtspResponse handle_teardown(Request& q);
  rtsp::RtspResponse handle_get_parameter(Request& q);
  // Shared by the handlers: a 200 carrying the request's Session; the stream the URL names; a
  // new session for SETUP (nullptr and `error` set when refused).
  rtsp::RtspResponse ok_response(const Request& q) const;
  StreamLookup requested_stream(const Request& q) const;
  SessionEntry* create_session(Request& q, const StreamDefinition& stream,
                               std::optional<rtsp::RtspResponse>& error);
  void on_rtcp_datagram(std::span<const std::uint8_t> data, const net::SocketAddress& from,
                        std::uint64_t now_us);
  void tick();
  // Puts the entry's session in the pacing queue at its due time (or out of it) and, if that is
  // earlier than the timer is armed for, re-arms the timer.
  void reschedule(SessionEntry& entry);
  // Arms the pacing timer for the earliest deadline (stops it if there is none).
  void arm_pacer();
  void housekeeping();
  void remove_session(const std::string& id);
  const StreamDefinition* find_stream(std::string_view name) const;
  std::string new_session_id();
  std::uint64_t next_session_number();
  static std::uint32_t new_ssrc(const SessionEntry& entry);
  bool start_session(SessionEntry& entry, std::uint64_t now_us);

  net::EventLoop& loop_;
  const net::Clock& clock_;
  StreamServerOptions options_;
  OnBlock on_block_;
  std::unique_ptr<net::TcpListener> listener_;
  std::unique_ptr<net::UdpEndpoint> rtp_socket_;
  std::unique_ptr<net::UdpEndpoint> rtcp_socket_;
  // One sendmmsg batch that every session's packets share during a pacing tick (before the
  // socket in destruction order: it flushes into it).
  std::unique_ptr<chain::SendBatch> batch_;
  std::unique_ptr<net::Timer> pacer_;
  // The pacing queue over session slots (SessionEntry::slot), and the entry of each slot.
  core::DeadlineQueue schedule_;
  std::vector<SessionEntry*> slot_entries_;
  // The session of each slot, beside slot_entries_: what the pacer reads on every visit, without
  // the cold SessionEntry.
  std::vector<StreamSession*> slot_sessions_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t armed_us_ = StreamSession::kNoDeadline;  // when pacer_ fires; kNoDeadline: off
  std::uint64_t last_pacing_run_us_ = 0;                 // now of the last tick()
  // True while some connection's queue is written only by the pacer's polling.
  bool needs_polling() const { return !interleaved_connections_.empty() || !paused_.empty(); }
  std::unique_ptr<net::Timer> housekeeper_;
  ConnectionMap connections_;
  std::uint64_t connection_ids_ = 0;
  std::set<std::uint64_t> interleaved_connections_;  // connections with a media queue
  std::set<std::uint64_t> paused_;  // connections whose client does not read (see serve())
  std::map<std::string, std::unique_ptr<SessionEntry>> sessions_;
  std::uint64_t session_numbers_ = 0;
  std::unordered_map<net::SocketAddress, std::string> session_by_address_;
  std::vector<std::uint8_t> rtcp_buffer_;
  ServerStats stats_;
  CallbackGuard guard_{"server"};
};

}  // namespace predrop::server

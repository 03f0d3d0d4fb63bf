// The streaming server (stream_server.hpp): StreamServer::Impl owns the sockets (RTSP listener,
// the RTP/RTCP pair), the timers (pacer, housekeeping) and the callback guard, routes each event
// to the unit that owns it and applies what the unit returns:
//   rtsp_connections.hpp    admission, limits, idle deadlines, parsing, back-pressure
//   rtsp_methods.hpp        what each RTSP request means: its reply and its effects
//   session_description.hpp the SDP of a stream (DESCRIBE, push SDP files)
//   session_table.hpp       the sessions by id and by RTCP source address; expiry
//   interleaved_link.hpp    RTP/RTCP interleaved on an RTSP connection: channels and queue
//   pacer.hpp               the deadline queue the sessions are pumped from
//   session_start.hpp       a session's configuration, controller and transport at its PLAY
//   push_sessions.hpp       sessions started without RTSP (--push), their SDP files
//   publish_routes.hpp      publishers: a request's effects, their UDP routes, their packets
//   live_publish.hpp        a connection's publisher: its frames into its stream's LiveSource
//   port_pair.hpp           the RTP/RTCP port pair
//   stream_session.hpp      one client's session (blocks, discard, SR/BYE, reports)
//   whep_sessions.hpp       WHEP sessions: offers, their peers' ICE-lite and DTLS on the RTP
//                           socket (whep_peers.hpp), start at DTLS, end (whep_offer.hpp: entry
//                           and SDP answer)
// No unit includes this file or changes another unit's state; `now` is read here, once per
// event, and passed in.
#include "predrop/server/stream_server.hpp"

#include <stdexcept>
#include <utility>

#include "pacer.hpp"
#include "port_pair.hpp"
#include "predrop/core/log.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/server/coupling_groups.hpp"
#include "publish_routes.hpp"
#include "push_sessions.hpp"
#include "rtsp_connections.hpp"
#include "rtsp_methods.hpp"
#include "session_description.hpp"
#include "session_start.hpp"
#include "session_table.hpp"
#include "whep_sessions.hpp"

namespace predrop::server {

using detail::MethodOutcome;
using detail::RtspConnection;
using detail::SessionEntry;

namespace {
// The clock of servers constructed without one.
const net::Clock& default_clock() {
  static const net::MonotonicClock clock;
  return clock;
}
// The server's RTCP buffer: what a client's compound may be (and what interleaved frames the
// connections' parsers take), plus room for decryption in place.
constexpr std::size_t kRtcpBuffer = 4096 + net::kSrtpMaxTrailer;
}  // namespace

class StreamServer::Impl final : public detail::RtspConnectionListener, public detail::WhepHost {
 public:
  Impl(net::EventLoop& loop, const net::Clock& clock, StreamServerOptions options, OnBlock on_block)
      : loop_(loop),
        clock_(clock),
        options_(completed(std::move(options))),
        on_block_(std::move(on_block)),
        sessions_(options_.worker, options_.worker_count),
        connections_({options_.max_connections, options_.max_write_queue_bytes,
                      options_.rtsp_idle_timeout_s, options_.session_timeout_s},
                     stats_),
        methods_(options_, sessions_, stats_),
        pacer_(options_.paced, options_.pacing_quantum_us),
        whep_(loop, clock, options_, sessions_, stats_, *this),
        rtcp_buffer_(kRtcpBuffer) {}
  ~Impl() override { stop(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void start();
  void stop();

  // ---- RTSP connections ----

  void on_connection(std::unique_ptr<net::TcpConnection> tcp) {
    auto c = std::make_unique<RtspConnection>();
    c->tcp = std::move(tcp);
    c->peer = c->tcp->peer_address();
    RtspConnection* admitted = admit(std::move(c));
    if (admitted == nullptr) return;
    // The handlers name the connection by id: it may be gone by the time libuv calls back.
    const std::uint64_t id = admitted->id;
    auto st = admitted->tcp->start(
        [this, id](std::span<const std::uint8_t> d) { on_data_guarded(id, d); },
        [this, id](const core::Status&) {
          guard_.run(CallbackKind::kRtsp, [&] { close_connection(id); });
        });
    if (!st) close_connection(id);
  }

  RtspConnection* admit(std::unique_ptr<RtspConnection> c) {
    forget_closed();
    return connections_.admit(std::move(c), clock_.now_us());
  }

  void on_data_guarded(std::uint64_t id, std::span<const std::uint8_t> data) {
    if (guard_.run(CallbackKind::kRtsp, [&] { on_data(id, data); })) return;
    // A handler threw while serving this connection: its state is not to be trusted, so it goes
    // (its sessions stay: they may be controlled from a new connection).
    if (auto c = connections_.take(id)) {
      ++stats_.connections_closed_by_exception;
      c->close();
      forget(std::move(c));
    }
  }

  void on_data(std::uint64_t id, std::span<const std::uint8_t> data) {
    RtspConnection* c = connections_.find(id);
    if (c == nullptr) return;
    const std::uint64_t now = clock_.now_us();
    connections_.receive(*c, data, now, *this);
    if (!c->is_open()) forget(connections_.take(id));  // closed meanwhile: forget it now
    // A first interleaved SETUP or a paused client: their queues are polled every millisecond.
    if (connections_.needs_polling() && armed_us_ > now + 1000) arm_pacer();
  }

  // Sessions outlive their RTSP connection (clients may reconnect for TEARDOWN) and end by
  // TEARDOWN or the session timeout; interleaved ones end with it: their media has nowhere
  // else to go (RFC 2326 §10.12).
  void forget(std::unique_ptr<RtspConnection> c) {
    if (!c) return;
    publishing_.forget(*c, clock_.now_us());
    for (const std::string& id : std::vector<std::string>(c->sessions)) {
      const SessionEntry* e = sessions_.find(id);
      if (e != nullptr && e->interleaved) remove_session(id);
    }
    // TcpConnection may be destroyed from inside its own callbacks; queued writes still go out
    // when close_after_writes() was called first.
  }

  void forget_closed() {
    for (auto& c : connections_.take_closed()) {
      forget(std::move(c));
    }
  }

  void close_connection(std::uint64_t id) { forget(connections_.take(id)); }

  std::string on_request(RtspConnection& c, rtsp::RtspRequest& request) override {
    if (options_.fault_injection) options_.fault_injection(CallbackKind::kRtsp);
    const std::uint64_t now = clock_.now_us();
    MethodOutcome outcome = methods_.handle(c, request, now, rtp_port());
    publishing_.apply(outcome, c, now);  // a publisher's part (docs/live.md)
    SessionEntry* entry = apply(outcome, c, now);
    methods_.complete(outcome, entry);
    // PLAY, PAUSE (and any later method) may have moved the session's next due time.
    if (entry != nullptr) reschedule(*entry);
    return rtsp::serialize(outcome.response);
  }

  // Applies a request's effects, in order; returns the session it concerns if it still exists.
  SessionEntry* apply(MethodOutcome& o, RtspConnection& c, std::uint64_t now) {
    if (o.key) c.keys.insert_or_assign(o.key->first, o.key->second);
    SessionEntry* entry = nullptr;
    if (o.created) {
      entry = &sessions_.add(std::move(o.created));
      entry->setup_us = now;
      c.sessions.push_back(entry->id);  // from now on the connection has the longer idle limit
    } else if (!o.session.empty()) {
      entry = sessions_.find(o.session);
    }
    if (entry == nullptr) return nullptr;
    if (o.touch) entry->last_request_us = now;
    if (o.track) add_track(*entry, c, *o.track);
    switch (o.action) {
      case MethodOutcome::Action::kPlay:
        if (start_session(*entry, now)) entry->session->play(now);
        break;
      case MethodOutcome::Action::kPause:
        if (entry->session) entry->session->pause(now);
        break;
      case MethodOutcome::Action::kTeardown:
        remove_session(entry->id);
        return nullptr;
      case MethodOutcome::Action::kNone:
        break;
    }
    return entry;
  }

  // A datagram on the RTP port: a WHEP browser's STUN, DTLS or SRTCP (rtcp-mux), a UDP
  // publisher's RTP, else a NAT punch or a stray (counted).
  void on_rtp_port(std::span<const std::uint8_t> data, const net::SocketAddress& from) {
    if (whep_.on_datagram(data, from)) return;
    const auto id = publishing_.connection_for(from);
    if (!id && whep_.is_peer_rtcp(from)) {
      on_rtcp_guarded(data, from);
      return;
    }
    RtspConnection* c = id ? connections_.find(*id) : nullptr;
    if (publishing_.on_datagram(c, from, data, clock_.now_us()) == detail::PublishVerdict::kClose) {
      c->close();
      close_connection(c->id);
    }
  }

  void add_track(SessionEntry& entry, RtspConnection& c, const detail::TrackSetup& setup) {
    entry.tracks.push_back(setup.track);
    entry.track_ids.push_back(setup.track_id);
    if (!setup.track.interleaved) return;
    entry.interleaved = true;
    if (!c.interleaved) {
      c.interleaved = std::make_unique<detail::InterleavedLink>(
          c.tcp.get(), &c.output, options_.interleaved_queue_bytes, stats_.interleaved_frames_sent,
          stats_.interleaved_frames_dropped);
      connections_.note_interleaved(c);
    }
    c.interleaved->reserve(*setup.track.interleaved, entry.id);
  }

  // ---- sessions ----

  bool start_session(SessionEntry& entry, std::uint64_t now) override;

  // A WHEP session's entry (whep_sessions.hpp).
  SessionEntry& add_session(std::unique_ptr<SessionEntry> entry) override {
    return sessions_.add(std::move(entry));
  }

  void remove_session(const std::string& id) override {
    std::unique_ptr<SessionEntry> e = sessions_.remove(id);
    if (!e) return;
    if (e->session) {
      stats_.late_blocks_of_ended_sessions += e->session->transmitter_stats().late_stages;
    }
    pacer_.release(*e);
    whep_.forget(*e);
    options_.directory->remove(id);
    // The connection it was set up on no longer carries it.
    if (RtspConnection* c = connections_.find(e->connection)) {
      std::erase(c->sessions, id);
      if (e->interleaved && c->interleaved) c->interleaved->release(e->tracks);
    }
  }

  // ---- RTCP: from the RTCP port (by source address) or an interleaved channel ----

  void on_rtcp_guarded(std::span<const std::uint8_t> data, const net::SocketAddress& from) {
    ++stats_.rtcp_datagrams;
    SessionEntry* e = sessions_.by_address(from);
    if (e == nullptr && publishing_.on_rtcp_datagram(connections_, from, data, clock_.now_us())) {
      return;
    }
    if (e == nullptr || !e->session || data.size() > kRtcpBuffer - net::kSrtpMaxTrailer) {
      ++stats_.rtcp_unknown_source;
      return;
    }
    if (guard_.run(CallbackKind::kRtcp, [&] { deliver(*e, data); })) return;
    // The session may be half-updated (its controller, its counters): end it, and only it.
    ++stats_.sessions_closed_by_exception;
    remove_session(e->id);
  }

  void on_interleaved(RtspConnection& c, const rtsp::InterleavedFrame& frame) override {
    ++stats_.interleaved_frames_received;
    if (c.publisher) {
      const auto verdict = publishing_.on_frame(c, frame.channel, frame.payload, clock_.now_us());
      if (verdict == detail::PublishVerdict::kClose) c.close();
      return;
    }
    const std::string* id = c.interleaved ? c.interleaved->session_for(frame.channel) : nullptr;
    SessionEntry* e = id != nullptr ? sessions_.find(*id) : nullptr;
    if (e == nullptr || !e->session || frame.payload.size() > kRtcpBuffer - net::kSrtpMaxTrailer) {
      // Not one of the RTCP channels this connection set up (or RTP sent back to us): dropped.
      ++stats_.interleaved_unknown_channel;
      return;
    }
    // The same path as a datagram on the RTCP port, inside the connection's boundary: a
    // failure ends the connection, and with it its interleaved sessions.
    deliver(*e, frame.payload);
  }

  // The client's RTCP into its session's feedback intake (SRTCP, RR, PDFB).
  void deliver(SessionEntry& e, std::span<const std::uint8_t> data) {
    if (options_.fault_injection) options_.fault_injection(CallbackKind::kRtcp);
    std::copy(data.begin(), data.end(), rtcp_buffer_.begin());
    const RtcpCounts counts = e.session->on_rtcp(rtcp_buffer_, data.size(), clock_.now_us());
    if (e.webrtc) {
      stats_.webrtc_twcc_feedback += counts.twcc_feedback;
      stats_.webrtc_twcc_reports += counts.twcc_reports;
      stats_.webrtc_page_quality_blocks += counts.page_quality_blocks;
      stats_.webrtc_nacks += counts.nacks;
      stats_.webrtc_nacked_packets += counts.nacked_packets;
      stats_.webrtc_rtx_packets += counts.rtx_packets;
      stats_.webrtc_rtx_bytes += counts.rtx_bytes;
      stats_.webrtc_rtx_unknown += counts.rtx_unknown;
      stats_.webrtc_rtx_capped += counts.rtx_refused;
      stats_.webrtc_key_frame_requests += counts.key_frame_requests;
    }
    stats_.alerts += counts.alerts;
    stats_.alerts_taken += counts.alerts_taken;
    reschedule(e);
  }

  // ---- timers ----

  void tick() {
    armed_us_ = StreamSession::kNoDeadline;  // a one-shot timer: it fired, or is re-armed below
    if (!batch_) return;  // stopped: stop() released the batch and the sessions with it
    const std::uint64_t now = clock_.now_us();
    auto failed = pacer_.run(
        now, detail::PacerRun{clock_, guard_, options_.fault_injection, stats_, *batch_});
    // Only now: the batch's datagrams pointed into the sessions' transmitters.
    for (SessionEntry* e : failed) {
      ++stats_.sessions_closed_by_exception;
      remove_session(e->id);
    }
    (void)connections_.flush_interleaved();
    if (connections_.any_paused()) {
      connections_.resume_paused([&](RtspConnection& c) {
        return guard_.run(CallbackKind::kRtsp, [&] { connections_.serve(c, now, *this); });
      });
      forget_closed();
    }
    arm_pacer();
  }

  // Puts the entry's session in the pacing queue at its due time (or out of it) and, if that is
  // earlier than the timer is armed for, re-arms the timer.
  void reschedule(SessionEntry& entry) {
    if (pacer_.reschedule(entry) < armed_us_) arm_pacer();
  }

  void arm_pacer() {
    if (!pacer_timer_) return;
    const std::uint64_t now = clock_.now_us();
    const std::uint64_t wait_ms = pacer_.sleep_ms(now, connections_.needs_polling());
    pacer_timer_->start_from_now(wait_ms);
    armed_us_ = now + wait_ms * 1000;
  }

  void housekeeping() {
    const std::uint64_t now = clock_.now_us();
    connections_.close_overdue(now);
    forget_closed();
    const std::uint64_t timeout = std::uint64_t{options_.session_timeout_s} * 1'000'000;
    for (const std::string& id : sessions_.expired(now, timeout)) {
      ++stats_.sessions_timed_out;
      remove_session(id);
    }
    whep_.housekeeping(now);
  }

  void start_pushes();
  // The directory of a server that has none, and file streams that loop with `loop`.
  static StreamServerOptions completed(StreamServerOptions o) {
    if (!o.directory) o.directory = std::make_shared<SessionDirectory>();
    for (StreamDefinition& s : o.streams) {
      if (o.loop && s.media) s.source = std::make_shared<media::FileSource>(s.media, true);
    }
    return o;
  }

  net::EventLoop& loop_;
  const net::Clock& clock_;
  StreamServerOptions options_;
  OnBlock on_block_;
  ServerStats stats_;
  CallbackGuard guard_{"server"};
  detail::SessionTable sessions_;
  detail::RtspConnections connections_;
  detail::RtspMethods methods_;
  detail::Pacer pacer_;
  detail::WhepSessions whep_;
  std::unique_ptr<net::TcpListener> listener_;
  std::unique_ptr<net::UdpEndpoint> rtp_socket_;
  std::unique_ptr<net::UdpEndpoint> rtcp_socket_;
  // One sendmmsg batch that every session's packets share during a pacing run (before the
  // socket in destruction order: it flushes into it).
  std::unique_ptr<chain::SendBatch> batch_;
  std::unique_ptr<net::Timer> pacer_timer_;
  std::uint64_t armed_us_ = StreamSession::kNoDeadline;  // when pacer_timer_ fires; off: never
  std::unique_ptr<net::Timer> housekeeper_;
  std::vector<std::uint8_t> rtcp_buffer_;
  detail::PublishRoutes publishing_{stats_};

  std::uint16_t rtp_port() const { return rtp_socket_ ? rtp_socket_->local_address().port() : 0; }
};

void StreamServer::Impl::start() {
  detail::PortPair ports = detail::open_port_pair(
      loop_, options_.bind_ip, options_.rtp_port,
      [this](auto data, const auto& from, auto) {
        guard_.run(CallbackKind::kRtsp, [&] { on_rtp_port(data, from); });
      },
      // The datagram's receive stamp is the real clock's; decisions use the server's clock.
      [this](auto data, const auto& from, std::uint64_t) { on_rtcp_guarded(data, from); });
  rtp_socket_ = std::move(ports.rtp);
  rtcp_socket_ = std::move(ports.rtcp);
  rtp_socket_->set_gso(options_.gso);
  whep_.start(*rtp_socket_);
  batch_ = std::make_unique<chain::SendBatch>(
      *rtp_socket_, wire::rtp_header_size(detail::kExtensionIds) + options_.max_payload_size +
                        net::kSrtpMaxTrailer);
  if (options_.listen) {
    auto listener = net::TcpListener::listen(
        loop_, options_.rtsp_listen, [this](std::unique_ptr<net::TcpConnection> c) {
          // On an exception the connection, owned by the handler, is closed with it.
          guard_.run(CallbackKind::kRtsp, [&] { on_connection(std::move(c)); });
        });
    if (!listener) {
      throw std::runtime_error("RTSP listen on " + options_.rtsp_listen.to_string() + ": " +
                               listener.error().message);
    }
    listener_ = std::move(listener.value());
  }
  // One-shot, re-armed by every run for the next deadline; if a run throws before it re-armed,
  // arm it here so that pacing never stops.
  pacer_timer_ = std::make_unique<net::Timer>(loop_, [this] {
    guard_.run(CallbackKind::kTimer, [&] { tick(); });
    if (!pacer_timer_->is_active()) arm_pacer();
  });
  // The pacing queue's whole storage, up front: no allocation when sessions come and go.
  pacer_.reserve(options_.max_sessions + options_.pushes.size());
  arm_pacer();
  housekeeper_ = std::make_unique<net::Timer>(
      loop_, [this] { guard_.run(CallbackKind::kTimer, [&] { housekeeping(); }); });
  housekeeper_->start(1000, 1000);
  start_pushes();
}

void StreamServer::Impl::start_pushes() {
  for (auto& entry : detail::make_push_sessions(options_, sessions_)) {
    // Counted against max_sessions like any session, but never refused (configured, not asked).
    options_.directory->try_add(entry->id, options_.worker, {}, 0, 0);
    SessionEntry& added = sessions_.add(std::move(entry));
    added.setup_us = clock_.now_us();
    if (!start_session(added, clock_.now_us())) {
      throw std::runtime_error("push session for " + added.stream->name + " could not start");
    }
  }
}

void StreamServer::Impl::stop() {
  // Every client that is being sent media hears that it ends (RTCP BYE), rather than timing out
  // on silence.
  if (rtp_socket_) {
    const std::uint64_t now = clock_.now_us();
    for (auto& [id, e] : sessions_.all()) {
      if (e->session && !e->session->said_bye()) stats_.rtcp_byes_sent += e->session->send_bye(now);
    }
    (void)connections_.flush_interleaved();  // the BYEs of interleaved sessions, as far as taken
  }
  pacer_.clear();
  whep_.stop();
  for (const auto& [id, e] : sessions_.all()) {
    options_.directory->remove(id);
  }
  sessions_.clear();
  (void)connections_.take_all();
  pacer_timer_.reset();
  armed_us_ = StreamSession::kNoDeadline;
  housekeeper_.reset();
  listener_.reset();
  batch_.reset();
  rtp_socket_.reset();
  rtcp_socket_.reset();
}

bool StreamServer::Impl::start_session(SessionEntry& entry, std::uint64_t now) {
  if (entry.session) return true;
  if (entry.tracks.empty()) return false;
  InterleavedOutput* interleaved = nullptr;
  if (entry.interleaved) {
    // Media of an interleaved session needs the connection it was set up on.
    RtspConnection* c = connections_.find(entry.connection);
    if (c == nullptr || !c->interleaved || !c->is_open()) return false;
    interleaved = &c->interleaved->queue();
  }
  auto controller = detail::session_controller(entry, options_);
  if (!controller) return false;
  if (options_.coupling && entry.owner &&
      controller->couple(options_.coupling->group_for(*entry.owner))) {
    core::log(core::LogLevel::kInfo, "server", "session %s coupled with the sessions of %s",
              entry.id.c_str(), options_.coupling->prefix_of(*entry.owner).c_str());
  }
  try {
    entry.session = std::make_unique<StreamSession>(
        entry.source, detail::session_transport(entry, *rtp_socket_, *rtcp_socket_, interleaved),
        clock_, detail::session_config(entry, options_), std::move(controller),
        [this, e = &entry](const BlockTrace& t) {
          // The entry outlives its session, which is the only caller.
          e->history.push(BlockRecord::from(t));
          if (on_block_) on_block_(t);
        });
  } catch (const std::exception&) {
    return false;  // SRTP could not be set up
  }
  sessions_.index_addresses(entry);
  entry.session->play(now);
  reschedule(entry);
  return true;
}

// ---- StreamServer: the public face, forwarded ----

StreamServer::StreamServer(net::EventLoop& loop, StreamServerOptions options, OnBlock on_block)
    : StreamServer(loop, default_clock(), std::move(options), std::move(on_block)) {}

StreamServer::StreamServer(net::EventLoop& loop, const net::Clock& clock,
                           StreamServerOptions options, OnBlock on_block)
    : impl_(std::make_unique<Impl>(loop, clock, std::move(options), std::move(on_block))) {}

StreamServer::~StreamServer() = default;
void StreamServer::start() {
  impl_->start();
}
void StreamServer::stop() {
  impl_->stop();
}

const net::SocketAddress& StreamServer::rtsp_address() const {
  return impl_->listener_ ? impl_->listener_->local_address() : impl_->options_.rtsp_listen;
}

void StreamServer::adopt_connection(std::unique_ptr<net::TcpConnection> tcp) {
  impl_->guard_.run(CallbackKind::kRtsp, [&] { impl_->on_connection(std::move(tcp)); });
}

std::uint16_t StreamServer::rtp_port() const {
  return impl_->rtp_port();
}
const ServerStats& StreamServer::stats() const {
  return impl_->stats_;
}
std::uint32_t StreamServer::worker() const {
  return impl_->options_.worker;
}
const CallbackGuard& StreamServer::callback_guard() const {
  return impl_->guard_;
}
CallbackGuard& StreamServer::callback_guard() {
  return impl_->guard_;
}
std::size_t StreamServer::session_count() const {
  return impl_->sessions_.size();
}
std::size_t StreamServer::connection_count() const {
  return impl_->connections_.size();
}

std::size_t StreamServer::connection_session_refs() const {
  return impl_->connections_.session_refs();
}
std::vector<const StreamSession*> StreamServer::sessions() const {
  return impl_->sessions_.started();
}

std::vector<SessionView> StreamServer::session_views() const {
  std::vector<SessionView> out;
  for (const auto& [id, e] : impl_->sessions_.all()) {
    if (!e->session) continue;
    SessionView v;
    v.session = e->session.get();
    v.stream = e->stream != nullptr ? e->stream->name : std::string();
    if (e->owner) {
      v.client = e->owner->ip_string();
    } else if (!e->tracks.empty()) {
      v.client = e->tracks.front().rtp_destination.to_string();  // a push target
    }
    v.transport = e->webrtc ? "webrtc" : e->interleaved ? "tcp" : (e->owner ? "udp" : "push");
    v.setup_us = e->setup_us;
    v.history = &e->history;
    out.push_back(std::move(v));
  }
  return out;
}

std::optional<std::vector<BlockRecord>> StreamServer::session_history(std::uint64_t number) const {
  for (const auto& [id, e] : impl_->sessions_.all()) {
    if (e->number == number) return e->history.records();
  }
  return std::nullopt;
}

bool StreamServer::end_session(std::uint64_t number) {
  for (const auto& [id, e] : impl_->sessions_.all()) {
    if (e->number != number) continue;
    // As when the server stops: the client hears that its media ends (RTCP BYE).
    if (e->session && !e->session->said_bye() && impl_->rtp_socket_) {
      impl_->stats_.rtcp_byes_sent += e->session->send_bye(impl_->clock_.now_us());
      (void)impl_->connections_.flush_interleaved();
    }
    const std::string key = id;  // remove_session() destroys the entry that holds `id`
    impl_->remove_session(key);
    ++impl_->stats_.sessions_ended_by_api;
    return true;
  }
  return false;
}

WhepOutcome StreamServer::whep_offer(std::string_view stream, std::string_view offer,
                                     const net::SocketAddress& peer,
                                     std::string_view candidate_ip) {
  WhepOutcome out{500, {}, {}, "internal error"};
  impl_->guard_.run(CallbackKind::kRtsp,
                    [&] { out = impl_->whep_.offer(stream, offer, peer, candidate_ip); });
  return out;
}

bool StreamServer::whep_delete(std::string_view session) {
  return impl_->whep_.end(std::string(session));
}

bool StreamServer::whep_quality(std::string_view session, const PageQuality& report) {
  return impl_->whep_.quality(std::string(session), report);
}

void StreamServer::set_session_control(const SessionControl& control) {
  StreamServerOptions& o = impl_->options_;
  o.policy = control.policy;
  o.player_rate = control.player_rate;
  o.player_adaptation = control.player_adaptation;
  o.player_policy = control.player_policy;
  o.browser_client_policy = control.browser_client_policy;
  o.browser_alert_us = control.browser_alert_us;
  o.browser_start_rate = control.browser_start_rate;
  o.browser_repaid_burst_bytes = control.browser_repaid_burst_bytes;
  o.discard = control.discard;
  o.discard_seed = control.discard_seed;
}

std::uint64_t StreamServer::now_us() const {
  return impl_->clock_.now_us();
}

void StreamServer::run_housekeeping() {
  impl_->housekeeping();
}
void StreamServer::run_pacing() {
  impl_->tick();
}
std::uint64_t StreamServer::next_pacing_due_us() const {
  return impl_->pacer_.next_due();
}
std::uint64_t StreamServer::next_pacing_run_us() const {
  return impl_->pacer_.next_run();
}

std::uint64_t StreamServer::attach_connection(const net::SocketAddress& peer) {
  auto c = std::make_unique<RtspConnection>();
  c->peer = peer;
  RtspConnection* admitted = impl_->admit(std::move(c));
  return admitted == nullptr ? 0 : admitted->id;
}

void StreamServer::receive(std::uint64_t id, std::span<const std::uint8_t> bytes) {
  const RtspConnection* c = impl_->connections_.find(id);
  if (c == nullptr || c->tcp || !c->is_open()) return;
  impl_->on_data_guarded(id, bytes);
}

std::string StreamServer::take_output(std::uint64_t id) {
  return impl_->connections_.take_output(id);
}
bool StreamServer::connection_open(std::uint64_t id) const {
  return impl_->connections_.is_open(id);
}

void StreamServer::detach_connection(std::uint64_t id) {
  const RtspConnection* c = impl_->connections_.find(id);
  if (c == nullptr || c->tcp) return;
  impl_->close_connection(id);  // as if the peer hung up
}

void StreamServer::receive_rtcp(std::span<const std::uint8_t> data,
                                const net::SocketAddress& from) {
  impl_->on_rtcp_guarded(data, from);
}

}  // namespace predrop::server

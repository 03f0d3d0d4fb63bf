#include "predrop/server/stream_server.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "predrop/core/log.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/rtsp/rtsp_headers.hpp"
#include "predrop/rtsp/rtsp_message.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "predrop/wire/mikey.hpp"
#include "predrop/wire/rtcp.hpp"
#include "predrop/wire/rtp.hpp"

#include "interleaved_queue.hpp"

namespace predrop::server {

using net::random_u16;
using net::random_u32;

namespace {
// NTP-UTC timestamp (seconds since 1900 in the high 32 bits), for MIKEY's T payload.
std::uint64_t ntp_now() {
  constexpr std::uint64_t kNtpUnixOffsetS = 2208988800u;
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(since_epoch).count();
  const auto secs = static_cast<std::uint64_t>(us / 1'000'000) + kNtpUnixOffsetS;
  const auto frac = (static_cast<std::uint64_t>(us % 1'000'000) << 32) / 1'000'000;
  return (secs << 32) | frac;
}
}  // namespace

namespace {
constexpr std::uint8_t kStageExtId = 1;
constexpr std::uint8_t kAbsSendTimeExtId = 2;
constexpr std::string_view kPublic =
    "OPTIONS, DESCRIBE, SETUP, PLAY, PAUSE, TEARDOWN, GET_PARAMETER";
// A client of ours announces that it sends PDFB reports; other players get the fixed rate.
constexpr std::string_view kFeedbackHeader = "X-Predrop-Feedback";
// Connections past max_connections: each waits at most this long for the request it is to be
// refused (503), and at most this many such connections are open at once; beyond that a new
// connection is closed at once, so that a flood cannot hoard file descriptors.
constexpr std::uint64_t kOverLimitIdleUs = 2'000'000;
constexpr std::size_t kSessionIdBytes = 16;
bool same_ip(const std::optional<net::SocketAddress>& owner, const net::SocketAddress& peer) {
  return owner && owner->is_v4() == peer.is_v4() &&
         std::equal(owner->ip_bytes(), owner->ip_bytes() + owner->ip_size(), peer.ip_bytes());
}

std::size_t over_limit_allowance(std::size_t max_connections) {
  return std::max<std::size_t>(16, max_connections / 8);
}

// The clock of servers constructed without one.
const net::Clock& default_clock() {
  static const net::MonotonicClock clock;
  return clock;
}

// What the client may send interleaved is RTCP (RR, SDES, BYE, PDFB): a frame longer than the
// server's RTCP buffer is no RTCP compound, and is skipped rather than waited for.
constexpr std::size_t kMaxInterleavedIn = 4096;

rtsp::RtspParserLimits connection_limits() {
  rtsp::RtspParserLimits limits;
  limits.max_interleaved_bytes = kMaxInterleavedIn;
  return limits;
}

}  // namespace

struct StreamServer::Connection {
  std::uint64_t id = 0;
  std::unique_ptr<net::TcpConnection> tcp;
  net::SocketAddress peer;
  rtsp::RtspRequestParser parser{connection_limits()};
  bool over_limit = false;
  // Input received but not yet parsed: all of it while the client does not read our replies
  // (reading_paused), else only during one on_data call.
  std::string input;
  std::size_t input_used = 0;  // bytes of `input` already given to the parser
  bool reading_paused = false;
  std::size_t unparsed() const { return input.size() - input_used; }
  // Clock time of the last byte received (or of the accept): housekeeping closes a connection
  // that stays silent for longer than its idle limit (idle_limit_us()).
  std::uint64_t last_activity_us = 0;
  // Clock time since when an incomplete request has sat in the parser (0 = none): a request
  // must be complete within the idle timeout of its first byte (slow-loris clients that trickle
  // a byte at a time never reset the clock).
  std::uint64_t partial_since_us = 0;
  // SDES keys handed out in DESCRIBE on this connection, per stream: SETUP uses the same key.
  std::map<std::string, wire::SrtpKeyMaterial, std::less<>> keys;
  // Live sessions set up on this connection (pruned when they end): while there is one, the
  // connection has the longer idle limit of a player's control channel.
  std::vector<std::string> sessions;

  // An attached connection (tcp == nullptr; tests and fuzzing) keeps what the server writes
  // in `output` until taken, and that is its write queue.
  std::string output;
  bool attached_open = true;

  // Interleaved sessions' media queue, created by the first RTP/AVP/TCP SETUP, and the client's
  // RTCP channels on this connection, by channel: the session id. (Last member: it points at
  // `tcp` and `output`.)
  std::map<std::uint8_t, std::string> rtcp_channels;
  std::set<std::uint8_t> channels_in_use;
  std::unique_ptr<detail::InterleavedQueue> media;

  bool is_open() const { return tcp ? tcp->is_open() : attached_open; }
  void write(std::string bytes) {
    // A media frame half written goes out whole before the reply (the stream stays framed).
    if (media) bytes.insert(0, media->take_partial());
    if (tcp) {
      (void)tcp->write(std::move(bytes));
    } else if (attached_open) {
      output += bytes;
    }
  }
  std::size_t write_queue_bytes() const { return tcp ? tcp->write_queue_bytes() : output.size(); }
  void close_after_writes() {
    if (tcp) {
      tcp->close_after_writes();
    } else {
      attached_open = false;
    }
  }
  void close() {
    if (tcp) {
      tcp->close();
    } else {
      attached_open = false;
    }
  }
};

struct StreamServer::SessionEntry {
  std::string id;            // the credential a request names it by; never shown elsewhere
  std::uint64_t number = 0;  // public ordinal (1, 2, ...), the metrics label
  // IP address the session was set up from (port ignored): only requests from it control the
  // session. Empty for push sessions, which nobody controls.
  std::optional<net::SocketAddress> owner;
  std::uint64_t connection = 0;  // id of the connection it was set up on
  const StreamDefinition* stream = nullptr;
  wire::SrtpKeyMaterial key;
  bool feedback = false;
  std::vector<SessionTrack> tracks;
  std::vector<std::uint32_t> track_ids;    // trackID=N of each track, for RTP-Info
  std::unique_ptr<StreamSession> session;  // created at the first PLAY
  std::uint64_t last_request_us = 0;
  std::string base_url;
  bool interleaved = false;      // its tracks go on connection `connection` (RTP/AVP/TCP)
  std::uint32_t slot = kNoSlot;  // its key in the pacing queue, once it was ever queued
  static constexpr std::uint32_t kNoSlot = UINT32_MAX;
};

StreamServer::StreamServer(net::EventLoop& loop, StreamServerOptions options, OnBlock on_block)
    : StreamServer(loop, default_clock(), std::move(options), std::move(on_block)) {}

StreamServer::StreamServer(net::EventLoop& loop, const net::Clock& clock,
                           StreamServerOptions options, OnBlock on_block)
    : loop_(loop),
      clock_(clock),
      options_(std::move(options)),
      on_block_(std::move(on_block)),
      rtcp_buffer_(4096 + net::kSrtpMaxTrailer) {
  if (!options_.directory) options_.directory = std::make_shared<SessionDirectory>();
}

StreamServer::~StreamServer() {
  stop();
}

const net::SocketAddress& StreamServer::rtsp_address() const {
  return listener_ ? listener_->local_address() : options_.rtsp_listen;
}

void StreamServer::adopt_connection(std::unique_ptr<net::TcpConnection> tcp) {
  guard_.run(CallbackKind::kRtsp, [&] { on_connection(std::move(tcp)); });
}

std::uint16_t StreamServer::rtp_port() const {
  return rtp_socket_->local_address().port();
}

const StreamDefinition* StreamServer::find_stream(std::string_view name) const {
  for (const auto& s : options_.streams) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::size_t StreamServer::connection_session_refs() const {
  std::size_t n = 0;
  for (const auto& [id, c] : connections_) {
    n += c->sessions.size();
  }
  return n;
}

std::vector<const StreamSession*> StreamServer::sessions() const {
  std::vector<const StreamSession*> out;
  for (const auto& [id, e] : sessions_) {
    if (e->session) out.push_back(e->session.get());
  }
  return out;
}

std::uint32_t StreamServer::new_ssrc(const SessionEntry& entry) {
  // Random (RFC 3550 §8.1), and distinct among the session's own tracks.
  for (;;) {
    const std::uint32_t ssrc = random_u32();
    if (std::none_of(entry.tracks.begin(), entry.tracks.end(),
                     [ssrc](const SessionTrack& t) { return t.ssrc == ssrc; })) {
      return ssrc;
    }
  }
}

std::uint64_t StreamServer::next_session_number() {
  // Worker k of n numbers its sessions k+1, k+1+n, ...: unique in the process, so that the
  // metrics gathered from all workers never show one number twice.
  const std::uint64_t n = std::max<std::uint32_t>(1, options_.worker_count);
  return session_numbers_++ * n + options_.worker + 1;
}

std::string StreamServer::new_session_id() {
  // 128 random bits (RFC 2326 §12.37 ids are the only credential a request carries; an id
  // that counts or comes from a seeded PRNG can be guessed from one's own session).
  for (;;) {
    std::string id = net::random_hex(kSessionIdBytes);
    if (!sessions_.contains(id)) return id;
  }
}

void StreamServer::start() {
  auto bind_ip = [&](std::uint16_t port) {
    auto a = net::SocketAddress::from_ip(options_.bind_ip, port);
    if (!a) throw std::runtime_error("bad bind address: " + a.error().message);
    return *a;
  };
  net::UdpOptions udp;
  udp.send_buffer_bytes = 4 << 20;
  udp.recv_buffer_bytes = 1 << 20;
  // The RTP/RTCP pair: an even port and the next one (RFC 3550 §11).
  for (std::uint16_t attempt = 0; attempt < 50 && !rtcp_socket_; ++attempt) {
    const std::uint16_t want = options_.rtp_port != 0
                                   ? options_.rtp_port
                                   : static_cast<std::uint16_t>(20000 + 2 * (random_u32() % 10000));
    auto rtp = net::UdpEndpoint::open(loop_, bind_ip(want), udp, [this](auto, const auto&, auto) {
      ++stats_.rtp_port_datagrams;
    });
    if (!rtp) {
      if (options_.rtp_port != 0) throw std::runtime_error("RTP port: " + rtp.error().message);
      continue;
    }
    auto rtcp = net::UdpEndpoint::open(
        loop_, bind_ip(static_cast<std::uint16_t>(want + 1)), udp,
        // The datagram's receive stamp is the real clock's; decisions use the server's clock.
        [this](auto data, const auto& from, std::uint64_t) { on_rtcp_guarded(data, from); });
    if (!rtcp) {
      if (options_.rtp_port != 0) throw std::runtime_error("RTCP port: " + rtcp.error().message);
      continue;
    }
    rtp_socket_ = std::move(rtp.value());
    rtcp_socket_ = std::move(rtcp.value());
  }
  if (!rtcp_socket_) throw std::runtime_error("no free RTP/RTCP port pair found");
  rtp_socket_->set_gso(options_.gso);
  batch_ = std::make_unique<chain::SendBatch>(
      *rtp_socket_, wire::rtp_header_size(wire::RtpExtensionIds{kStageExtId, kAbsSendTimeExtId}) +
                        options_.max_payload_size + net::kSrtpMaxTrailer);

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
  pacer_ = std::make_unique<net::Timer>(loop_, [this] {
    guard_.run(CallbackKind::kTimer, [&] { tick(); });
    if (!pacer_->is_active()) arm_pacer();
  });
  // The pacing queue's whole storage, up front: no allocation when sessions come and go.
  const std::size_t slots = options_.max_sessions + options_.pushes.size();
  schedule_.reserve(slots);
  slot_entries_.reserve(slots);
  slot_sessions_.reserve(slots);
  free_slots_.reserve(slots);
  arm_pacer();
  housekeeper_ = std::make_unique<net::Timer>(
      loop_, [this] { guard_.run(CallbackKind::kTimer, [&] { housekeeping(); }); });
  housekeeper_->start(1000, 1000);

  for (const PushTarget& push : options_.pushes) {
    const StreamDefinition* stream = find_stream(push.stream);
    if (stream == nullptr) throw std::runtime_error("push of unknown stream " + push.stream);
    auto entry = std::make_unique<SessionEntry>();
    entry->id = new_session_id();
    entry->number = next_session_number();
    entry->stream = stream;
    if (options_.srtp) entry->key = net::random_srtp_key(*options_.srtp);
    const auto streams = stream->media->streams();
    for (std::size_t i = 0; i < streams.size(); ++i) {
      auto dest = push.destination;
      dest = net::SocketAddress::from_ip(dest.ip_string(),
                                         static_cast<std::uint16_t>(dest.port() + 2 * i))
                 .value();
      auto rtcp_dest =
          net::SocketAddress::from_ip(dest.ip_string(), static_cast<std::uint16_t>(dest.port() + 1))
              .value();
      entry->tracks.push_back(SessionTrack{static_cast<std::uint8_t>(i), dest, rtcp_dest,
                                           new_ssrc(*entry), random_u16(), random_u32()});
      entry->track_ids.push_back(static_cast<std::uint32_t>(i));
    }
    // The SDP file describes the destination ports, as ffmpeg's own -sdp_file does.
    std::string sdp = describe(*stream, options_.srtp ? &entry->key : nullptr, "127.0.0.1");
    {
      std::string out;
      std::size_t pos = 0;
      std::size_t track = 0;
      while (pos < sdp.size()) {
        std::size_t eol = sdp.find("\r\n", pos);
        if (eol == std::string::npos) eol = sdp.size();
        std::string line = sdp.substr(pos, eol - pos);
        if (line.rfind("m=", 0) == 0) {
          const std::size_t sp1 = line.find(' ');
          const std::size_t sp2 = line.find(' ', sp1 + 1);
          line = line.substr(0, sp1 + 1) + std::to_string(push.destination.port() + 2 * track++) +
                 line.substr(sp2);
        } else if (line.rfind("c=", 0) == 0) {
          line = std::string("c=IN ") + (push.destination.is_v4() ? "IP4 " : "IP6 ") +
                 push.destination.ip_string();
        }
        out += line + "\r\n";
        pos = eol + 2;
      }
      std::ofstream f(push.sdp_file, std::ios::binary | std::ios::trunc);
      f << out;
      if (!f) throw std::runtime_error("cannot write SDP file " + push.sdp_file);
    }
    const std::string id = entry->id;
    auto& ref = *entry;
    // Counted against max_sessions like any session, but never refused (configured, not asked).
    options_.directory->try_add(id, options_.worker, {}, 0, 0);
    sessions_.emplace(id, std::move(entry));
    if (!start_session(ref, clock_.now_us())) {
      throw std::runtime_error("push session for " + push.stream + " could not start");
    }
  }
}

void StreamServer::stop() {
  // Every client that is being sent media hears that it ends (RTCP BYE), rather than timing
  // out on silence.
  if (rtp_socket_) {
    const std::uint64_t now = clock_.now_us();
    for (auto& [id, e] : sessions_) {
      if (e->session && !e->session->said_bye()) stats_.rtcp_byes_sent += e->session->send_bye(now);
    }
    flush_interleaved();  // the BYEs of interleaved sessions, as far as the sockets take them
  }
  schedule_.clear();
  slot_entries_.clear();
  slot_sessions_.clear();
  free_slots_.clear();
  for (const auto& [id, e] : sessions_) {
    options_.directory->remove(id);
  }
  sessions_.clear();
  session_by_address_.clear();
  for (auto& [id, c] : connections_) {
    c->close();
  }
  connections_.clear();
  paused_.clear();
  if (pacer_) pacer_.reset();
  armed_us_ = StreamSession::kNoDeadline;
  if (housekeeper_) housekeeper_.reset();
  if (listener_) listener_.reset();
  batch_.reset();
  rtp_socket_.reset();
  rtcp_socket_.reset();
}

std::string StreamServer::describe(const StreamDefinition& stream, const wire::SrtpKeyMaterial* key,
                                   std::string_view host) const {
  rtsp::SdpSession s;
  s.session_id = std::to_string(random_u32());
  s.origin_address = std::string(host);
  s.name = stream.name;
  s.tool = "predrop";
  s.control = "*";
  char range[64];
  std::snprintf(range, sizeof range, "npt=0-%.3f",
                static_cast<double>(stream.media->duration_us()) / 1e6);
  if (!options_.loop) s.range = range;
  if (!options_.block_attribute.empty()) {
    s.attributes.push_back("x-predrop-block:" + options_.block_attribute);
  }
  const auto streams = stream.media->streams();
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const media::StreamInfo& info = streams[i];
    rtsp::SdpMedia m;
    m.kind = info.media();
    m.payload_type = info.payload_type;
    m.rtpmap = info.encoding;
    m.fmtp = info.fmtp;
    m.control = "trackID=" + std::to_string(i);
    if (options_.srtp && key != nullptr) {
      m.proto = "RTP/SAVP";
      rtsp::SdpCrypto crypto;
      crypto.tag = 1;
      crypto.suite = std::string(wire::suite_name(*options_.srtp));
      crypto.key_params = "inline:" + wire::base64_encode(key->span());
      m.crypto.push_back(std::move(crypto));
      // The same key again as MIKEY (RFC 4567 a=key-mgmt), which is what GStreamer's rtspsrc
      // and live555-based players read; ffmpeg reads a=crypto and ignores this.
      wire::MikeyFields mikey;
      mikey.csb_id = random_u32();
      mikey.ntp_utc = ntp_now();
      for (auto& b : mikey.rand) {
        b = static_cast<std::uint8_t>(random_u32());
      }
      m.attributes.push_back(
          wire::format_key_mgmt_attribute(*options_.srtp, *key, mikey).substr(2));
    }
    m.extmaps.push_back(
        rtsp::SdpExtmap{kStageExtId, "", std::string(wire::kStageExtensionUri), ""});
    m.extmaps.push_back(
        rtsp::SdpExtmap{kAbsSendTimeExtId, "", std::string(wire::kAbsSendTimeUri), ""});
    s.media.push_back(std::move(m));
  }
  auto text = rtsp::build_sdp(s);
  return text ? *text : std::string();
}

bool StreamServer::start_session(SessionEntry& entry, std::uint64_t now_us) {
  if (entry.session) return true;
  if (entry.tracks.empty()) return false;
  StreamSessionConfig cfg;
  cfg.id = entry.id;
  cfg.number = entry.number;
  cfg.tracks = entry.tracks;
  cfg.extension_ids = wire::RtpExtensionIds{kStageExtId, kAbsSendTimeExtId};
  cfg.srtp_suite = options_.srtp;
  cfg.key = entry.key;
  cfg.discard = options_.discard;
  cfg.discard_seed = options_.discard_seed ^ std::hash<std::string>{}(entry.id);
  cfg.paced = options_.paced;
  cfg.loop = options_.loop;
  cfg.max_stages = options_.max_stages;
  cfg.feedback = entry.feedback;
  cfg.report_timeout_us = options_.report_timeout_us;
  cfg.max_payload_size = options_.max_payload_size;
  if (entry.interleaved) {
    // Media of an interleaved session needs the connection it was set up on.
    auto c = connections_.find(entry.connection);
    if (c == connections_.end() || !c->second->media || !c->second->is_open()) return false;
    cfg.interleaved_output = c->second->media.get();
  }
  core::PolicyConfig policy = options_.policy;
  if (!entry.feedback) {
    if (options_.player_adaptation == PlayerAdaptation::kReceiverReports) {
      policy = options_.player_policy;
      cfg.rr_adaptation = true;
    } else {
      policy.policy = "fixed";
      policy.fixed_rate = options_.player_rate;
    }
  }
  auto controller = core::make_rate_controller(policy);
  if (!controller) return false;
  try {
    entry.session =
        std::make_unique<StreamSession>(entry.stream->media, *rtp_socket_, *rtcp_socket_, clock_,
                                        cfg, std::move(controller.value()), on_block_);
  } catch (const std::exception&) {
    return false;
  }
  for (const auto& t : entry.tracks) {
    if (t.interleaved) continue;  // its RTCP comes on the connection, not from an address
    session_by_address_[t.rtp_destination] = entry.id;
    if (t.rtcp_destination) session_by_address_[*t.rtcp_destination] = entry.id;
  }
  entry.session->play(now_us);
  reschedule(entry);
  return true;
}

void StreamServer::on_connection(std::unique_ptr<net::TcpConnection> tcp) {
  auto c = std::make_unique<Connection>();
  c->tcp = std::move(tcp);
  c->peer = c->tcp->peer_address();
  Connection* admitted = admit(std::move(c));
  if (admitted == nullptr) return;
  // The handlers name the connection by id: it may be gone by the time libuv calls back.
  const std::uint64_t id = admitted->id;
  auto st =
      admitted->tcp->start([this, id](std::span<const std::uint8_t> d) { on_data_guarded(id, d); },
                           [this, id](const core::Status&) {
                             guard_.run(CallbackKind::kRtsp, [&] { close_connection(id); });
                           });
  if (!st) close_connection(id);
}

StreamServer::Connection* StreamServer::admit(std::unique_ptr<Connection> c) {
  c->id = ++connection_ids_;
  c->last_activity_us = clock_.now_us();
  prune_connections();
  if (connections_.size() >= options_.max_connections) {
    // Over the limit: the first request gets 503 and the connection closes (RFC 2326 §11.3.6).
    ++stats_.connections_refused;
    if (connections_.size() >=
        options_.max_connections + over_limit_allowance(options_.max_connections)) {
      c->close();
      return nullptr;
    }
    c->over_limit = true;
  } else {
    ++stats_.connections_accepted;
  }
  Connection* raw = c.get();
  connections_.emplace(raw->id, std::move(c));
  return raw;
}

void StreamServer::on_data_guarded(std::uint64_t id, std::span<const std::uint8_t> data) {
  if (!guard_.run(CallbackKind::kRtsp, [&] { on_data(id, data); })) drop_connection(id);
}

std::uint64_t StreamServer::attach_connection(const net::SocketAddress& peer) {
  auto c = std::make_unique<Connection>();
  c->peer = peer;
  Connection* admitted = admit(std::move(c));
  return admitted == nullptr ? 0 : admitted->id;
}

void StreamServer::receive(std::uint64_t id, std::span<const std::uint8_t> bytes) {
  auto it = connections_.find(id);
  if (it == connections_.end() || it->second->tcp || !it->second->is_open()) return;
  on_data_guarded(id, bytes);
}

std::string StreamServer::take_output(std::uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end() || it->second->tcp) return {};
  return std::exchange(it->second->output, {});
}

bool StreamServer::connection_open(std::uint64_t id) const {
  auto it = connections_.find(id);
  return it != connections_.end() && it->second->is_open();
}

void StreamServer::detach_connection(std::uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end() || it->second->tcp) return;
  close_connection(id);  // as if the peer hung up
}

void StreamServer::receive_rtcp(std::span<const std::uint8_t> data,
                                const net::SocketAddress& from) {
  on_rtcp_guarded(data, from);
}

void StreamServer::prune_connections() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    it = it->second->is_open() ? std::next(it) : forget_connection(it);
  }
}

StreamServer::ConnectionMap::iterator StreamServer::forget_connection(ConnectionMap::iterator it) {
  paused_.erase(it->first);
  Connection& c = *it->second;
  // Interleaved sessions end with their connection: their media has nowhere else to go
  // (RFC 2326 §10.12). UDP sessions outlive it.
  const std::vector<std::string> carried = c.sessions;
  for (const auto& id : carried) {
    auto s = sessions_.find(id);
    if (s != sessions_.end() && s->second->interleaved) remove_session(id);
  }
  const rtsp::InterleavedCounters& dropped = c.parser.interleaved_counters();
  stats_.interleaved_bad_length += dropped.bad_length;
  if (c.parser.in_interleaved_frame()) ++stats_.interleaved_truncated;
  if (c.media) interleaved_connections_.erase(it->first);
  // TcpConnection may be destroyed from inside its own callbacks; queued writes still go out
  // when close_after_writes() was called first.
  return connections_.erase(it);
}

std::uint64_t StreamServer::idle_limit_us(const Connection& c) const {
  const std::uint64_t idle = static_cast<std::uint64_t>(options_.rtsp_idle_timeout_s) * 1'000'000;
  if (c.over_limit) return std::min(idle, kOverLimitIdleUs);
  // A connection that carries a session is the player's control channel: players ping every
  // session timeout / 2 (FFmpeg), which the plain idle timeout would race, so it lives as long
  // as the session may.
  if (!c.sessions.empty()) {
    return static_cast<std::uint64_t>(
               std::max(options_.rtsp_idle_timeout_s, options_.session_timeout_s + 10)) *
           1'000'000;
  }
  return idle;
}

void StreamServer::drop_connection(std::uint64_t id) {
  // A handler threw while serving this connection: its state is not to be trusted, so it goes
  // (its sessions stay: they may be controlled from a new connection).
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  ++stats_.connections_closed_by_exception;
  it->second->close();
  forget_connection(it);
}

void StreamServer::on_rtcp_guarded(std::span<const std::uint8_t> data,
                                   const net::SocketAddress& from) {
  if (guard_.run(CallbackKind::kRtcp, [&] { on_rtcp_datagram(data, from, clock_.now_us()); })) {
    return;
  }
  // The session the datagram was for may be half-updated (its controller, its counters): end
  // it, and only it.
  if (auto it = session_by_address_.find(from); it != session_by_address_.end()) {
    const std::string id = it->second;
    ++stats_.sessions_closed_by_exception;
    remove_session(id);
  }
}

void StreamServer::inject_fault(CallbackKind kind) {
  if (options_.fault_injection) options_.fault_injection(kind);
}

void StreamServer::close_connection(std::uint64_t id) {
  // Sessions outlive their RTSP connection (clients may reconnect for TEARDOWN); they end by
  // TEARDOWN or by the session timeout.
  auto it = connections_.find(id);
  if (it != connections_.end()) forget_connection(it);
}

void StreamServer::on_data(std::uint64_t id, std::span<const std::uint8_t> data) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  Connection& c = *it->second;
  c.last_activity_us = clock_.now_us();
  stats_.rtsp_bytes_received += data.size();
  c.input.append(reinterpret_cast<const char*>(data.data()), data.size());
  if (!c.reading_paused) {
    serve(c);
  } else if (c.write_queue_bytes() + c.unparsed() > options_.max_write_queue_bytes) {
    // The client does not read our replies: what it sends waits unparsed, within the bound.
    close_for_backlog(c);
  }
  if (!c.is_open()) forget_connection(it);  // closed meanwhile: forget it now
}

void StreamServer::close_for_backlog(Connection& c) {
  ++stats_.connections_closed_backlog;
  c.close();
}

void StreamServer::serve(Connection& c) {
  // Buffered (pipelined) requests first, then the input not yet parsed.
  auto ev = c.parser.next();
  for (;;) {
    if (ev == rtsp::RtspParseEvent::kNeedMore) {
      if (c.unparsed() == 0) break;
      // At most one read's worth at a time, as if it came from the socket: the parser bounds
      // what it buffers, and held input may be much more.
      const std::size_t n = std::min(c.unparsed(), net::TcpConnection::kReadBufferSize);
      const std::string_view in(c.input.data() + c.input_used, n);
      c.input_used += n;
      ev = c.parser.feed(in);
      if (c.unparsed() == 0) {
        c.input.clear();
        c.input_used = 0;
      }
      continue;
    }
    if (ev == rtsp::RtspParseEvent::kError) {
      ++stats_.bad_requests;
      const rtsp::RtspParseError& e = c.parser.error();
      rtsp::RtspResponse r = rtsp::make_response(e.status, e.cseq);
      r.set_body("text/plain", e.message + "\r\n");
      c.write(rtsp::serialize(r));
      if (e.fatal) {
        // The reply goes out first; housekeeping forgets the connection once it is closed.
        c.close_after_writes();
        return;
      }
    } else if (ev == rtsp::RtspParseEvent::kMessage) {
      ++stats_.requests;
      rtsp::RtspRequest request = c.parser.take_request();
      if (c.over_limit) {
        rtsp::RtspResponse r = rtsp::make_response(503, request.cseq);
        r.headers.set("Retry-After", "5");
        c.write(rtsp::serialize(r));
        c.close_after_writes();
        return;
      }
      c.write(handle(c, request));
      if (!c.is_open()) return;
    } else if (ev == rtsp::RtspParseEvent::kInterleaved) {
      on_interleaved(c, c.parser.interleaved());
      if (!c.is_open()) return;
    }
    const std::size_t queued = c.write_queue_bytes();
    if (queued + c.unparsed() > options_.max_write_queue_bytes) {
      close_for_backlog(c);
      return;
    }
    if (queued > pause_threshold()) {
      // The kernel's send buffer is full and our queue grows: the client is not reading. Stop
      // answering it until the queue drains (tick() resumes it).
      c.reading_paused = true;
      c.input.erase(0, c.input_used);  // keep only what waits
      c.input_used = 0;
      paused_.insert(c.id);
      ++stats_.connections_paused;
      arm_pacer();  // it is polled every millisecond until its queue drains
      return;
    }
    ev = c.parser.next();
  }
  if (c.parser.buffered() == 0) {
    c.partial_since_us = 0;
  } else if (c.partial_since_us == 0) {
    c.partial_since_us = clock_.now_us();
  }
}

std::size_t StreamServer::pause_threshold() const {
  return options_.max_write_queue_bytes / 4;
}

void StreamServer::resume_paused() {
  for (auto it = paused_.begin(); it != paused_.end();) {
    auto c = connections_.find(*it);
    if (c == connections_.end() || !c->second->is_open()) {
      it = paused_.erase(it);
      continue;
    }
    Connection& conn = *c->second;
    if (conn.write_queue_bytes() > pause_threshold() / 2) {
      ++it;
      continue;
    }
    it = paused_.erase(it);
    conn.reading_paused = false;
    // May pause it again, or close it.
    if (!guard_.run(CallbackKind::kRtsp, [&] { serve(conn); })) {
      ++stats_.connections_closed_by_exception;
      conn.close();
    }
    if (!conn.is_open()) forget_connection(c);
  }
}

namespace {
rtsp::RtspResponse error_response(int status, std::uint32_t cseq, std::string_view why) {
  rtsp::RtspResponse r = rtsp::make_response(status, cseq);
  r.set_body("text/plain", std::string(why) + "\r\n");
  return r;
}
}  // namespace

// The request as the method handlers see it: the connection it came on, the request, the
// session its Session header names (nullptr if none) and the time it is handled at.
struct StreamServer::Request {
  Connection& c;
  rtsp::RtspRequest& req;
  SessionEntry* entry;
  std::uint64_t now_us;
};

rtsp::RtspResponse StreamServer::ok_response(const Request& q) const {
  rtsp::RtspResponse r = rtsp::make_response(200, q.req.cseq);
  r.headers.set("Server", "predrop");
  if (q.entry != nullptr) r.set_session(q.entry->id, options_.session_timeout_s);
  return r;
}

std::string StreamServer::handle(Connection& c, rtsp::RtspRequest& req) {
  inject_fault(CallbackKind::kRtsp);
  const std::uint64_t now = clock_.now_us();
  // Session header, when the request names one.
  SessionEntry* entry = nullptr;
  if (auto sh = req.headers.get("Session")) {
    auto parsed = rtsp::parse_session(*sh);
    if (!parsed) return rtsp::serialize(error_response(454, req.cseq, "malformed Session header"));
    auto it = sessions_.find(parsed->id);
    if (it == sessions_.end()) {
      if (auto other = options_.directory->find(parsed->id);
          other && other->worker != options_.worker && other->owner_ip == c.peer.ip_string()) {
        // Its owner, on a connection that went to another worker (a reconnect): a session is
        // bound to the worker of the connection that set it up (docs/rtsp.md "Workers").
        ++stats_.session_requests_other_worker;
        core::log(core::LogLevel::kWarn, "rtsp",
                  "worker %u: %s from %s names a session of worker %u: answered 454 (a session "
                  "is controlled on the worker of the connection that set it up)",
                  options_.worker, std::string(rtsp::to_string(req.method)).c_str(),
                  c.peer.to_string().c_str(), other->worker);
        return rtsp::serialize(error_response(454, req.cseq,
                                              "session " + parsed->id +
                                                  " is held by another worker of this server; "
                                                  "control it on the connection that set it up"));
      }
    }
    // A session answers only to the address that set it up; to anyone else it does not exist
    // (the same 454 as an unknown id, so the answer tells nothing about other clients).
    const bool foreign = it != sessions_.end() && !same_ip(it->second->owner, c.peer);
    if (foreign) ++stats_.session_requests_foreign;
    if (it == sessions_.end() || foreign) {
      return rtsp::serialize(error_response(454, req.cseq, "no session " + parsed->id));
    }
    entry = it->second.get();
    entry->last_request_us = now;
  }
  Request q{c, req, entry, now};
  const rtsp::RtspResponse response = dispatch(q);
  // PLAY, PAUSE (and any later method) may have moved the session's next due time.
  if (q.entry != nullptr) reschedule(*q.entry);
  if (needs_polling() && armed_us_ > now + 1000) arm_pacer();  // e.g. a first interleaved SETUP
  return rtsp::serialize(response);
}

rtsp::RtspResponse StreamServer::dispatch(Request& q) {
  switch (q.req.method) {
    case rtsp::RtspMethod::kOptions:
      return handle_options(q);
    case rtsp::RtspMethod::kGetParameter:
      return handle_get_parameter(q);
    case rtsp::RtspMethod::kDescribe:
      return handle_describe(q);
    case rtsp::RtspMethod::kSetup:
      return handle_setup(q);
    case rtsp::RtspMethod::kPlay:
      return handle_play(q);
    case rtsp::RtspMethod::kPause:
      return handle_pause(q);
    case rtsp::RtspMethod::kTeardown:
      return handle_teardown(q);
    case rtsp::RtspMethod::kAnnounce:
    case rtsp::RtspMethod::kRecord:
    case rtsp::RtspMethod::kSetParameter:
    case rtsp::RtspMethod::kRedirect: {
      rtsp::RtspResponse e = error_response(405, q.req.cseq, "this server only plays");
      e.headers.set("Allow", std::string(kPublic));
      return e;
    }
    case rtsp::RtspMethod::kUnknown:
      break;
  }
  return error_response(501, q.req.cseq, "method not implemented");
}

rtsp::RtspResponse StreamServer::handle_options(Request& q) {
  rtsp::RtspResponse r = ok_response(q);
  r.headers.set("Public", std::string(kPublic));
  return r;
}

rtsp::RtspResponse StreamServer::handle_get_parameter(Request& q) {
  // The keep-alive players send (FFmpeg, VLC): answered like OPTIONS; handle() has already
  // refreshed the session it names.
  return handle_options(q);
}

StreamServer::StreamLookup StreamServer::requested_stream(const Request& q) const {
  StreamLookup out;
  auto url = rtsp::parse_rtsp_url(q.req.url);
  if (!url) {
    out.error = error_response(400, q.req.cseq, url.error().message);
    return out;
  }
  out.url = std::move(url.value());
  out.stream = find_stream(out.url.stream);
  if (out.stream == nullptr) {
    out.error = error_response(404, q.req.cseq, "no stream named '" + out.url.stream + "'");
  }
  return out;
}

rtsp::RtspResponse StreamServer::handle_describe(Request& q) {
  StreamLookup found = requested_stream(q);
  if (found.error) return std::move(*found.error);
  const StreamDefinition* stream = found.stream;
  wire::SrtpKeyMaterial* key = nullptr;
  if (options_.srtp) {
    auto [it, fresh] = q.c.keys.try_emplace(stream->name);
    if (fresh) it->second = net::random_srtp_key(*options_.srtp);
    key = &it->second;
  }
  std::string base = q.req.url;
  if (!base.empty() && base.back() != '/') base += '/';
  rtsp::RtspResponse r = ok_response(q);
  r.headers.set("Content-Base", base);
  r.set_body("application/sdp", describe(*stream, key, found.url.host));
  return r;
}

StreamServer::SessionEntry* StreamServer::create_session(Request& q, const StreamDefinition& stream,
                                                         std::optional<rtsp::RtspResponse>& error) {
  auto refuse_total = [&] {
    ++stats_.sessions_refused;
    error = error_response(453, q.req.cseq, "session limit reached");
    return nullptr;
  };
  auto refuse_address = [&] {
    ++stats_.sessions_refused_per_address;
    error = error_response(453, q.req.cseq, "session limit for this address reached");
    return nullptr;
  };
  auto fresh = std::make_unique<SessionEntry>();
  fresh->id = new_session_id();
  // The limits hold for the process (with several workers the directory is shared); one
  // address must not take every session, since max_sessions is shared by all clients.
  switch (options_.directory->try_add(fresh->id, options_.worker, q.c.peer.ip_string(),
                                      options_.max_sessions, options_.max_sessions_per_address)) {
    case SessionDirectory::Admit::kAdded:
      break;
    case SessionDirectory::Admit::kFull:
      return refuse_total();
    case SessionDirectory::Admit::kAddressFull:
      return refuse_address();
  }
  fresh->number = next_session_number();
  fresh->owner = q.c.peer;
  fresh->connection = q.c.id;
  fresh->stream = &stream;
  fresh->last_request_us = q.now_us;
  if (options_.srtp) {
    auto it = q.c.keys.find(stream.name);
    // A client that skipped DESCRIBE on this connection gets a key it cannot know; it must
    // DESCRIBE first (every RTSP player does).
    if (it == q.c.keys.end()) {
      options_.directory->remove(fresh->id);
      error = error_response(455, q.req.cseq, "DESCRIBE first: the keys are in the SDP");
      return nullptr;
    }
    fresh->key = it->second;
  }
  fresh->feedback = q.req.headers.get(kFeedbackHeader).has_value();
  fresh->base_url = q.req.url.substr(0, q.req.url.rfind('/'));
  SessionEntry* entry = fresh.get();
  sessions_.emplace(fresh->id, std::move(fresh));
  ++stats_.sessions_created;
  q.c.sessions.push_back(entry->id);  // from now on the connection has the longer idle limit
  return entry;
}

rtsp::RtspResponse StreamServer::handle_setup(Request& q) {
  const std::uint32_t cseq = q.req.cseq;
  StreamLookup found = requested_stream(q);
  if (found.error) return std::move(*found.error);
  const StreamDefinition* stream = found.stream;
  const std::uint32_t track = found.url.track.value_or(0);
  if (track >= stream->media->streams().size()) {
    return error_response(404, cseq, "no such track");
  }
  auto transport_value = q.req.headers.get("Transport");
  if (!transport_value) return error_response(400, cseq, "Transport missing");
  auto offers = rtsp::parse_transport(*transport_value);
  if (!offers) return error_response(461, cseq, offers.error().message);
  rtsp::TransportPolicy policy;
  policy.allow_interleaved = options_.interleaved_queue_bytes > 0;
  auto chosen = rtsp::select_transport(*offers, policy);
  if (!chosen) {
    return error_response(461, cseq,
                          policy.allow_interleaved
                              ? "only unicast UDP with client_port, or RTP/AVP/TCP interleaved"
                              : "only UDP unicast with client_port");
  }
  const rtsp::TransportSpec spec = (*offers)[*chosen];
  const bool interleaved = spec.lower == rtsp::LowerTransport::kTcp;
  if (q.entry != nullptr && !q.entry->tracks.empty() && q.entry->interleaved != interleaved) {
    return error_response(461, cseq, "every track of a session on the same transport");
  }
  if (interleaved && q.entry != nullptr && q.entry->connection != q.c.id) {
    return error_response(455, cseq, "interleaved tracks are set up on the session's connection");
  }
  if (q.entry != nullptr && q.entry->stream != stream) {
    return error_response(459, cseq, "session belongs to another stream");
  }
  if (q.entry != nullptr && q.entry->session) {
    return error_response(455, cseq, "SETUP after PLAY is not supported");
  }
  if (q.entry == nullptr) {
    std::optional<rtsp::RtspResponse> refused;
    q.entry = create_session(q, *stream, refused);
    if (q.entry == nullptr) return std::move(*refused);
  }
  SessionEntry& entry = *q.entry;
  for (std::uint32_t id : entry.track_ids) {
    if (id == track) return error_response(459, cseq, "track already set up");
  }
  // The client's own SRTCP key (KeyMgmt: prot=mikey, RFC 4567 §3), as GStreamer sends it; a
  // malformed or foreign one is ignored and the session key applies.
  std::optional<wire::MikeyKey> client_key;
  if (options_.srtp) {
    if (auto km = q.req.headers.get("KeyMgmt")) {
      if (auto parsed = wire::parse_key_mgmt(*km)) client_key = std::move(parsed.value());
    }
  }
  if (interleaved) return setup_interleaved(q, spec, track, client_key);
  // Media goes to the RTSP peer's own address; a Transport destination= is never honoured.
  const net::SocketAddress& peer = q.c.peer;
  auto dest = net::SocketAddress::from_ip(peer.ip_string(), spec.client_port->rtp);
  auto rtcp_dest = net::SocketAddress::from_ip(peer.ip_string(), spec.client_port->rtcp);
  if (!dest || !rtcp_dest) return error_response(400, cseq, "bad client address");
  const std::uint32_t ssrc = new_ssrc(entry);
  entry.tracks.push_back(SessionTrack{static_cast<std::uint8_t>(track), *dest, *rtcp_dest, ssrc,
                                      random_u16(), random_u32()});
  if (client_key) {
    entry.tracks.back().client_suite = client_key->suite;
    entry.tracks.back().client_key = client_key->key;
  }
  entry.track_ids.push_back(track);
  rtsp::TransportSpec reply;
  reply.protocol = spec.protocol;
  reply.client_port = spec.client_port;
  reply.server_port = rtsp::PortPair{rtp_port(), static_cast<std::uint16_t>(rtp_port() + 1)};
  reply.ssrc = ssrc;
  rtsp::RtspResponse r = ok_response(q);
  r.headers.set("Transport", rtsp::format_transport(reply));
  return r;
}

rtsp::RtspResponse StreamServer::setup_interleaved(
    Request& q, const rtsp::TransportSpec& spec, std::uint32_t track,
    const std::optional<wire::MikeyKey>& client_key) {
  SessionEntry& entry = *q.entry;
  Connection& c = q.c;
  // The client's channels when free on this connection, else the lowest free even pair (the
  // reply says which; players use what it says, RFC 2326 §12.39).
  InterleavedChannels channels;
  const auto free = [&](unsigned rtp, unsigned rtcp) {
    return rtp != rtcp && !c.channels_in_use.contains(static_cast<std::uint8_t>(rtp)) &&
           !c.channels_in_use.contains(static_cast<std::uint8_t>(rtcp));
  };
  if (spec.interleaved && free(spec.interleaved->rtp, spec.interleaved->rtcp)) {
    channels = InterleavedChannels{spec.interleaved->rtp, spec.interleaved->rtcp};
  } else {
    unsigned rtp = 0;
    while (rtp < 254 && !free(rtp, rtp + 1)) {
      rtp += 2;
    }
    if (rtp >= 254) return error_response(461, q.req.cseq, "no free interleaved channels");
    channels =
        InterleavedChannels{static_cast<std::uint8_t>(rtp), static_cast<std::uint8_t>(rtp + 1)};
  }
  if (!c.media) {
    c.media = std::make_unique<detail::InterleavedQueue>(
        c.tcp.get(), &c.output, options_.interleaved_queue_bytes, stats_.interleaved_frames_sent,
        stats_.interleaved_frames_dropped);
    interleaved_connections_.insert(c.id);
  }
  if (!entry.interleaved) ++stats_.interleaved_sessions;
  entry.interleaved = true;
  c.channels_in_use.insert(channels.rtp);
  c.channels_in_use.insert(channels.rtcp);
  c.rtcp_channels[channels.rtcp] = entry.id;
  const std::uint32_t ssrc = new_ssrc(entry);
  SessionTrack t{
      static_cast<std::uint8_t>(track), c.peer, std::nullopt, ssrc, random_u16(), random_u32()};
  t.interleaved = channels;
  if (client_key) {
    t.client_suite = client_key->suite;
    t.client_key = client_key->key;
  }
  entry.tracks.push_back(t);
  entry.track_ids.push_back(track);
  rtsp::TransportSpec reply;
  reply.protocol = spec.protocol;
  reply.lower = rtsp::LowerTransport::kTcp;
  reply.interleaved = rtsp::ChannelPair{channels.rtp, channels.rtcp};
  reply.ssrc = ssrc;
  rtsp::RtspResponse r = ok_response(q);
  r.headers.set("Transport", rtsp::format_transport(reply));
  return r;
}

void StreamServer::on_interleaved(Connection& c, const rtsp::InterleavedFrame& frame) {
  ++stats_.interleaved_frames_received;
  auto ch = c.rtcp_channels.find(frame.channel);
  if (ch == c.rtcp_channels.end()) {
    // Not one of the RTCP channels this connection set up (or RTP sent back to us): dropped.
    ++stats_.interleaved_unknown_channel;
    return;
  }
  auto s = sessions_.find(ch->second);
  if (s == sessions_.end() || !s->second->session ||
      frame.payload.size() + net::kSrtpMaxTrailer > rtcp_buffer_.size()) {
    ++stats_.interleaved_unknown_channel;
    return;
  }
  // The same RTCP path as a datagram on the RTCP port: SRTCP, RR, PDFB.
  inject_fault(CallbackKind::kRtcp);
  std::copy(frame.payload.begin(), frame.payload.end(), rtcp_buffer_.begin());
  s->second->session->on_rtcp(rtcp_buffer_, frame.payload.size(), clock_.now_us());
  reschedule(*s->second);
}

bool StreamServer::flush_interleaved() {
  bool pending = false;
  for (std::uint64_t id : interleaved_connections_) {
    auto it = connections_.find(id);
    if (it != connections_.end() && it->second->media && it->second->is_open()) {
      it->second->media->flush();
      pending = pending || it->second->media->queued_bytes() > 0;
    }
  }
  return pending;
}

rtsp::RtspResponse StreamServer::handle_play(Request& q) {
  if (q.entry == nullptr) return error_response(454, q.req.cseq, "Session missing");
  SessionEntry& entry = *q.entry;
  if (!start_session(entry, q.now_us)) {
    return error_response(500, q.req.cseq, "session could not start");
  }
  entry.session->play(q.now_us);
  std::vector<rtsp::RtpInfoEntry> info;
  for (std::size_t t = 0; t < entry.tracks.size(); ++t) {
    rtsp::RtpInfoEntry e;
    e.url = entry.base_url + "/trackID=" + std::to_string(entry.track_ids[t]);
    e.seq = entry.session->next_sequence(t);
    e.rtptime = entry.session->rtp_timestamp_at_start(t);
    info.push_back(std::move(e));
  }
  rtsp::RtspResponse r = ok_response(q);
  r.headers.set("RTP-Info", rtsp::format_rtp_info(info));
  r.headers.set("Range", "npt=0.000-");
  return r;
}

rtsp::RtspResponse StreamServer::handle_pause(Request& q) {
  if (q.entry == nullptr) return error_response(454, q.req.cseq, "Session missing");
  if (q.entry->session) q.entry->session->pause();
  return ok_response(q);
}

rtsp::RtspResponse StreamServer::handle_teardown(Request& q) {
  if (q.entry == nullptr) return error_response(454, q.req.cseq, "Session missing");
  remove_session(q.entry->id);
  q.entry = nullptr;  // gone: the reply carries no Session header
  return ok_response(q);
}

void StreamServer::remove_session(const std::string& id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  if (it->second->session) {
    stats_.late_blocks_of_ended_sessions += it->second->session->transmitter_stats().late_stages;
  }
  if (const std::uint32_t slot = it->second->slot; slot != SessionEntry::kNoSlot) {
    schedule_.remove(slot);
    slot_entries_[slot] = nullptr;
    slot_sessions_[slot] = nullptr;
    free_slots_.push_back(slot);
  }
  for (auto a = session_by_address_.begin(); a != session_by_address_.end();) {
    a = a->second == id ? session_by_address_.erase(a) : std::next(a);
  }
  options_.directory->remove(id);
  // The connection it was set up on no longer carries it.
  if (auto c = connections_.find(it->second->connection); c != connections_.end()) {
    Connection& conn = *c->second;
    std::erase(conn.sessions, id);
    if (it->second->interleaved) {
      for (const auto& t : it->second->tracks) {
        if (!t.interleaved) continue;
        conn.rtcp_channels.erase(t.interleaved->rtcp);
        conn.channels_in_use.erase(t.interleaved->rtp);
        conn.channels_in_use.erase(t.interleaved->rtcp);
      }
    }
  }
  sessions_.erase(it);
}

void StreamServer::on_rtcp_datagram(std::span<const std::uint8_t> data,
                                    const net::SocketAddress& from, std::uint64_t now_us) {
  ++stats_.rtcp_datagrams;
  auto it = session_by_address_.find(from);
  if (it == session_by_address_.end() || data.size() + net::kSrtpMaxTrailer > rtcp_buffer_.size()) {
    ++stats_.rtcp_unknown_source;
    return;
  }
  auto s = sessions_.find(it->second);
  if (s == sessions_.end() || !s->second->session) {
    ++stats_.rtcp_unknown_source;
    return;
  }
  inject_fault(CallbackKind::kRtcp);
  std::copy(data.begin(), data.end(), rtcp_buffer_.begin());
  s->second->session->on_rtcp(rtcp_buffer_, data.size(), now_us);
  reschedule(*s->second);
}

// How long one pacer run may send before it lets the loop poll (see tick()).
constexpr std::uint64_t kPacingRunBudgetUs = 20'000;

void StreamServer::tick() {
  const std::uint64_t now = clock_.now_us();
  // The pacing quantum: this run sends everything due before the next one can come (at least a
  // quantum later), so each session is visited once per quantum at most and its packets of that
  // time go out together (one GSO message each where they follow each other).
  const std::uint64_t horizon = now + (options_.paced ? options_.pacing_quantum_us : 0);
  last_pacing_run_us_ = now;
  ++stats_.pacing_wakeups;
  armed_us_ = StreamSession::kNoDeadline;  // a one-shot timer: it fired, or is re-armed below
  std::vector<std::string> failed;
  {
    // Every due session's packets go into one shared batch: full sendmmsg calls instead of one
    // short call per session (the scope flushes the rest when it closes). Only the sessions due
    // by `now` are visited, earliest first.
    chain::SendBatchScope scope(*batch_);
    // The due sessions are taken off the queue a group at a time, so that each one's state can
    // be prefetched while the ones before it are pumped: with many sessions per worker a session
    // is cold whenever the pacer comes back to it, and its misses, not the work, would set the
    // cost per packet (bench/perf/README.md, section 10).
    // Three prefetch steps, each a session apart and each reading only lines the step before
    // brought in (StreamSession::prefetch_fields and the two after it).
    constexpr std::size_t kGroup = 16;
    std::array<StreamSession*, kGroup> group{};
    std::array<std::uint32_t, kGroup> slots{};
    while (schedule_.next_due() <= horizon) {
      // An overloaded loop (more due than it can send) would stay in one run for as long as
      // the backlog lasts, with RTSP, RTCP, stop requests and snapshots waiting: a run ends
      // after its time budget, the loop polls, and the next run (1 ms later) goes on with the
      // earliest due.
      if (clock_.now_us() - now > kPacingRunBudgetUs) {
        ++stats_.pacing_runs_cut;
        break;
      }
      std::size_t n = 0;
      while (n < kGroup && schedule_.next_due() <= horizon) {
        slots[n] = schedule_.top();
        schedule_.remove(slots[n]);
        group[n] = slot_sessions_[slots[n]];
        ++n;
      }
      for (std::size_t k = 0; k < std::min<std::size_t>(n, 3); ++k)
        group[k]->prefetch_fields();
      for (std::size_t k = 0; k < std::min<std::size_t>(n, 2); ++k)
        group[k]->prefetch_targets();
      if (n > 0) group[0]->prefetch_transmitter_targets();
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t slot = slots[i];
        StreamSession& session = *group[i];
        if (i + 3 < n) group[i + 3]->prefetch_fields();
        if (i + 2 < n) group[i + 2]->prefetch_targets();
        if (i + 1 < n) group[i + 1]->prefetch_transmitter_targets();
        ++stats_.session_pumps;
        // Each session on its own: one that throws ends, the others are paced on.
        const bool ok = guard_.run(CallbackKind::kTimer, [&] {
          inject_fault(CallbackKind::kTimer);
          session.pump(now, horizon);
        });
        if (!ok) {
          failed.push_back(slot_entries_[slot]->id);
          continue;
        }
        // Never within this run's horizon again (pump() sent all that was due by it; an SR or a
        // report deadline inside it waits for the next run), so the loop ends even if a
        // session's due time were wrong.
        const std::uint64_t next = session.next_due_us();
        schedule_.schedule(slot,
                           next == StreamSession::kNoDeadline ? next : std::max(next, horizon + 1));
      }
    }
  }
  // Only after the scope: the batch's datagrams point into the sessions' transmitters.
  for (const auto& id : failed) {
    ++stats_.sessions_closed_by_exception;
    remove_session(id);
  }
  (void)flush_interleaved();
  if (!paused_.empty()) resume_paused();
  arm_pacer();
}

void StreamServer::reschedule(SessionEntry& entry) {
  const std::uint64_t due =
      entry.session ? entry.session->next_due_us() : StreamSession::kNoDeadline;
  if (entry.slot == SessionEntry::kNoSlot) {
    if (due == StreamSession::kNoDeadline) return;
    if (free_slots_.empty()) {
      entry.slot = static_cast<std::uint32_t>(slot_entries_.size());
      slot_entries_.push_back(&entry);
      slot_sessions_.push_back(nullptr);
    } else {
      entry.slot = free_slots_.back();
      free_slots_.pop_back();
      slot_entries_[entry.slot] = &entry;
    }
  }
  slot_sessions_[entry.slot] = entry.session.get();
  schedule_.schedule(entry.slot, due);
  if (due < armed_us_) arm_pacer();
}

std::uint64_t StreamServer::next_pacing_run_us() const {
  const std::uint64_t due = schedule_.next_due();
  const std::uint64_t quantum = options_.paced ? options_.pacing_quantum_us : 0;
  if (due == StreamSession::kNoDeadline || quantum == 0) return due;
  return std::max(due > quantum ? due - quantum : 0, last_pacing_run_us_ + quantum);
}

void StreamServer::arm_pacer() {
  if (!pacer_) return;
  // The longest sleep, also with nothing queued: a clock that is not the loop's (a test's
  // FakeClock) is looked at again after this even if the next deadline lies far ahead on it, and
  // the loop never blocks for long. 20 wake-ups a second visit no session and cost nothing.
  constexpr std::uint64_t kMaxSleepMs = 50;
  const std::uint64_t now = clock_.now_us();
  std::uint64_t due = next_pacing_run_us();
  // Connections whose queues wait for their socket (interleaved media rings, paused RTSP
  // replies) are polled every millisecond, as the old 1 ms tick did: the ring is written only
  // from here. UDP-only servers never poll.
  if (needs_polling()) due = std::min(due, now + 1000);
  // libuv counts whole milliseconds: round up, so that the wake-up is never before `due` and
  // the sessions due within that millisecond share it (and its sendmmsg batch).
  // At least 1 ms, also when behind: libuv 1.44's uv__run_timers runs a timer re-armed for "now"
  // again in the same pass (start_from_now refreshes the loop time), so a 0 ms re-arm in an
  // overloaded server would loop in the timer phase for good and starve every socket and
  // AsyncWake of the loop (RTSP, RTCP, a worker's stop request: seen as a shutdown that never
  // ended with 1000 sessions on one worker). One millisecond lets one poll in between.
  const std::uint64_t wait_us = due > now ? due - now : 0;
  const std::uint64_t wait_ms = std::clamp<std::uint64_t>((wait_us + 999) / 1000, 1, kMaxSleepMs);
  pacer_->start_from_now(wait_ms);
  armed_us_ = now + wait_ms * 1000;
}

void StreamServer::housekeeping() {
  const std::uint64_t now = clock_.now_us();
  const std::uint64_t request_deadline_us =
      static_cast<std::uint64_t>(options_.rtsp_idle_timeout_s) * 1'000'000;
  for (auto it = connections_.begin(); it != connections_.end();) {
    Connection& c = *it->second;
    // A request that trickled in for longer than the idle timeout (slow loris), or a connection
    // silent for longer than its idle limit.
    const bool slow_request = c.partial_since_us != 0 && request_deadline_us != 0 &&
                              now > c.partial_since_us + request_deadline_us;
    const bool idle = now > c.last_activity_us + idle_limit_us(c);
    if (c.is_open() && (slow_request || idle)) {
      ++stats_.connections_timed_out;
      c.close();
    }
    it = c.is_open() ? std::next(it) : forget_connection(it);
  }
  const std::uint64_t timeout = static_cast<std::uint64_t>(options_.session_timeout_s) * 1'000'000;
  std::vector<std::string> expired;
  for (auto& [id, e] : sessions_) {
    std::uint64_t last = e->last_request_us;
    if (e->session) last = std::max(last, e->session->last_heard_us());
    // Push sessions have no client to hear from; they live as long as the server.
    const bool push = e->last_request_us == 0 && e->session && !e->feedback;
    if (!push && last != 0 && now > last + timeout) expired.push_back(id);
  }
  for (const auto& id : expired) {
    ++stats_.sessions_timed_out;
    remove_session(id);
  }
}

}  // namespace predrop::server

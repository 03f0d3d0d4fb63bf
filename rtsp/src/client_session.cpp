// The client-side RTSP play session (predrop/rtsp/client_session.hpp).
#include "predrop/rtsp/client_session.hpp"

#include <algorithm>
#include <utility>

#include "predrop/core/text_util.hpp"
#include "predrop/rtsp/rtsp_headers.hpp"

namespace predrop::rtsp {

// ---- pure parts ------------------------------------------------------------------------------

core::Result<std::optional<SdesKey>> sdes_key_of(const SdpMedia& media) {
  for (const auto& c : media.crypto) {
    if (!wire::suite_from_name(c.suite)) {
      continue;
    }
    std::string line = "crypto:" + std::to_string(c.tag) + " " + c.suite + " " + c.key_params;
    if (!c.session_params.empty()) {
      line += " " + c.session_params;
    }
    auto parsed = wire::parse_crypto_attribute(line);
    if (!parsed) {
      return core::make_error("a=crypto: " + parsed.error().message);
    }
    return std::optional<SdesKey>(SdesKey{parsed->tag, parsed->suite, parsed->key});
  }
  if (!media.crypto.empty()) {
    return core::make_error("unsupported SRTP suite " + media.crypto.front().suite);
  }
  return std::optional<SdesKey>();
}

core::Result<BlockAttribute> parse_block_attribute(std::string_view value) {
  BlockAttribute out;
  std::string_view rest = value;
  while (!rest.empty()) {
    const auto semi = rest.find(';');
    const std::string_view item = core::text::trim(rest.substr(0, semi));
    rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      continue;
    }
    const std::string_view name = item.substr(0, eq);
    const auto number = core::text::parse_uint<std::uint64_t>(item.substr(eq + 1));
    if (!number || *number == 0) {
      return core::make_error("bad x-predrop-block attribute: " + std::string(value));
    }
    if (name == "duration_us") {
      out.duration_us = number;
    } else if (name == "bytes") {
      out.bytes = number;
    } else if (name == "payload") {
      out.payload = number;
    }
  }
  return out;
}

core::Result<SessionDescription> read_description(std::string_view request_url,
                                                  const RtspResponse& response) {
  SessionDescription d;
  d.content_base = std::string(response.headers.get("Content-Base").value_or(request_url));
  auto sdp = parse_sdp(response.body);
  if (!sdp) {
    return core::make_error("SDP: " + sdp.error().message);
  }
  d.sdp = std::move(sdp.value());
  for (const auto& a : d.sdp.attributes) {
    const std::string_view attr(a);
    if (attr.size() > kBlockAttribute.size() && attr.starts_with(kBlockAttribute) &&
        attr[kBlockAttribute.size()] == ':') {
      d.block_attribute = std::string(attr.substr(kBlockAttribute.size() + 1));
      break;
    }
  }
  for (std::size_t i = 0; i < d.sdp.media.size(); ++i) {
    const SdpMedia& m = d.sdp.media[i];
    SessionTrack t;
    t.index = i;
    t.media = m;
    t.control_url = resolve_control_url(d.content_base, m.control);
    t.payload_type = m.payload_type;
    auto key = sdes_key_of(m);
    if (!key) {
      return core::make_error("SDP: track " + std::to_string(i) + ": " + key.error().message);
    }
    t.key = *key;
    for (const auto& e : m.extmaps) {
      if (e.uri == kStageExtensionUri) {
        t.extensions.stage = static_cast<std::uint8_t>(e.id);
      } else if (e.uri == kAbsSendTimeUri) {
        t.extensions.abs_send_time = static_cast<std::uint8_t>(e.id);
      }
    }
    d.tracks.push_back(std::move(t));
  }
  return d;
}

std::string_view SessionError::what() const {
  switch (step) {
    case SessionStep::kConnect:
      return "connect";
    case SessionStep::kDescribe:
      return "DESCRIBE";
    case SessionStep::kSetup:
      return "SETUP";
    case SessionStep::kPlay:
      return "PLAY";
    case SessionStep::kPause:
      return "PAUSE";
    case SessionStep::kKeepAlive:
      return "GET_PARAMETER";
    case SessionStep::kTimeout:
      return "timeout";
    case SessionStep::kClosed:
      return "closed";
  }
  return "?";
}

std::string SessionError::message() const {
  std::string out(what());
  out += ": ";
  if (status != 0) {
    out += std::to_string(status);
    if (!detail.empty()) {
      out += ' ';
    }
  }
  out += detail;
  return out;
}

core::Result<net::SocketAddress> server_address_of(std::string_view url) {
  auto parsed = parse_rtsp_url(url);
  if (!parsed) {
    return core::make_error("bad URL: " + parsed.error().message);
  }
  const std::string host = parsed->host == "localhost" ? "127.0.0.1" : parsed->host;
  auto addr = net::SocketAddress::from_ip(host, parsed->port);
  if (!addr) {
    return core::make_error("server host must be an IP address: " + addr.error().message);
  }
  return *addr;
}

// ---- the session -----------------------------------------------------------------------------

ClientSession::ClientSession(net::EventLoop& loop, ClientSessionOptions options, Handlers handlers)
    : loop_(loop), options_(std::move(options)), handlers_(std::move(handlers)) {}

ClientSession::~ClientSession() {
  // Pending RtspClient callbacks fire from close(); they must see the session gone.
  alive_.reset();
  state_ = State::kClosed;
  deadline_.reset();
  keepalive_.reset();
  if (rtsp_) rtsp_->close();
}

const std::string& ClientSession::session_id() const {
  static const std::string kNone;
  return rtsp_ ? rtsp_->session() : kNone;
}

std::uint32_t ClientSession::session_timeout_s() const {
  return rtsp_ ? rtsp_->session_timeout_s() : 60;
}

void ClientSession::start() {
  if (state_ != State::kIdle) return;
  if (options_.server) {
    server_ = *options_.server;
  } else {
    auto addr = server_address_of(options_.url);
    if (!addr) return fail({SessionStep::kConnect, 0, addr.error().message});
    server_ = *addr;
  }
  state_ = State::kConnecting;
  deadline_ = std::make_unique<net::Timer>(loop_, [this] { on_deadline(); });
  auto c = RtspClient::connect(
      loop_, server_, [this](const core::Status& st) { on_connected(st); },
      [this](const core::Status& why) { on_connection_closed(why); });
  if (!c) return fail({SessionStep::kConnect, 0, c.error().message});
  rtsp_ = std::move(c.value());
  if (options_.interleaved && handlers_.on_frame) rtsp_->set_on_frame(handlers_.on_frame);
  ++in_flight_;  // the connect itself
  waiting_for_ = "the TCP connection";
  if (options_.request_timeout_ms > 0) deadline_->start(options_.request_timeout_ms);
}

void ClientSession::on_connected(const core::Status& status) {
  if (in_flight_ > 0) --in_flight_;
  if (in_flight_ == 0) deadline_->stop();
  if (state_ != State::kConnecting) return;
  if (!status) return fail({SessionStep::kConnect, 0, status.error().message});
  describe();
}

void ClientSession::on_connection_closed(const core::Status& why) {
  if (state_ == State::kTearingDown) return finish_teardown();
  if (state_ == State::kClosed) return;
  fail({SessionStep::kClosed, 0, why ? "by the server" : why.error().message});
}

void ClientSession::on_deadline() {
  if (in_flight_ == 0) return;
  if (state_ == State::kTearingDown) return finish_teardown();  // no answer to TEARDOWN: just go
  fail({SessionStep::kTimeout, 0, "no answer to " + waiting_for_});
}

void ClientSession::request(RtspMethod method, const std::string& url, const RtspHeaders& headers,
                            SessionStep step, std::function<void(const RtspResponse&)> then) {
  ++in_flight_;
  waiting_for_ = std::string(to_string(method));
  if (options_.request_timeout_ms > 0) deadline_->start(options_.request_timeout_ms);
  std::weak_ptr<bool> alive = alive_;
  RtspHeaders all = headers;
  for (const auto& [name, value] : options_.headers.fields()) {
    if (!all.contains(name)) all.set(name, value);
  }
  rtsp_->send(method, url, all,
              [this, alive, step, then = std::move(then)](const core::Result<RtspResponse>& r) {
                if (alive.expired()) return;
                if (in_flight_ > 0) --in_flight_;
                if (in_flight_ == 0 && deadline_) deadline_->stop();
                if (state_ == State::kClosed) return;
                if (!r) return fail({step, 0, r.error().message});
                if (step == SessionStep::kDescribe && is_redirect(r->status)) {
                  if (const auto where = r->headers.get("Location")) {
                    return redirect(std::string(*where));
                  }
                }
                if (r->status != 200) return fail({step, r->status, r->reason});
                then(*r);
              });
}

bool ClientSession::is_redirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307;
}

// DESCRIBE was answered with a redirect (RFC 2326 §11.3.3, e.g. an origin sending viewers to
// its edges, docs/edge.md): the session starts again at the Location, on a new connection.
void ClientSession::redirect(const std::string& location) {
  if (++redirects_ > kMaxRedirects) {
    return fail(
        {SessionStep::kDescribe, 0,
         "more than " + std::to_string(kMaxRedirects) + " redirects (last to " + location + ")"});
  }
  auto where = server_address_of(location);
  if (!where) {
    return fail(
        {SessionStep::kDescribe, 0, "redirect to " + location + ": " + where.error().message});
  }
  options_.url = location;
  options_.server = *where;
  // Inside the old connection's own callback: it is closed now and freed with the session.
  retired_ = std::move(rtsp_);
  retired_->close();
  in_flight_ = 0;
  state_ = State::kIdle;
  start();
}

void ClientSession::describe() {
  state_ = State::kDescribing;
  RtspHeaders h;
  h.set("Accept", "application/sdp");
  request(RtspMethod::kDescribe, options_.url, h, SessionStep::kDescribe,
          [this](const RtspResponse& r) { on_describe(r); });
}

void ClientSession::on_describe(const RtspResponse& response) {
  auto d = read_description(options_.url, response);
  if (!d) return fail({SessionStep::kDescribe, 0, d.error().message});
  description_ = std::move(d.value());
  std::vector<std::size_t> chosen;
  if (handlers_.on_described) {
    std::weak_ptr<bool> alive = alive_;
    const auto on_described = handlers_.on_described;  // a copy: the handler may destroy us
    auto picked = on_described(description_);
    if (alive.expired() || state_ != State::kDescribing) return;  // destroyed or closed meanwhile
    if (!picked) return fail({SessionStep::kDescribe, 0, picked.error().message});
    chosen = std::move(picked.value());
  } else {
    for (std::size_t i = 0; i < description_.tracks.size(); ++i) {
      chosen.push_back(i);
    }
  }
  if (chosen.empty()) return fail({SessionStep::kDescribe, 0, "no track to set up"});
  tracks_.clear();
  for (std::size_t i : chosen) {
    if (i >= description_.tracks.size()) {
      return fail({SessionStep::kDescribe, 0, "track " + std::to_string(i) + " does not exist"});
    }
    tracks_.push_back(description_.tracks[i]);
  }
  state_ = State::kSettingUp;
  setup(0);
}

void ClientSession::setup(std::size_t i) {
  if (i == tracks_.size()) return play();
  if (options_.interleaved) return setup_interleaved(i);
  if (!handlers_.client_ports) {
    return fail({SessionStep::kSetup, 0, "ports: no client_ports handler"});
  }
  std::weak_ptr<bool> alive = alive_;
  const auto client_ports = handlers_.client_ports;  // a copy: the handler may destroy us
  auto ports = client_ports(tracks_[i]);
  if (alive.expired() || state_ != State::kSettingUp) return;
  if (!ports) return fail({SessionStep::kSetup, 0, "ports: " + ports.error().message});
  SessionTrack& t = tracks_[i];
  t.client_port = *ports;
  TransportSpec spec;
  spec.protocol = t.key ? "RTP/SAVP" : "RTP/AVP";
  spec.client_port = t.client_port;
  RtspHeaders h;
  h.set("Transport", format_transport(spec));
  if (options_.feedback) h.set(std::string(kFeedbackHeader), "1");
  request(RtspMethod::kSetup, t.control_url, h, SessionStep::kSetup,
          [this, i](const RtspResponse& r) { on_setup(i, r); });
}

void ClientSession::setup_interleaved(std::size_t i) {
  if (i >= 127) return fail({SessionStep::kSetup, 0, "too many tracks for interleaved channels"});
  SessionTrack& t = tracks_[i];
  TransportSpec spec;
  spec.protocol = t.key ? "RTP/SAVP/TCP" : "RTP/AVP/TCP";
  spec.lower = LowerTransport::kTcp;
  spec.interleaved =
      ChannelPair{static_cast<std::uint8_t>(2 * i), static_cast<std::uint8_t>(2 * i + 1)};
  RtspHeaders h;
  h.set("Transport", format_transport(spec));
  if (options_.feedback) h.set(std::string(kFeedbackHeader), "1");
  request(RtspMethod::kSetup, t.control_url, h, SessionStep::kSetup,
          [this, i](const RtspResponse& r) { on_setup(i, r); });
}

void ClientSession::on_setup(std::size_t i, const RtspResponse& response) {
  const auto value = response.headers.get("Transport");
  if (!value) return fail({SessionStep::kSetup, 0, "reply without Transport"});
  auto specs = parse_transport(*value);
  if (!specs) return fail({SessionStep::kSetup, 0, "reply Transport: " + specs.error().message});
  if (options_.interleaved) {
    // The server may pick other channels than we asked for (§12.39): its choice holds.
    if (specs->empty() || !specs->front().interleaved) {
      return fail({SessionStep::kSetup, 0, "reply without interleaved channels"});
    }
    tracks_[i].channels = specs->front().interleaved;
    tracks_[i].ssrc = specs->front().ssrc;
    return setup(i + 1);
  }
  if (specs->empty() || !specs->front().server_port) {
    return fail({SessionStep::kSetup, 0, "reply without server_port"});
  }
  tracks_[i].server_port = *specs->front().server_port;
  tracks_[i].ssrc = specs->front().ssrc;
  setup(i + 1);
}

void ClientSession::play() {
  state_ = State::kStartingPlay;
  RtspHeaders h;
  h.set("Range", "npt=0.000-");
  request(RtspMethod::kPlay, options_.url, h, SessionStep::kPlay,
          [this](const RtspResponse& r) { on_play(r); });
}

void ClientSession::on_play(const RtspResponse& response) {
  // RTP-Info URLs are the SETUP URLs, possibly relative (§12.33 asks for absolute ones, but a
  // server that writes "trackID=0" is still understood): match on the URL's tail.
  if (auto info = response.headers.get("RTP-Info")) {
    if (auto entries = parse_rtp_info(*info)) {
      for (const auto& e : *entries) {
        for (auto& t : tracks_) {
          if (!t.control_url.ends_with(e.url)) continue;
          if (e.rtptime && !t.rtp_info_rtptime) t.rtp_info_rtptime = e.rtptime;
          if (e.seq && !t.rtp_info_seq) t.rtp_info_seq = e.seq;
        }
      }
    }
  }
  state_ = State::kPlaying;
  if (options_.keepalive) {
    const std::uint64_t every_ms =
        options_.keepalive_interval_ms != 0
            ? options_.keepalive_interval_ms
            : std::max<std::uint64_t>(5, rtsp_->session_timeout_s() / 2) * 1000;
    keepalive_ = std::make_unique<net::Timer>(loop_, [this] {
      // One keep-alive at a time: a second one would not help a server that has not answered
      // the first (the request timeout deals with that).
      const bool live = state_ == State::kPlaying || state_ == State::kPaused;
      if (!live || keepalive_pending_) return;
      keepalive_pending_ = true;
      request(RtspMethod::kGetParameter, options_.url, {}, SessionStep::kKeepAlive,
              [this](const RtspResponse&) { keepalive_pending_ = false; });
    });
    keepalive_->start(every_ms, every_ms);
  }
  if (handlers_.on_playing) {
    const auto on_playing = handlers_.on_playing;  // a copy: the handler may destroy us
    on_playing();
  }
}

void ClientSession::pause(std::function<void()> on_paused) {
  if (state_ != State::kPlaying) return;
  state_ = State::kPausing;
  request(RtspMethod::kPause, options_.url, {}, SessionStep::kPause,
          [this, on_paused = std::move(on_paused)](const RtspResponse&) {
            state_ = State::kPaused;
            if (on_paused) on_paused();
          });
}

void ClientSession::resume(std::function<void()> on_resumed) {
  if (state_ != State::kPaused) return;
  state_ = State::kResuming;
  // No Range: the server goes on from where it paused (RFC 2326 §10.5).
  request(RtspMethod::kPlay, options_.url, {}, SessionStep::kPause,
          [this, on_resumed = std::move(on_resumed)](const RtspResponse&) {
            state_ = State::kPlaying;
            if (on_resumed) on_resumed();
          });
}

void ClientSession::teardown(std::function<void()> on_done) {
  const bool set_up = state_ == State::kPlaying || state_ == State::kPausing ||
                      state_ == State::kPaused || state_ == State::kResuming;
  if (!set_up) {
    shut();
    if (on_done) on_done();
    return;
  }
  state_ = State::kTearingDown;
  keepalive_.reset();
  on_torn_down_ = std::move(on_done);
  ++in_flight_;
  waiting_for_ = "TEARDOWN";
  if (options_.request_timeout_ms > 0) deadline_->start(options_.request_timeout_ms);
  std::weak_ptr<bool> alive = alive_;
  rtsp_->send(RtspMethod::kTeardown, options_.url, {},
              [this, alive](const core::Result<RtspResponse>&) {
                if (alive.expired()) return;
                finish_teardown();
              });
}

void ClientSession::finish_teardown() {
  if (state_ != State::kTearingDown) return;
  auto done = std::move(on_torn_down_);
  shut();
  if (done) done();
}

void ClientSession::close() {
  shut();
}

void ClientSession::fail(const SessionError& error) {
  if (state_ == State::kClosed) return;
  shut();
  if (handlers_.on_failed) {
    const auto on_failed = handlers_.on_failed;  // a copy: the handler may destroy us
    on_failed(error);
  }
}

void ClientSession::shut() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;  // first: closing the client fails its pending requests at once
  in_flight_ = 0;
  if (deadline_) deadline_->stop();
  keepalive_.reset();
  if (rtsp_) rtsp_->close();
}

}  // namespace predrop::rtsp

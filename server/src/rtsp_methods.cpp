#include "rtsp_methods.hpp"

#include <algorithm>

#include "predrop/core/log.hpp"
#include "predrop/core/text_util.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/rtsp/rtsp_headers.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/wire/mikey.hpp"
#include "session_description.hpp"

namespace predrop::server::detail {

namespace {
constexpr std::string_view kPublic =
    "OPTIONS, DESCRIBE, SETUP, PLAY, PAUSE, TEARDOWN, GET_PARAMETER, ANNOUNCE, RECORD";
// A client of ours announces that it sends PDFB reports; other players are adapted from their
// Receiver Reports or served at a fixed rate.
constexpr std::string_view kFeedbackHeader = "X-Predrop-Feedback";

bool same_ip(const std::optional<net::SocketAddress>& owner, const net::SocketAddress& peer) {
  return owner && owner->is_v4() == peer.is_v4() &&
         std::equal(owner->ip_bytes(), owner->ip_bytes() + owner->ip_size(), peer.ip_bytes());
}

MethodOutcome reply(rtsp::RtspResponse response, std::uint32_t cseq) {
  MethodOutcome o;
  o.response = std::move(response);
  o.cseq = cseq;
  return o;
}

MethodOutcome refuse(int status, std::uint32_t cseq, std::string_view why) {
  return reply(error_response(status, cseq, why), cseq);
}

// The timeout a publisher's Session header announces (RFC 2326 §12.37): the idle limit its
// connection is held to (rtsp_connections.hpp), not the longer one of a player's session, so a
// publisher that keeps alive by the header (GStreamer's rtspclientsink: GET_PARAMETER 5 s before
// it) is never closed first. Its media and its RTCP keep it alive too (publish_routes.hpp).
std::uint32_t publisher_timeout_s(const StreamServerOptions& o) {
  return o.rtsp_idle_timeout_s;
}
}  // namespace

rtsp::RtspResponse error_response(int status, std::uint32_t cseq, std::string_view why) {
  rtsp::RtspResponse r = rtsp::make_response(status, cseq);
  r.set_body("text/plain", std::string(why) + "\r\n");
  return r;
}

// The request as the handlers see it: the connection it came on, the request, the session its
// Session header names (nullptr if none), the time it is handled at, the server's RTP port.
struct RtspMethods::Request {
  const RtspConnection& c;
  rtsp::RtspRequest& req;
  const SessionEntry* entry;
  std::uint64_t now_us;
  std::uint16_t rtp_port;
  bool publisher_session = false;  // the Session header names this connection's publisher
};

struct RtspMethods::StreamLookup {
  const StreamDefinition* stream = nullptr;
  rtsp::RtspUrl url;
  std::optional<MethodOutcome> error;  // set: the reply (400 bad URL, 404 no stream)
};

RtspMethods::RtspMethods(const StreamServerOptions& options, const SessionTable& sessions,
                         ServerStats& stats)
    : options_(options), sessions_(sessions), stats_(stats) {}

MethodOutcome RtspMethods::handle(const RtspConnection& c, rtsp::RtspRequest& req,
                                  std::uint64_t now_us, std::uint16_t rtp_port) {
  const SessionEntry* entry = nullptr;
  bool publisher_session = false;
  if (auto sh = req.headers.get("Session")) {
    auto parsed = rtsp::parse_session(*sh);
    if (!parsed) return refuse(454, req.cseq, "malformed Session header");
    publisher_session = c.publisher && parsed->id == c.publisher->session_id;
    if (!publisher_session) entry = sessions_.find(parsed->id);
    if (entry == nullptr) {
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
        return refuse(454, req.cseq,
                      "session " + parsed->id +
                          " is held by another worker of this server; control it on the "
                          "connection that set it up");
      }
    }
    // A session answers only to the address that set it up; to anyone else it does not exist
    // (the same 454 as an unknown id, so the answer tells nothing about other clients).
    const bool foreign = entry != nullptr && !same_ip(entry->owner, c.peer);
    if (foreign) ++stats_.session_requests_foreign;
    if ((entry == nullptr && !publisher_session) || foreign) {
      return refuse(454, req.cseq, "no session " + parsed->id);
    }
  }
  Request q{c, req, entry, now_us, rtp_port, publisher_session};
  MethodOutcome out = dispatch(q);
  if (entry != nullptr) {
    out.touch = true;
    if (out.session.empty()) out.session = entry->id;
  }
  return out;
}

MethodOutcome RtspMethods::dispatch(Request& q) {
  switch (q.req.method) {
    case rtsp::RtspMethod::kOptions:
    case rtsp::RtspMethod::kGetParameter:
      // GET_PARAMETER is the keep-alive players send (FFmpeg, VLC): answered like OPTIONS; the
      // session it names is refreshed (MethodOutcome::touch).
      return options(q);
    case rtsp::RtspMethod::kDescribe:
      return describe(q);
    case rtsp::RtspMethod::kSetup:
      if (q.c.publisher && (q.publisher_session || q.entry == nullptr)) {
        if (names_published_stream(q.req.url, q.c.publisher->stream, q.c.publisher->tracks)) {
          return setup_publish(q);
        }
      }
      return setup(q);
    case rtsp::RtspMethod::kPlay:
      return play(q);
    case rtsp::RtspMethod::kPause:
      if (q.publisher_session) {
        // GStreamer's rtspclientsink pauses at its end of stream, before its TEARDOWN (RFC 2326
        // §10.6: recording stops). Its media stops coming; the stream stays published until the
        // TEARDOWN or the connection's end (or the idle timeout).
        MethodOutcome o = ok(q);
        o.response.set_session(q.c.publisher->session_id, publisher_timeout_s(options_));
        return o;
      }
      return pause(q);
    case rtsp::RtspMethod::kTeardown:
      if (q.publisher_session) {
        MethodOutcome o = ok(q);
        o.publish = MethodOutcome::Publish::kStop;
        return o;
      }
      return teardown(q);
    case rtsp::RtspMethod::kAnnounce:
      return announce(q);
    case rtsp::RtspMethod::kRecord:
      return record(q);
    case rtsp::RtspMethod::kSetParameter:
    case rtsp::RtspMethod::kRedirect: {
      MethodOutcome e = refuse(405, q.req.cseq, "not supported by this server");
      e.response.headers.set("Allow", std::string(kPublic));
      return e;
    }
    case rtsp::RtspMethod::kUnknown:
      break;
  }
  return refuse(501, q.req.cseq, "method not implemented");
}

MethodOutcome RtspMethods::ok(const Request& q) const {
  rtsp::RtspResponse r = rtsp::make_response(200, q.req.cseq);
  r.headers.set("Server", "predrop");
  if (q.entry != nullptr) r.set_session(q.entry->id, options_.session_timeout_s);
  return reply(std::move(r), q.req.cseq);
}

MethodOutcome RtspMethods::options(Request& q) {
  MethodOutcome o = ok(q);
  o.response.headers.set("Public", std::string(kPublic));
  return o;
}

const StreamDefinition* RtspMethods::find_stream(std::string_view name) const {
  for (const auto& s : options_.streams) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

RtspMethods::StreamLookup RtspMethods::requested_stream(const Request& q) const {
  StreamLookup out;
  auto url = rtsp::parse_rtsp_url(q.req.url);
  if (!url) {
    out.error = refuse(400, q.req.cseq, url.error().message);
    return out;
  }
  out.url = std::move(url.value());
  out.stream = find_stream(out.url.stream);
  if (out.stream == nullptr) {
    out.error = refuse(404, q.req.cseq, "no stream named '" + out.url.stream + "'");
  }
  return out;
}

MethodOutcome RtspMethods::describe(Request& q) {
  StreamLookup found = requested_stream(q);
  if (found.error) return std::move(*found.error);
  const StreamDefinition& stream = *found.stream;
  if (stream.live && !q.req.headers.contains(kRelayHeader)) {
    // An origin with edges (docs/edge.md): viewers go to an edge, round robin.
    if (std::string edge = stream.live->next_edge(); !edge.empty()) {
      ++stats_.redirects;
      MethodOutcome o = refuse(302, q.req.cseq, "served by an edge: " + edge);
      o.response.headers.set("Location", edge);
      return o;
    }
  }
  const auto source = stream.current_source();
  if (!source) {
    return refuse(404, q.req.cseq,
                  stream.live && stream.live->settings().pull
                      ? "'" + stream.name + "' is pulled, and its upstream has not answered yet"
                      : "nobody publishes '" + stream.name + "' now");
  }
  std::optional<wire::SrtpKeyMaterial> key;
  bool fresh = false;
  if (options_.srtp) {
    // One key per stream and connection: SETUP on this connection uses the same one.
    if (auto it = q.c.keys.find(stream.name); it != q.c.keys.end()) {
      key = it->second;
    } else {
      key = net::random_srtp_key(*options_.srtp);
      fresh = true;
    }
  }
  std::string base = q.req.url;
  if (!base.empty() && base.back() != '/') base += '/';
  MethodOutcome o = ok(q);
  o.response.headers.set("Content-Base", base);
  const SdpSettings sdp{options_.srtp, options_.block_attribute};
  o.response.set_body("application/sdp",
                      describe_stream(stream, *source, key ? &*key : nullptr, found.url.host, sdp));
  if (fresh) o.key.emplace(stream.name, *key);
  return o;
}

std::unique_ptr<SessionEntry> RtspMethods::create_session(Request& q,
                                                          const StreamDefinition& stream,
                                                          MethodOutcome& error) {
  auto fresh = std::make_unique<SessionEntry>();
  fresh->id = sessions_.fresh_id();
  // The limits hold for the process (with several workers the directory is shared); one
  // address must not take every session, since max_sessions is shared by all clients.
  switch (options_.directory->try_add(fresh->id, options_.worker, q.c.peer.ip_string(),
                                      options_.max_sessions, options_.max_sessions_per_address)) {
    case SessionDirectory::Admit::kAdded:
      break;
    case SessionDirectory::Admit::kFull:
      ++stats_.sessions_refused;
      error = refuse(453, q.req.cseq, "session limit reached");
      return nullptr;
    case SessionDirectory::Admit::kAddressFull:
      ++stats_.sessions_refused_per_address;
      error = refuse(453, q.req.cseq, "session limit for this address reached");
      return nullptr;
  }
  fresh->owner = q.c.peer;
  fresh->connection = q.c.id;
  fresh->stream = &stream;
  fresh->source = stream.current_source();
  if (!fresh->source) {
    options_.directory->remove(fresh->id);
    error = refuse(404, q.req.cseq, "nobody publishes '" + stream.name + "' now");
    return nullptr;
  }
  fresh->last_request_us = q.now_us;
  if (options_.srtp) {
    auto it = q.c.keys.find(stream.name);
    // A client that skipped DESCRIBE on this connection gets a key it cannot know; it must
    // DESCRIBE first (every RTSP player does).
    if (it == q.c.keys.end()) {
      options_.directory->remove(fresh->id);
      error = refuse(455, q.req.cseq, "DESCRIBE first: the keys are in the SDP");
      return nullptr;
    }
    fresh->key = it->second;
  }
  fresh->feedback = q.req.headers.get(kFeedbackHeader).has_value();
  fresh->base_url = q.req.url.substr(0, q.req.url.rfind('/'));
  return fresh;
}

MethodOutcome RtspMethods::setup(Request& q) {
  const std::uint32_t cseq = q.req.cseq;
  StreamLookup found = requested_stream(q);
  if (found.error) return std::move(*found.error);
  const StreamDefinition* stream = found.stream;
  const std::uint32_t track = found.url.track.value_or(0);
  {
    const auto source = q.entry != nullptr ? q.entry->source : stream->current_source();
    if (!source) return refuse(404, cseq, "nobody publishes '" + stream->name + "' now");
    if (track >= source->streams().size()) return refuse(404, cseq, "no such track");
  }
  auto transport_value = q.req.headers.get("Transport");
  if (!transport_value) return refuse(400, cseq, "Transport missing");
  auto offers = rtsp::parse_transport(*transport_value);
  if (!offers) return refuse(461, cseq, offers.error().message);
  rtsp::TransportPolicy policy;
  policy.allow_interleaved = options_.interleaved_queue_bytes > 0;
  auto chosen = rtsp::select_transport(*offers, policy);
  if (!chosen) {
    return refuse(461, cseq,
                  policy.allow_interleaved
                      ? "only unicast UDP with client_port, or RTP/AVP/TCP interleaved"
                      : "only UDP unicast with client_port");
  }
  const rtsp::TransportSpec spec = (*offers)[*chosen];
  const bool interleaved = is_interleaved(spec);
  const SessionEntry* entry = q.entry;
  if (entry != nullptr && !entry->tracks.empty() && entry->interleaved != interleaved) {
    return refuse(461, cseq, "every track of a session on the same transport");
  }
  if (interleaved && entry != nullptr && entry->connection != q.c.id) {
    return refuse(455, cseq, "interleaved tracks are set up on the session's connection");
  }
  if (entry != nullptr && entry->stream != stream) {
    return refuse(459, cseq, "session belongs to another stream");
  }
  if (entry != nullptr && entry->session) {
    return refuse(455, cseq, "SETUP after PLAY is not supported");
  }
  if (entry != nullptr) {
    for (std::uint32_t id : entry->track_ids) {
      if (id == track) return refuse(459, cseq, "track already set up");
    }
    return setup_track(q, *entry, spec, track);
  }
  MethodOutcome refused;
  std::unique_ptr<SessionEntry> created = create_session(q, *stream, refused);
  if (!created) return refused;
  q.entry = created.get();  // the reply carries the new session
  MethodOutcome o = setup_track(q, *created, spec, track);
  if (!o.track) {
    // Refused after all (no channel, no address): the session never existed.
    options_.directory->remove(created->id);
    return o;
  }
  ++stats_.sessions_created;
  o.session = created->id;
  o.created = std::move(created);
  return o;
}

MethodOutcome RtspMethods::setup_track(Request& q, const SessionEntry& target,
                                       const rtsp::TransportSpec& spec, std::uint32_t track) {
  const std::uint32_t cseq = q.req.cseq;
  SessionTrack t;
  t.media_stream = static_cast<std::uint8_t>(track);
  t.ssrc = fresh_ssrc(target);
  t.initial_sequence = net::random_u16();
  t.timestamp_offset = net::random_u32();
  // The client's own SRTCP key (KeyMgmt: prot=mikey, RFC 4567 §3), as GStreamer sends it; a
  // malformed or foreign one is ignored and the session key applies.
  if (options_.srtp) {
    if (auto km = q.req.headers.get("KeyMgmt")) {
      if (auto parsed = wire::parse_key_mgmt(*km)) {
        t.client_suite = parsed->suite;
        t.client_key = parsed->key;
      }
    }
  }
  rtsp::TransportSpec reply;
  reply.protocol = spec.protocol;
  reply.ssrc = t.ssrc;
  if (is_interleaved(spec)) {
    auto channels = InterleavedLink::choose(q.c.interleaved.get(), spec);
    if (!channels) return refuse(461, cseq, "no free interleaved channels");
    if (!target.interleaved) ++stats_.interleaved_sessions;
    t.rtp_destination = q.c.peer;
    t.interleaved = channels;
    reply.lower = rtsp::LowerTransport::kTcp;
    reply.interleaved = rtsp::ChannelPair{channels->rtp, channels->rtcp};
  } else {
    // Media goes to the RTSP peer's own address; a Transport destination= is never honoured.
    auto dest = net::SocketAddress::from_ip(q.c.peer.ip_string(), spec.client_port->rtp);
    auto rtcp_dest = net::SocketAddress::from_ip(q.c.peer.ip_string(), spec.client_port->rtcp);
    if (!dest || !rtcp_dest) return refuse(400, cseq, "bad client address");
    t.rtp_destination = *dest;
    t.rtcp_destination = *rtcp_dest;
    reply.client_port = spec.client_port;
    reply.server_port = rtsp::PortPair{q.rtp_port, static_cast<std::uint16_t>(q.rtp_port + 1)};
  }
  MethodOutcome o = ok(q);
  o.response.headers.set("Transport", rtsp::format_transport(reply));
  o.track = TrackSetup{t, track};
  return o;
}

MethodOutcome RtspMethods::play(Request& q) {
  if (q.entry == nullptr) return refuse(454, q.req.cseq, "Session missing");
  MethodOutcome o = ok(q);
  o.action = MethodOutcome::Action::kPlay;
  return o;
}

void RtspMethods::complete(MethodOutcome& o, const SessionEntry* entry) const {
  if (o.action != MethodOutcome::Action::kPlay) return;
  if (entry == nullptr || !entry->session) {
    o.response = error_response(500, o.cseq, "session could not start");
    return;
  }
  std::vector<rtsp::RtpInfoEntry> info;
  for (std::size_t t = 0; t < entry->tracks.size(); ++t) {
    rtsp::RtpInfoEntry e;
    e.url = entry->base_url + "/trackID=" + std::to_string(entry->track_ids[t]);
    e.seq = entry->session->next_sequence(t);
    e.rtptime = entry->session->rtp_timestamp_at_start(t);
    info.push_back(std::move(e));
  }
  o.response.headers.set("RTP-Info", rtsp::format_rtp_info(info));
  o.response.headers.set("Range", "npt=0.000-");
}

MethodOutcome RtspMethods::pause(Request& q) {
  if (q.entry == nullptr) return refuse(454, q.req.cseq, "Session missing");
  MethodOutcome o = ok(q);
  o.action = MethodOutcome::Action::kPause;
  return o;
}

MethodOutcome RtspMethods::teardown(Request& q) {
  if (q.entry == nullptr) return refuse(454, q.req.cseq, "Session missing");
  const std::string id = q.entry->id;
  q.entry = nullptr;  // gone: the reply carries no Session header
  MethodOutcome o = ok(q);
  o.session = id;
  o.action = MethodOutcome::Action::kTeardown;
  return o;
}

// ---- publishing (docs/live.md) ----

MethodOutcome RtspMethods::announce(Request& q) {
  const std::uint32_t cseq = q.req.cseq;
  StreamLookup found = requested_stream(q);
  if (found.error) return std::move(*found.error);
  const StreamDefinition& stream = *found.stream;
  if (!stream.live || stream.live->settings().pull) {
    ++stats_.publishes_refused;
    MethodOutcome e = refuse(405, cseq,
                             "stream '" + stream.name + "' is not published here" +
                                 (stream.live ? " (it is pulled from upstream)" : ""));
    e.response.headers.set("Allow", std::string(kPublic));
    return e;
  }
  if (q.c.publisher) return refuse(455, cseq, "this connection publishes already");
  const auto given = url_secret(q.req.url);
  if (!given || !secret_matches(*given, stream.live->settings().secret)) {
    ++stats_.publishes_refused;
    // The URL is not logged: it may hold a secret someone mistyped.
    core::log(core::LogLevel::kWarn, "live", "publish to '%s' from %s refused: %s secret",
              stream.name.c_str(), q.c.peer.ip_string().c_str(), given ? "wrong" : "no");
    return refuse(403, cseq, "wrong or missing publish secret (rtsp://host/stream?secret=...)");
  }
  const auto type = q.req.headers.get("Content-Type");
  if (!type ||
      !core::text::iequals(core::text::trim(type->substr(0, type->find(';'))), "application/sdp")) {
    ++stats_.publishes_refused;
    return refuse(415, cseq, "ANNOUNCE wants an application/sdp body");
  }
  auto announced = read_announce(q.req.body);
  if (!announced) {
    ++stats_.publishes_refused;
    return refuse(415, cseq, announced.error().message);
  }
  auto publisher = std::make_unique<Publisher>();
  publisher->stream = stream.name;
  publisher->point = stream.live;
  publisher->token = LivePoint::next_token();
  publisher->session_id = sessions_.fresh_id();
  publisher->tracks = announced->tracks;
  publisher->source = std::make_shared<media::LiveSource>(
      announced->video, stream.live->settings().source, announced->audio);
  switch (stream.live->claim(publisher->token, publisher->source, q.now_us)) {
    case LivePoint::Claim::kBusy:
      ++stats_.publishes_refused;
      core::log(core::LogLevel::kWarn, "live",
                "publish to '%s' from %s refused: it has a publisher", stream.name.c_str(),
                q.c.peer.ip_string().c_str());
      return refuse(455, cseq,
                    "stream '" + stream.name + "' already has a publisher (server.streams." +
                        stream.name + ".replace = true lets a new one take over)");
    case LivePoint::Claim::kReplaced:
      core::log(core::LogLevel::kInfo, "live", "'%s': the publisher from %s replaces the last",
                stream.name.c_str(), q.c.peer.ip_string().c_str());
      break;
    case LivePoint::Claim::kClaimed:
      core::log(core::LogLevel::kInfo, "live", "'%s' published from %s", stream.name.c_str(),
                q.c.peer.ip_string().c_str());
      break;
  }
  if (!announced->audio_unserved.empty()) {
    core::log(core::LogLevel::kWarn, "live", "'%s': audio %s; not served (video only)",
              stream.name.c_str(), announced->audio_unserved.c_str());
  }
  ++stats_.publishes;
  MethodOutcome o = ok(q);
  o.publisher = std::move(publisher);
  return o;
}

MethodOutcome RtspMethods::setup_publish(Request& q) {
  const std::uint32_t cseq = q.req.cseq;
  const Publisher& p = *q.c.publisher;
  if (p.recording) return refuse(455, cseq, "SETUP after RECORD is not supported");
  // The track: by its control (FFmpeg: ".../streamid=0"), else by a trackID=N/streamid=N index.
  const std::string_view control = url_control(q.req.url);
  std::optional<std::size_t> index;
  for (std::size_t i = 0; i < p.tracks.size(); ++i) {
    if (!p.tracks[i].control.empty() && url_control(p.tracks[i].control) == control) index = i;
  }
  if (!index) {
    if (auto url = rtsp::parse_rtsp_url(q.req.url);
        url && url->track && *url->track < p.tracks.size()) {
      index = *url->track;
    } else if (p.tracks.size() == 1) {
      index = 0;
    }
  }
  if (!index) return refuse(404, cseq, "no such track in the announced SDP");
  auto transport_value = q.req.headers.get("Transport");
  if (!transport_value) return refuse(400, cseq, "Transport missing");
  auto offers = rtsp::parse_transport(*transport_value);
  if (!offers) return refuse(461, cseq, offers.error().message);
  // Interleaved on this connection, or UDP unicast from the publisher's own client_port.
  const rtsp::TransportSpec* chosen = nullptr;
  for (const rtsp::TransportSpec& s : *offers) {
    const bool tcp = is_interleaved(s) && s.interleaved;
    const bool udp = s.lower == rtsp::LowerTransport::kUdp && !s.multicast && s.client_port &&
                     s.profile == rtsp::RtpProfile::kAvp;
    if (tcp || udp) {
      chosen = &s;
      break;
    }
  }
  if (chosen == nullptr) {
    return refuse(461, cseq,
                  "publish with RTP/AVP/TCP;interleaved=a-b or RTP/AVP;unicast;client_port=a-b");
  }
  if (chosen->mode && !core::text::iequals(*chosen->mode, "record") &&
      !core::text::iequals(*chosen->mode, "\"record\"")) {
    return refuse(461, cseq, "a publisher's SETUP has mode=record");
  }
  MethodOutcome::PublishTrack track;
  track.index = *index;
  rtsp::TransportSpec reply;
  reply.protocol = chosen->protocol;
  reply.mode = "record";
  if (chosen->interleaved) {
    const rtsp::ChannelPair channels = *chosen->interleaved;
    for (std::size_t i = 0; i < p.tracks.size(); ++i) {
      const auto& t = p.tracks[i];
      if (i != *index && t.rtp_channel &&
          (*t.rtp_channel == channels.rtp || *t.rtp_channel + 1 == channels.rtp)) {
        return refuse(461, cseq, "interleaved channels already in use");
      }
    }
    reply.lower = rtsp::LowerTransport::kTcp;
    reply.interleaved = channels;
    track.channel = channels.rtp;
    track.rtcp_channel = channels.rtcp;
  } else {
    // Its RTP comes from the RTSP peer's own address and client_port (a destination= or
    // source= of the request is never honoured).
    auto from = net::SocketAddress::from_ip(q.c.peer.ip_string(), chosen->client_port->rtp);
    if (!from) return refuse(400, cseq, "bad client address");
    reply.client_port = chosen->client_port;
    reply.server_port = rtsp::PortPair{q.rtp_port, static_cast<std::uint16_t>(q.rtp_port + 1)};
    track.udp_from = *from;
  }
  MethodOutcome o = ok(q);
  o.response.set_session(p.session_id, publisher_timeout_s(options_));
  o.response.headers.set("Transport", rtsp::format_transport(reply));
  o.publish_track = track;
  return o;
}

MethodOutcome RtspMethods::record(Request& q) {
  const std::uint32_t cseq = q.req.cseq;
  if (!q.c.publisher) return refuse(455, cseq, "ANNOUNCE first");
  if (!q.publisher_session) return refuse(454, cseq, "Session missing");
  const auto& tracks = q.c.publisher->tracks;
  if (std::none_of(tracks.begin(), tracks.end(), [](const PublishedTrack& t) {
        return t.video && (t.rtp_channel || t.udp_from);
      })) {
    return refuse(455, cseq, "SETUP the H.264 track first");
  }
  MethodOutcome o = ok(q);
  o.response.set_session(q.c.publisher->session_id, publisher_timeout_s(options_));
  o.publish = MethodOutcome::Publish::kRecord;
  return o;
}

}  // namespace predrop::server::detail

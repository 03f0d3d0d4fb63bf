#pragma once
// The server's side of RTSP 1.0 (RFC 2326): what each request means. The connection it came on
// and the session its Session header names are read, never changed; each handler returns the
// response and its effects (a key to remember on the connection, a session created, a track
// added, the session to play, pause or tear down), which the facade applies (stream_server.cpp)
// before it asks complete() for the last touch of the reply. Messages, headers, Transport and SDP
// syntax are rtsp/'s; the SDP a stream is described with is session_description.hpp's.
//
//   handle()    Session header -> the session (454 for unknown, foreign, or another worker's)
//   OPTIONS, GET_PARAMETER   200 with Public (GET_PARAMETER is the players' keep-alive)
//   DESCRIBE    the SDP with this connection's key for the stream (a fresh one the first time)
//   SETUP       a new session (admitted against the SessionDirectory's limits: 453) or a track
//               more in the named one: UDP to the client's own address, or interleaved on this
//               connection (RFC 2326 §10.12)
//   PLAY        starts or resumes the session; RTP-Info and Range (complete())
//   PAUSE, TEARDOWN
//   ANNOUNCE    a publisher (docs/live.md): a published stream, its secret (403), an SDP with
//               H.264 (415), nobody publishing it already (455) unless configured to replace
//   SETUP       of a publisher's track (mode=record, interleaved or UDP), RECORD, TEARDOWN
//   SET_PARAMETER, REDIRECT: 405 with Allow; anything else 501
//
// Threading: the server's loop thread (the directory it admits sessions to is thread-safe).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "predrop/rtsp/rtsp_message.hpp"
#include "predrop/server/server_options.hpp"
#include "predrop/wire/sdes_key.hpp"
#include "rtsp_connections.hpp"
#include "session_table.hpp"

namespace predrop::server::detail {

/// A track SETUP adds to its session.
struct TrackSetup {
  SessionTrack track;
  std::uint32_t track_id = 0;  ///< trackID=N of the URL.
};

/// A request's reply and what it changes, in the order the facade applies it.
struct MethodOutcome {
  rtsp::RtspResponse response;
  std::uint32_t cseq = 0;
  /// The session the request concerns (named or created); empty: none.
  std::string session;
  /// The request named a session of its owner: the session's last request is now.
  bool touch = false;
  /// DESCRIBE: the key handed out for this stream on this connection (remember it).
  std::optional<std::pair<std::string, wire::SrtpKeyMaterial>> key;
  /// SETUP: a new session, admitted to the directory already; the facade adds it to the table
  /// and to the connection's sessions.
  std::unique_ptr<SessionEntry> created;
  /// SETUP: the track to add to the session.
  std::optional<TrackSetup> track;
  enum class Action : std::uint8_t { kNone, kPlay, kPause, kTeardown };
  Action action = Action::kNone;
  /// ANNOUNCE: the connection's publisher (it holds its stream already).
  std::unique_ptr<Publisher> publisher;
  /// SETUP of a publisher's track: its index, and the interleaved channel of its RTP or the
  /// address its RTP comes from over UDP.
  struct PublishTrack {
    std::size_t index = 0;
    std::optional<std::uint8_t> channel;
    std::optional<net::SocketAddress> udp_from;
    std::optional<std::uint8_t> rtcp_channel;
  };
  std::optional<PublishTrack> publish_track;
  enum class Publish : std::uint8_t { kNone, kRecord, kStop };
  Publish publish = Publish::kNone;
};

/// The method handlers.
class RtspMethods {
 public:
  /// `sessions` is read to resolve Session headers and to make ids unique; `stats` counts.
  RtspMethods(const StreamServerOptions& options, const SessionTable& sessions, ServerStats& stats);

  /// Handles `request` from `c` at `now_us`; the server's RTP port pair starts at `rtp_port`.
  /// `now_us` also ends a replaced publisher's source.
  MethodOutcome handle(const RtspConnection& c, rtsp::RtspRequest& request, std::uint64_t now_us,
                       std::uint16_t rtp_port);
  /// After the outcome was applied (`entry`: the session it concerns, if it still exists): a
  /// PLAY's reply gets RTP-Info and Range from the started session, or becomes 500 when it
  /// could not start.
  void complete(MethodOutcome& outcome, const SessionEntry* entry) const;

 private:
  struct Request;
  struct StreamLookup;
  MethodOutcome dispatch(Request& q);
  MethodOutcome options(Request& q);
  MethodOutcome describe(Request& q);
  MethodOutcome setup(Request& q);
  MethodOutcome setup_track(Request& q, const SessionEntry& target, const rtsp::TransportSpec& spec,
                            std::uint32_t track);
  MethodOutcome play(Request& q);
  MethodOutcome pause(Request& q);
  MethodOutcome teardown(Request& q);
  MethodOutcome announce(Request& q);
  MethodOutcome setup_publish(Request& q);
  MethodOutcome record(Request& q);
  // A new session for SETUP of `stream` (nullptr and `error` set when refused).
  std::unique_ptr<SessionEntry> create_session(Request& q, const StreamDefinition& stream,
                                               MethodOutcome& error);
  MethodOutcome ok(const Request& q) const;
  StreamLookup requested_stream(const Request& q) const;
  const StreamDefinition* find_stream(std::string_view name) const;

  const StreamServerOptions& options_;
  const SessionTable& sessions_;
  ServerStats& stats_;
};

/// A reply with `status` and a one-line text body saying why.
rtsp::RtspResponse error_response(int status, std::uint32_t cseq, std::string_view why);

}  // namespace predrop::server::detail

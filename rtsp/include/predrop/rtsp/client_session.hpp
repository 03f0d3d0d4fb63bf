#pragma once
// The client side of one RTSP 1.0 play session (RFC 2326 §10), written once for every predrop
// client -- the measuring client, the load tester's light clients and the egress benchmark:
//
//   connect -> DESCRIBE (Accept: application/sdp; a 3xx with Location is followed, up to
//   kMaxRedirects times) -> parse the SDP (RFC 4566) -> SETUP each
//   chosen track over unicast UDP (client_port, optional X-Predrop-Feedback: 1) -> PLAY
//   (Range: npt=0.000-) -> GET_PARAMETER every max(5 s, session timeout / 2) -> TEARDOWN.
//
// GET_PARAMETER is the keep-alive FFmpeg uses when the server lists it in Public
// (libavformat/rtspdec.c); the session timeout is the server's Session ";timeout=" (§12.37,
// 60 s when absent). SETUP and PLAY go to Content-Base + a=control (RFC 2326 C.1.1) and to the
// URL the session was started with, as FFmpeg does.
//
// What was negotiated is reported per track: the SDP section, its SETUP URL, payload type, SDES
// key (RFC 4568 a=crypto, inline key method), RTP extension ids (RFC 8285 a=extmap), SSRC and
// server ports (Transport, §12.39) and RTP-Info (§12.33); for the session its id and timeout and
// the x-predrop-block attribute (how the server cut its file into blocks).
//
// The session does not open sockets: the owner gives the client ports of each track (it owns
// the UDP endpoints and their receive paths; a benchmark may point the server at sink sockets).
// With ClientSessionOptions::interleaved the media comes over the RTSP connection instead
// (RTP/AVP/TCP, §10.12): track k is set up on channels 2k and 2k+1, and every "$" frame goes to
// Handlers::on_frame (a relay pulling a stream from another server, server/src/live_pull.hpp).
//
// Threading: loop thread. Errors: as values. A failure is reported once through on_failed with
// the step, the RTSP status of a refusal and a detail text; the connection is then closed and the
// session stays silent. Every handler may destroy the session.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/rtsp/rtsp_client.hpp"
#include "predrop/rtsp/rtsp_message.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "predrop/wire/rtp.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::rtsp {

/// Name of the request header that asks the server to run the PDFB feedback loop for a track.
inline constexpr std::string_view kFeedbackHeader = "X-Predrop-Feedback";
/// Name of the SDP session attribute with the server's block settings.
inline constexpr std::string_view kBlockAttribute = "x-predrop-block";

/// An SRTP master key announced by a=crypto with the inline key method (RFC 4568 §9.2).
struct SdesKey {
  std::uint32_t tag = 0;
  wire::SrtpSuite suite = wire::SrtpSuite::AesCm128HmacSha1_80;
  wire::SrtpKeyMaterial key;
  friend bool operator==(const SdesKey&, const SdesKey&) = default;
};

/// The key of an m= section: the first a=crypto whose suite predrop supports (RFC 4568 §7.5: the
/// answerer takes the first acceptable offer). nullopt without a=crypto; an error when every
/// suite is unknown or the chosen line is malformed (wire::parse_crypto_attribute's rules).
core::Result<std::optional<SdesKey>> sdes_key_of(const SdpMedia& media);

/// The x-predrop-block attribute, "name=value;..." with positive decimal values: how the server
/// cut its file into blocks, so that a client can cut its reference copy the same way.
struct BlockAttribute {
  std::optional<std::uint64_t> duration_us;  ///< Blocks of this media duration.
  std::optional<std::uint64_t> bytes;        ///< Blocks of this many payload bytes.
  std::optional<std::uint64_t> payload;      ///< Largest RTP payload, bytes.
  friend bool operator==(const BlockAttribute&, const BlockAttribute&) = default;
};

/// Parses an x-predrop-block value. Unknown names and items without '=' are skipped (newer
/// servers may add settings); a value that is not a positive number is an error.
core::Result<BlockAttribute> parse_block_attribute(std::string_view value);

/// One m= section of the DESCRIBE answer and, once set up, what SETUP and PLAY negotiated for it.
struct SessionTrack {
  std::size_t index = 0;             ///< Position of the m= section in the SDP.
  SdpMedia media;                    ///< The section as parsed.
  std::string control_url;           ///< Absolute SETUP URL: Content-Base + a=control.
  int payload_type = 96;             ///< First payload type of the m= line.
  std::optional<SdesKey> key;        ///< From a=crypto (sdes_key_of); nullopt: plain RTP.
  wire::RtpExtensionIds extensions;  ///< Ids of the stage and abs-send-time extensions (0: none).

  // Set by SETUP.
  PortPair client_port;                 ///< What we asked for.
  PortPair server_port;                 ///< Where the server sends from (and takes RTCP).
  std::optional<ChannelPair> channels;  ///< Interleaved: the channels the server confirmed.
  std::optional<std::uint32_t> ssrc;    ///< The SSRC the server announced, if any.

  // Set by PLAY when the server sent RTP-Info for this track.
  std::optional<std::uint16_t> rtp_info_seq;      ///< First sequence number after PLAY.
  std::optional<std::uint32_t> rtp_info_rtptime;  ///< RTP timestamp of the Range start.
};

/// What DESCRIBE announced.
struct SessionDescription {
  std::string content_base;  ///< Content-Base of the answer, else the request URL.
  SdpSession sdp;
  std::vector<SessionTrack> tracks;            ///< One per m= section, in SDP order.
  std::optional<std::string> block_attribute;  ///< Value of the first a=x-predrop-block, if any.
};

/// Reads a DESCRIBE answer (status already checked): Content-Base, the SDP and per m= section
/// its SETUP URL, key and extension ids. Pure; an error names what was wrong ("SDP: ...").
core::Result<SessionDescription> read_description(std::string_view request_url,
                                                  const RtspResponse& response);

/// Where a session failed.
enum class SessionStep : std::uint8_t {
  kConnect,    ///< The TCP connection (or the URL) failed.
  kDescribe,   ///< DESCRIBE refused or its SDP unusable (also the owner's on_described error).
  kSetup,      ///< A SETUP refused, its reply unusable, or no client ports for a track.
  kPlay,       ///< PLAY refused.
  kPause,      ///< PAUSE, or the PLAY that resumes after it, refused.
  kKeepAlive,  ///< A GET_PARAMETER keep-alive refused while playing.
  kTimeout,    ///< A request went unanswered for the request timeout.
  kClosed,     ///< The server closed the connection while playing.
};

/// A failure as the owner sees it.
struct SessionError {
  SessionStep step = SessionStep::kConnect;
  int status = 0;      ///< RTSP status of a refusal (453, 461, 503, ...); 0 for other failures.
  std::string detail;  ///< Reason phrase of a refusal, or what went wrong.

  /// "connect", "DESCRIBE", "SETUP", "PLAY", "GET_PARAMETER", "timeout" or "closed".
  std::string_view what() const;
  /// "<what>: [<status> ]<detail>", e.g. "SETUP: 461 Unsupported Transport".
  std::string message() const;
};

/// The server of an rtsp:// URL whose host is an IP literal or "localhost" (no name lookup on
/// the loop thread). Errors read "bad URL: ..." or "server host must be an IP address: ...".
core::Result<net::SocketAddress> server_address_of(std::string_view url);

/// Settings of one session.
struct ClientSessionOptions {
  std::string url;  ///< rtsp://host:port/name: DESCRIBE, PLAY, keep-alives and TEARDOWN go here.
  /// Where to connect; nullopt: server_address_of(url).
  std::optional<net::SocketAddress> server;
  bool feedback = false;  ///< Send X-Predrop-Feedback: 1 with every SETUP.
  bool keepalive = true;  ///< GET_PARAMETER while playing.
  /// Keep-alive period; 0: max(5 s, session timeout / 2).
  std::uint64_t keepalive_interval_ms = 0;
  std::uint64_t request_timeout_ms =
      0;  ///< Connect or request unanswered this long fails; 0: wait.
  /// Added to every request (unless the request sets the same header).
  RtspHeaders headers;
  /// Media interleaved on the RTSP connection (RTP/AVP/TCP;interleaved=2k-2k+1 for the k-th
  /// track set up) instead of UDP; client_ports is then not asked.
  bool interleaved = false;
};

/// An RTSP play session. Construct, start(), run the loop.
class ClientSession {
 public:
  /// DESCRIBE answered 301, 302, 303 or 307 with a Location is followed this often at most
  /// (on a new connection to the Location, which is then the session's URL).
  static constexpr int kMaxRedirects = 4;

  /// Upward events (loop thread); each may destroy the session.
  struct Handlers {
    /// DESCRIBE answered: choose the tracks to set up (indices into `d.tracks`, set up in that
    /// order) and prepare for their media. An error ends the session (kDescribe, status 0). When
    /// empty, every track is set up.
    std::function<core::Result<std::vector<std::size_t>>(const SessionDescription& d)> on_described;
    /// Just before the SETUP of a track: the client's RTP and RTCP ports for it. Required. An
    /// error ends the session (kSetup, status 0, "ports: ...").
    std::function<core::Result<PortPair>(const SessionTrack& track)> client_ports;
    /// PLAY answered 200; tracks() holds what was negotiated.
    std::function<void()> on_playing;
    /// The session failed (once); it is closed by now.
    std::function<void(const SessionError& error)> on_failed;
    /// With `interleaved`: one "$" frame (its channel; the payload is valid during the call).
    /// May destroy the session.
    RtspClient::OnFrame on_frame;
  };

  /// A session that does nothing until start().
  ClientSession(net::EventLoop& loop, ClientSessionOptions options, Handlers handlers);
  /// Closes the connection without TEARDOWN (the server's session then times out).
  ~ClientSession();
  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  /// Connects and runs the handshake. A set-up failure (bad URL, no socket) is reported through
  /// on_failed before start() returns.
  void start();
  /// Ends a playing session politely: TEARDOWN, then, once it is answered, the request times out
  /// or the connection drops, closes and calls `on_done`. In any other state it closes and calls
  /// `on_done` at once. No on_failed afterwards.
  void teardown(std::function<void()> on_done);
  /// Pauses a playing session (RFC 2326 §10.6): PAUSE, then `on_paused` once it is answered.
  /// The keep-alive goes on while paused (the server's session timeout still runs). Ignored in
  /// any other state than playing.
  void pause(std::function<void()> on_paused);
  /// Resumes a paused session where it stopped (§10.5: PLAY without Range), then `on_resumed`
  /// once it is answered. Ignored unless paused.
  void resume(std::function<void()> on_resumed);
  /// True from PAUSE's 200 until resume() is answered (or the session ends).
  bool paused() const { return state_ == State::kPaused; }
  /// Closes now, silently (no TEARDOWN, no handler runs). The server keeps a set-up session
  /// until its timeout. Idempotent.
  void close();

  /// True from PLAY's 200 until teardown(), close() or a failure.
  bool playing() const { return state_ == State::kPlaying; }
  /// The session id the server assigned ("" before the first SETUP reply).
  const std::string& session_id() const;
  /// The session timeout the server announced, seconds (60 if none).
  std::uint32_t session_timeout_s() const;
  /// Where the session connects (known after start()).
  const net::SocketAddress& server() const { return server_; }
  /// What DESCRIBE announced (empty before its answer).
  const SessionDescription& description() const { return description_; }
  /// The tracks being set up or set up, in SETUP order, with what was negotiated so far.
  const std::vector<SessionTrack>& tracks() const { return tracks_; }

 private:
  enum class State : std::uint8_t {
    kIdle,
    kConnecting,
    kDescribing,
    kSettingUp,
    kStartingPlay,
    kPlaying,
    kPausing,
    kPaused,
    kResuming,
    kTearingDown,
    kClosed,
  };

  void on_connected(const core::Status& status);
  void on_connection_closed(const core::Status& why);
  void on_deadline();
  void request(RtspMethod method, const std::string& url, const RtspHeaders& headers,
               SessionStep step, std::function<void(const RtspResponse&)> then);
  void describe();
  void on_describe(const RtspResponse& response);
  void setup(std::size_t i);
  void setup_interleaved(std::size_t i);
  static bool is_redirect(int status);
  void redirect(const std::string& location);
  void on_setup(std::size_t i, const RtspResponse& response);
  void play();
  void on_play(const RtspResponse& response);
  void finish_teardown();
  void fail(const SessionError& error);
  void shut();

  net::EventLoop& loop_;
  ClientSessionOptions options_;
  Handlers handlers_;
  State state_ = State::kIdle;
  net::SocketAddress server_;
  std::unique_ptr<RtspClient> rtsp_;
  std::unique_ptr<RtspClient> retired_;  // a connection left by a redirect (closed)
  int redirects_ = 0;
  std::unique_ptr<net::Timer> deadline_;
  std::unique_ptr<net::Timer> keepalive_;
  std::size_t in_flight_ = 0;       // connect + requests awaiting an answer
  bool keepalive_pending_ = false;  // a GET_PARAMETER is awaiting its answer
  std::string waiting_for_;         // what the deadline timer is waiting for
  std::function<void()> on_torn_down_;
  SessionDescription description_;
  std::vector<SessionTrack> tracks_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // tells callbacks we still exist
};

}  // namespace predrop::rtsp

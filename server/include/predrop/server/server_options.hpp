#pragma once
// What a StreamServer is configured with (StreamServerOptions, the streams it offers, the push
// targets) and what it counts (ServerStats): shared by the server's facade (stream_server.hpp)
// and its units (server/src/), which include this header, never the facade's.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "predrop/core/discard_planner.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/media/block_source.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/server/callback_guard.hpp"
#include "predrop/server/live_point.hpp"
#include "predrop/server/session_directory.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::server {

class CouplingGroups;

/// A named stream the server offers (rtsp://host:port/<name>): what its sessions read blocks
/// from (media/include/predrop/media/block_source.hpp).
struct StreamDefinition {
  StreamDefinition() = default;
  /// A file's stream: its source is a FileSource of `file` (looping with
  /// StreamServerOptions::loop: the server makes it so at construction).
  StreamDefinition(std::string stream_name, std::shared_ptr<const media::MediaFile> file);
  /// A stream from any source.
  StreamDefinition(std::string stream_name, std::shared_ptr<const media::BlockSource> from);
  /// A published stream (docs/live.md): its source is what its publisher sends now.
  StreamDefinition(std::string stream_name, std::shared_ptr<LivePoint> point)
      : name(std::move(stream_name)), live(std::move(point)) {}

  /// What a viewer joins now: the fixed source, or the live point's current one (nullptr while
  /// nobody publishes).
  std::shared_ptr<const media::BlockSource> current_source() const {
    return live ? live->current() : source;
  }

  std::string name;
  std::shared_ptr<const media::BlockSource> source;
  /// The file, for a stream defined by one (else empty).
  std::shared_ptr<const media::MediaFile> media;
  /// The point of publication of a published stream (else empty; `source` is then empty).
  std::shared_ptr<LivePoint> live;
};

inline StreamDefinition::StreamDefinition(std::string stream_name,
                                          std::shared_ptr<const media::MediaFile> file)
    : name(std::move(stream_name)),
      source(std::make_shared<media::FileSource>(file, false)),
      media(std::move(file)) {}

inline StreamDefinition::StreamDefinition(std::string stream_name,
                                          std::shared_ptr<const media::BlockSource> from)
    : name(std::move(stream_name)), source(std::move(from)) {}

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

/// How sessions are controlled: what a configuration reload changes in a running server
/// (StreamServer::set_session_control()). It holds for the sessions that start after it; a
/// playing session keeps the controller it started with.
struct SessionControl {
  core::PolicyConfig policy;  ///< For clients that send PDFB.
  double player_rate = 0.0;
  PlayerAdaptation player_adaptation = PlayerAdaptation::kReceiverReports;
  core::PolicyConfig player_policy = default_player_policy();
  /// A browser with transport-cc gets `policy` (as a PDFB client), not player_policy
  /// (control.browser_policy = "client"; docs/webrtc.md "Quality in the page").
  bool browser_client_policy = false;
  /// A browser's interim alert threshold from its transport-cc feedback, µs; 0 = off
  /// (control.browser_alert_ms; docs/webrtc.md "Adaptation from transport-cc").
  std::int64_t browser_alert_us = 80'000;
  /// R of a browser's stages before its first block report, capacity policy, blocks with
  /// disposable frames only (0: none; control.browser_start_rate).
  double browser_start_rate = 0.5;
  /// A browser's repaid leading burst under the capacity policy, bytes (0: the policy's own
  /// repaid_burst_bytes; control.browser_repaid_burst_bytes).
  double browser_repaid_burst_bytes = 8000;
  core::DiscardPolicy discard = core::DiscardPolicy::kPriority;
  std::uint64_t discard_seed = 1;
};

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
  /// A browser with transport-cc gets `policy` (as a PDFB client), not player_policy
  /// (control.browser_policy = "client"; docs/webrtc.md "Quality in the page").
  bool browser_client_policy = false;
  /// A browser's interim alert threshold from its transport-cc feedback, µs; 0 = off
  /// (control.browser_alert_ms; docs/webrtc.md "Adaptation from transport-cc").
  std::int64_t browser_alert_us = 80'000;
  /// R of a browser's stages before its first block report, capacity policy, blocks with
  /// disposable frames only (0: none; control.browser_start_rate).
  double browser_start_rate = 0.5;
  /// A browser's repaid leading burst under the capacity policy, bytes (0: the policy's own
  /// repaid_burst_bytes; control.browser_repaid_burst_bytes).
  double browser_repaid_burst_bytes = 8000;
  core::DiscardPolicy discard = core::DiscardPolicy::kPriority;
  std::uint64_t discard_seed = 1;
  /// Sessions whose clients share an address prefix are coupled (coupling_groups.hpp); null: no
  /// session is. One registry for every worker (the options are copied to each).
  std::shared_ptr<CouplingGroups> coupling;
  bool paced = true;
  /// The pacer runs at most once per quantum and sends what falls due before its next run:
  /// packets leave up to this much early, never late (config blocks.pacing_quantum_ms).
  /// 0: each session at its own deadline, at most one run per millisecond.
  std::uint32_t pacing_quantum_us = 5000;
  bool loop = false;  ///< File streams start over at their end (their FileSource loops).
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
  std::uint64_t sessions_ended_by_api = 0;  ///< DELETE /api/v1/sessions/N (control API).
  std::uint64_t publishes = 0;              ///< ANNOUNCEs accepted (docs/live.md).
  std::uint64_t publishes_refused = 0;      ///< Wrong secret, busy stream, unusable SDP.
  std::uint64_t publishers_replaced = 0;    ///< Closed: another publisher took their stream.
  std::uint64_t publish_packets = 0;        ///< RTP packets publishers sent us.
  /// Publisher frames dropped: RTCP, another track than the video, not RTP, not recording.
  std::uint64_t publish_dropped = 0;
  // WebRTC egress over WHEP (docs/webrtc.md).
  std::uint64_t webrtc_offers = 0;          ///< WHEP offers answered (sessions created).
  std::uint64_t webrtc_offers_refused = 0;  ///< Unusable offer, unknown stream, limits.
  std::uint64_t webrtc_stun_requests = 0;   ///< STUN datagrams on the RTP port.
  /// STUN refused without an answer: malformed, no session's ufrag, MESSAGE-INTEGRITY wrong.
  std::uint64_t webrtc_stun_refused = 0;
  std::uint64_t webrtc_dtls_strangers = 0;  ///< DTLS from an address no valid check came from.
  std::uint64_t webrtc_dtls_connected = 0;  ///< Handshakes completed (sessions started).
  std::uint64_t webrtc_dtls_failed = 0;     ///< Handshakes failed (wrong fingerprint among them).
  /// DTLS datagrams dropped: the handshake thread's queue was full (the peer retransmits).
  std::uint64_t webrtc_dtls_queue_full = 0;
  std::uint64_t webrtc_consent_lost = 0;   ///< Sessions ended: no valid check for 30 s.
  std::uint64_t webrtc_twcc_feedback = 0;  ///< Transport-cc feedback messages read.
  std::uint64_t webrtc_twcc_reports = 0;   ///< Block reports made from transport-cc feedback.
  std::uint64_t alerts = 0;                ///< Interim alerts (PDAL) about a stage in flight.
  std::uint64_t alerts_taken = 0;  ///< Of those, alerts the policy acted on (rest re-planned).
  std::uint64_t redirects = 0;     ///< DESCRIBEs answered 302 to an edge (docs/edge.md).
  std::uint64_t webrtc_nacks = 0;  ///< Generic NACKs read (docs/webrtc.md).
  std::uint64_t webrtc_nacked_packets = 0;      ///< Sequence numbers they named.
  std::uint64_t webrtc_rtx_packets = 0;         ///< RTX retransmissions sent.
  std::uint64_t webrtc_rtx_bytes = 0;           ///< Their bytes (SRTP included).
  std::uint64_t webrtc_rtx_unknown = 0;         ///< NACKed numbers not kept (never sent, too old).
  std::uint64_t webrtc_rtx_capped = 0;          ///< NACKed numbers over the retransmission cap.
  std::uint64_t webrtc_key_frame_requests = 0;  ///< PLIs and FIRs read.
  std::uint64_t webrtc_page_reports = 0;        ///< Player pages' quality reports (docs/webrtc.md).
  std::uint64_t webrtc_page_quality_blocks = 0;  ///< Block reports handed on with the page's P.
};

}  // namespace predrop::server

#pragma once
// A pulled stream (issue 23 item 2, docs/live.md "Pull"): a stream whose source is another RTSP
// server or a camera, `[server.streams.NAME] source = "rtsp://host:port/path"`. The puller plays
// the upstream with the project's one RTSP client (rtsp::ClientSession, media interleaved on its
// TCP connection: RTP/AVP/TCP, RFC 2326 §10.12) and feeds the video's RTP into the stream's
// media::LiveSource through its LivePoint, exactly as a publisher's RTP is fed: the same
// depacketizer, block cutting, ring and viewers' sessions.
//
//   idle ──viewer or "always"──▶ connecting ──PLAY 200──▶ playing ──failure──▶ backing off
//     ▲                              │                        │                    │
//     └──── no viewer for linger ────┼────────────────────────┘                    │
//                                    └──failure──▶ backing off ──delay over──▶ connecting
//
// - pull = "always": connects at start-up and keeps the upstream played.
// - pull = "on-demand" (default): at start-up the upstream is only DESCRIBEd, so that viewers
//   can be described (their SDP is the upstream's video); a viewer's SETUP starts the pull, and
//   `linger` after the last viewer left it stops (the source and its SDP stay).
// - Failures -- refused, 404, unparsable answers, a dropped connection, a BYE, no RTP for
//   `stall` -- are counted and logged, and the next attempt waits for PullBackoff's delay
//   (0.5 s doubling to 30 s, ±25 % jitter, reset after 10 s of playing).
// - A reconnect with the same video parameters continues the same LiveSource
//   (LiveSource::restart): waiting viewers resume at the next key frame. Other parameters make
//   a new source: the old one ends (its viewers get a BYE) and new viewers get the new SDP.
//
// Threading: the loop given (the program's main loop); status() on that thread. Every timer
// callback runs inside the CallbackGuard given; the RTSP client contains its own.
#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/server/callback_guard.hpp"
#include "predrop/server/live_point.hpp"
#include "predrop/server/pull_backoff.hpp"
#include "predrop/server/server_options.hpp"

namespace predrop::rtsp {
class ClientSession;
struct SessionDescription;
struct SessionError;
}  // namespace predrop::rtsp
namespace predrop::net {
class SrtpSession;
}

namespace predrop::server {

/// Where a pull is.
enum class PullState : std::uint8_t { kIdle, kConnecting, kPlaying, kBackingOff };
/// "idle", "connecting", "playing", "backing-off".
const char* to_string(PullState state);

/// What /metrics and the logs show of one pulled stream.
struct PullStatus {
  std::string stream;
  std::string url;
  PullState state = PullState::kIdle;
  std::uint64_t attempts = 0;           ///< Connections begun (probes included).
  std::uint64_t failures = 0;           ///< Attempts that failed or broke.
  std::uint32_t failures_in_a_row = 0;  ///< Since the last stable run (the back-off's count).
  std::uint64_t plays = 0;              ///< Attempts that reached PLAY 200.
  std::uint64_t packets = 0;            ///< RTP packets fed to the source.
  std::uint64_t dropped = 0;            ///< Frames not used: other channels, not RTP, SRTP failed.
  std::uint64_t stalls = 0;             ///< Upstreams that went silent while playing.
  std::uint64_t new_sources = 0;        ///< Sources made (1 + reconnects with new parameters).
  std::string last_error;               ///< The last failure, as logged.
};

/// One pulled stream (see the file comment).
class LivePull {
 public:
  /// `point` must have settings().pull.
  LivePull(net::EventLoop& loop, const net::Clock& clock, CallbackGuard& guard, std::string stream,
           std::shared_ptr<LivePoint> point);
  /// Stops (the source ends).
  ~LivePull();
  LivePull(const LivePull&) = delete;
  LivePull& operator=(const LivePull&) = delete;

  /// Starts: connects ("always") or describes the upstream ("on-demand").
  void start();
  /// Closes the upstream connection (TEARDOWN not waited for) and ends the source.
  void stop();
  PullStatus status() const { return status_; }

  /// The check interval: demand, stall and back-off are looked at this often.
  static constexpr std::uint64_t kTickMs = 100;

 private:
  void tick();
  void connect(bool probe);
  std::uint64_t viewers() const;
  bool on_described(const rtsp::SessionDescription& d, std::vector<std::size_t>& chosen);
  void on_playing();
  void on_frame(std::uint8_t channel, std::span<const std::uint8_t> payload);
  void fail(const std::string& why);
  void go_idle(const char* why);
  void close_session();

  net::EventLoop& loop_;
  const net::Clock& clock_;
  CallbackGuard& guard_;
  std::shared_ptr<LivePoint> point_;
  PullSettings settings_;
  PullStatus status_;
  PullBackoff backoff_;
  std::unique_ptr<net::Timer> timer_;
  std::unique_ptr<rtsp::ClientSession> session_;
  std::unique_ptr<rtsp::ClientSession> retired_;  // closed from its own handler: freed next tick
  std::vector<std::uint8_t> scratch_;             // one frame, unprotected in place
  std::shared_ptr<media::LiveSource> source_;
  media::LiveVideoSpec spec_;
  std::optional<media::LiveAudioSpec> audio_spec_;
  // The tracks pulled: [0] the video, [1] the audio (if the upstream has AAC or Opus).
  struct Pulled {
    std::unique_ptr<net::SrtpSession> srtp;  // the upstream's SRTP, when it keys the track
    int rtp_channel = -1;                    // its interleaved channels
    int rtcp_channel = -1;
    int payload_type = -1;
    bool wanted = false;
  };
  std::array<Pulled, 2> pulled_;
  std::uint64_t token_ = 0;
  bool probing_ = false;  // this attempt only DESCRIBEs
  bool fed_ = false;      // RTP went into the source since its last restart()
  std::uint64_t retry_at_us_ = 0;
  std::uint64_t last_media_us_ = 0;
  std::uint64_t last_viewer_us_ = 0;
  std::uint64_t playing_since_us_ = 0;
  std::minstd_rand jitter_;
};

/// The pulled streams' lines of /metrics: predrop_pull_state{stream,state} (1 for the state it
/// is in), predrop_pull_attempts_total, _failures_total, _failures_in_a_row, _plays_total,
/// _packets_total, _dropped_total, _stalls_total, each with {stream="NAME"}.
std::string render_pull_metrics(std::span<const PullStatus> pulls);

/// A LivePull for each stream of `streams` that is pulled (LivePointSettings::pull), started.
std::vector<std::unique_ptr<LivePull>> start_pulls(net::EventLoop& loop, const net::Clock& clock,
                                                   CallbackGuard& guard,
                                                   const std::vector<StreamDefinition>& streams);

}  // namespace predrop::server

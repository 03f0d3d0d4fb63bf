#pragma once
// One light client of the load tester: RTSP set-up (DESCRIBE, SETUP of each track, PLAY), SRTP
// receive and stage accounting through chain::StageReceiver, and per-block PDFB feedback whose
// quality figure comes from the block's network loss instead of decoding:
//
//   P = -10 log10( 10^(-cap/10) + loss x 10^(-concealed/10) )   [dB]
//
// i.e. the PSNR of a picture in which the fraction `loss` = 1 - received/announced of the area
// was lost and concealed at `concealed` dB (default 20) while the rest is at the PSNR cap
// (default 60): 60 dB lossless, 50 dB at 0.1 % loss, 40 dB at 1 %, 30 dB at 10 %, 20 dB at 100 %.
// The server's own pre-discards are not visible to a light client (it does not know the
// reference packetization), so P reflects network loss only.
//
// Time: the end of the stream, report times and packet arrivals read the injected net::Clock.
// Threading: loop thread. Lifetime: the owner destroys a client only outside its callbacks.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "predrop/core/reception_meter.hpp"
#include "predrop/load/scenario.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"

namespace predrop::load {

/// The loss-derived quality figure above.
double loss_quality_db(double loss, double cap_db, double concealed_db);

/// Settings of one light client.
struct LightClientConfig {
  std::string url;  ///< rtsp://host:port/name
  net::SocketAddress server;
  LoadGroup group;
  double request_timeout_s = 10.0;
  double psnr_cap_db = 60.0;
  double concealed_db = 20.0;
  double end_after_idle_s = 5.0;  ///< The stream is over after this long without media.
};

/// A block as a light client measured and reported it.
struct LightBlock {
  core::StageMeasurement measurement;
  double loss = 0.0;        ///< 1 - received / announced
  double quality_db = 0.0;  ///< P sent in the PDFB (also computed without feedback)
  bool reported = false;    ///< A PDFB went out.
  std::uint64_t report_time_us = 0;
  double report_delay_us = 0.0;  ///< From the block's last packet to the PDFB leaving.
};

/// Counters of one client.
struct LightClientStats {
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;
  std::uint64_t blocks = 0;
  std::uint64_t reports = 0;
  std::uint64_t srtp_failures = 0;  ///< Authentication/replay failures of verified packets.
  std::uint64_t srtp_verified = 0;
  std::uint64_t malformed = 0;
};

/// Why a client stopped before it was asked to.
struct LightFailure {
  int status = 0;    ///< RTSP status of a refusal (453, 503, ...), 0 for other failures.
  std::string what;  ///< "connect", "DESCRIBE", "SETUP", "PLAY", "timeout", "closed", "stream end"
  std::string detail;
};

/// One scripted light client.
class LightClient {
 public:
  /// Upward events; each runs on the loop thread, none may destroy the client.
  struct Events {
    std::function<void(LightClient&)> on_playing;
    std::function<void(LightClient&, const LightBlock&)> on_block;
    std::function<void(LightClient&, const LightFailure&)> on_failed;  ///< Then it is inert.
    std::function<void(LightClient&)> on_left;  ///< leave() finished (TEARDOWN answered or not).
    /// The server's public number for this session became known (server_number()).
    std::function<void(LightClient&)> on_numbered;
  };

  /// `clock` must outlive the client.
  LightClient(net::EventLoop& loop, const net::Clock& clock, LightClientConfig config,
              Events events);
  ~LightClient();
  LightClient(const LightClient&) = delete;
  LightClient& operator=(const LightClient&) = delete;

  /// Connects and runs DESCRIBE / SETUP / PLAY.
  void start();
  /// TEARDOWN, then closes everything and reports on_left.
  void leave();
  /// Closes everything now, silently.
  void abort();
  /// Closes idle stages and notices the end of the stream; call every few tens of ms.
  void poll(std::uint64_t now_us);

  bool playing() const;
  const std::string& session_id() const;
  /// The session's public number, the label of its series in the server's /metrics, read from
  /// the CNAME "predrop-<number>" of the server's first SRTCP sender report; empty until then.
  const std::string& server_number() const;
  const LightClientStats& stats() const;
  const LightClientConfig& config() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace predrop::load

#pragma once
// The load tester's scenario: what predrop-load runs, read from a TOML file (configs/load/*.toml,
// every key documented in configs/load/README.md). Unknown keys and out-of-range values are
// errors, so that a typo never runs a different test than the one written down.
#include <cstdint>
#include <string>
#include <vector>

#include "predrop/core/result.hpp"

namespace predrop::load {

/// How a client receives.
enum class LoadMode : std::uint8_t {
  kLight,  ///< RTSP + SRTP receive + stage accounting + PDFB with a loss-derived quality; no
           ///< decode.
  kFull,   ///< The measuring client: decodes and reports PSNR against the reference file.
};

/// One kind of client; clients are drawn from the groups in proportion to `weight`.
struct LoadGroup {
  std::string name = "default";
  double weight = 1.0;
  bool feedback = true;  ///< Send PDFB per block (else the server treats it like a plain player).
  /// SRTP verification of light clients: 1 = decrypt and authenticate every packet; N > 1 = every
  /// N-th packet only (stage accounting reads the clear RTP header and extension of all).
  std::uint32_t srtp_verify_every = 1;
  bool video_only = false;  ///< SETUP only the video track.
};

/// Everything predrop-load runs.
struct LoadScenario {
  std::string url;      ///< rtsp://host:port/name (host: an IP literal or localhost)
  int server_pid = 0;   ///< For CPU figures; 0 = find the process listening on the RTSP port.
  std::string metrics;  ///< host:port of the server's Prometheus endpoint; empty = none.
  double metrics_poll_s = 0.5;

  std::uint32_t clients = 10;       ///< Concurrent clients to reach by the end of the ramp.
  double ramp_s = 5.0;              ///< Clients join linearly over this time.
  double hold_s = 20.0;             ///< Then the population is held (with churn) this long.
  double drain_s = 3.0;             ///< TEARDOWN wait at the end; then everything is closed.
  std::uint32_t max_joins = 10000;  ///< Bound on join attempts over the whole run.
  /// Client threads, each with its own event loop and a share of the clients (shards.hpp).
  std::uint32_t threads = 1;

  double join_per_s = 0.0;   ///< Churn during the hold: extra joins per second (Poisson).
  double leave_per_s = 0.0;  ///< Churn during the hold: random leaves per second (Poisson).
  /// Churn keeps the population near `clients`: joins happen only below it, leaves only above
  /// clients - churn_band.
  std::uint32_t churn_band = 0;

  std::vector<LoadGroup> groups;  ///< At least one.

  std::uint32_t full_clients = 0;  ///< Of the clients, this many run in full mode (decode + PSNR).
  std::string reference;           ///< Reference media file for full mode.

  double request_timeout_s = 10.0;  ///< An RTSP request unanswered this long is an error.
  double psnr_cap_db = 60.0;        ///< Quality figure of a lossless block (light and full).
  double concealed_db = 20.0;       ///< Light mode: PSNR assumed for the area of lost packets.
  double progress_s = 0.5;          ///< Live progress line interval.
  std::string csv;                  ///< Per-interval CSV (empty = none).
  std::string summary_csv;          ///< One summary row appended (header written if new).
  std::string label;                ///< Free text copied into the summary row.
  std::uint64_t seed = 1;
};

/// Parses a scenario from TOML text; `origin` names the source in error messages.
core::Result<LoadScenario> parse_load_scenario(std::string_view toml, std::string_view origin);
/// Reads and parses a scenario file.
core::Result<LoadScenario> load_scenario_file(const std::string& path);

}  // namespace predrop::load

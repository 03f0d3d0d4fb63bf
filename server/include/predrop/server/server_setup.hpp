#pragma once
// Glue between the configuration file, the command line and the running server: applies CLI
// overrides, maps config::ServerConfig onto StreamServerOptions (loading and packetizing the
// media). The Prometheus metrics are rendered by metrics_text.hpp (included here for callers).
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "predrop/config/config.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/core/result.hpp"
#include "predrop/server/metrics_text.hpp"
#include "predrop/server/stream_server.hpp"
#include "predrop/server/stream_workers.hpp"

namespace predrop::server {

/// Command-line values that override the file (empty = not given).
struct CliOverrides {
  std::string mode;
  std::string listen;
  std::vector<std::string> streams;  ///< NAME=PATH
  std::string policy;
  std::optional<double> fixed_rate;
  std::optional<double> player_rate;
  /// How clients without PDFB are controlled: "rr" or "fixed" (control.player_adaptation).
  std::string player_adaptation;
  /// Bytes of media queue per interleaved (RTSP over TCP) connection; 0 refuses TCP transport.
  std::optional<std::size_t> interleaved_queue_bytes;
  std::string srtp;
  std::optional<std::uint16_t> rtp_port;
  std::string trace_csv;
  std::string metrics;
  bool loop = false;
  /// No UDP GSO on the RTP socket (StreamServerOptions::gso = false).
  bool no_gso = false;
  std::optional<std::uint32_t> max_stages;
  std::vector<std::string> pushes;  ///< STREAM@ADDR:PORT@FILE.sdp
  std::string log_level;
  /// Worker loops: "auto", 0 (= auto) or 1..64 (server.workers).
  std::string workers;
};

/// The number of worker loops for server.workers = `configured`: itself, or for 0 ("auto") one
/// per core as std::thread::hardware_concurrency() reports them (1 if it reports none).
std::size_t resolve_workers(std::uint32_t configured);

/// Applies the overrides to `config` and validates the result.
core::Status apply_overrides(config::ServerConfig& config, const CliOverrides& cli);

/// How sessions are controlled under `config` (with the CLI's overrides): the part of the
/// options a reload changes.
core::Result<SessionControl> make_session_control(const config::ServerConfig& config,
                                                  const CliOverrides& cli);

/// What `after` changes against `before` that only a restart applies (listen addresses, streams,
/// workers, SRTP, blocks...): the keys' names, comma-separated; empty if none.
std::string restart_only_changes(const config::ServerConfig& before,
                                 const config::ServerConfig& after);

/// Loads every stream's media and builds the server's options.
core::Result<StreamServerOptions> make_stream_options(const config::ServerConfig& config,
                                                      const CliOverrides& cli);

}  // namespace predrop::server

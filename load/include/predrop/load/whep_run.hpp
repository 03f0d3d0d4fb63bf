#pragma once
// `predrop-load whep`: N scripted WHEP viewers (whep_client.hpp) against a running server on one
// loop: started evenly over a ramp, a settle time, then a measured window over which the
// server's CPU (/proc, its whole process), its packets sent and late stages (/metrics), and what
// the viewers received are taken; then every viewer DELETEs its session. The WebRTC rows of
// bench/perf/README.md ("WebRTC egress") come from it.
//
// Bounded: runs ramp + settle + hold and at most a few seconds of leaving. Time: the injected
// net::Clock. Threading: loop thread.
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

#include "predrop/core/result.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"

namespace predrop::load {

/// What to run.
struct WhepRunConfig {
  net::SocketAddress http;  ///< The server's HTTP listener (metrics_listen): WHEP and /metrics.
  std::string stream;
  std::uint32_t clients = 10;
  double ramp_s = 5.0;
  double settle_s = 3.0;  ///< After the ramp, before the window opens.
  double hold_s = 20.0;   ///< The measured window.
  int server_pid = 0;     ///< 0: found by the HTTP port (/proc).
  std::uint32_t srtp_verify_every = 16;
  std::uint64_t feedback_interval_us = 50'000;
};

/// What a run measured (window figures are over the hold window only).
struct WhepRunSummary {
  std::uint32_t clients = 0;
  std::uint32_t playing_at_open = 0;              ///< Viewers playing when the window opened.
  std::uint32_t playing_at_close = 0;             ///< ... and when it closed.
  std::map<std::string, std::uint32_t> failures;  ///< By kind ("POST", "ICE", "timeout", ...).
  double window_s = 0;
  double received_pkt_s = 0;      ///< SRTP packets the viewers received per second.
  double received_mbit_s = 0;     ///< Their bytes, Mbit/s.
  double server_sent_pkt_s = -1;  ///< From /metrics (sessions' packets_sent_total); -1 unknown.
  double server_cpu = -1;         ///< Fraction of one core over the window; -1 unknown.
  double server_us_per_packet = -1;
  double late_stages_window = -1;  ///< predrop_late_blocks_total over the window; -1 unknown.
  double late_stages_total = -1;   ///< ... since the server started.
  std::uint64_t srtp_verified = 0;
  std::uint64_t srtp_failures = 0;
  std::uint64_t feedback_sent = 0;  ///< transport-cc messages, the whole run.
  double connect_ms_p50 = 0;        ///< POST to DTLS connected.
  double connect_ms_max = 0;
  /// Server CPU per join, ms: from before the first POST to the window's open, less the media's
  /// share of it (the window's CPU rate over the settle time and half the ramp: viewers start
  /// evenly over it), per viewer playing at the open. The whole join: HTTP and SDP, ICE-lite,
  /// the DTLS handshake (an ECDSA P-256 signature, ECDHE, the peer's certificate), SRTP keys.
  /// -1 unknown (no server pid).
  double server_join_ms = -1;
};

/// Runs it; an error only when nothing could be set up.
core::Result<WhepRunSummary> run_whep(net::EventLoop& loop, const net::Clock& clock,
                                      const WhepRunConfig& config, std::FILE* progress);

/// The summary as a few human lines.
void print_whep_summary(std::FILE* out, const WhepRunConfig& config, const WhepRunSummary& s);

/// Appends one CSV row (a header first if the file is new).
core::Status append_whep_csv(const std::string& path, const std::string& label,
                             const WhepRunSummary& s);

}  // namespace predrop::load

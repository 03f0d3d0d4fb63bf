// predrop-server: the adaptive pre-discard streaming server (mode "stream") and DDL relay
// (mode "ddl"). Configuration comes from a TOML file (configs/*.toml); a few flags override it.
#include <CLI/CLI.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "predrop/config/config.hpp"
#include "predrop/core/log.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/ddl/relay.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/server/block_trace_csv.hpp"
#include "predrop/server/control_api.hpp"
#include "predrop/server/live_pull.hpp"
#include "predrop/server/metrics_endpoint.hpp"
#include "predrop/server/server_setup.hpp"
#include "predrop/server/status_page.hpp"
#include "predrop/server/stream_server.hpp"
#include "predrop/server/stream_workers.hpp"
#include "predrop/server/whep_http.hpp"

using namespace predrop;

namespace {

// SIGHUP does not end the server (a closed terminal or a log rotation sends it): the trace file
// is reopened, so that a rotated trace continues in a new file.
void reopen_trace(server::BlockTraceCsv* trace, const config::ServerConfig& config) {
  if (trace == nullptr) {
    core::log(core::LogLevel::kInfo, "server", "SIGHUP: ignored (no trace file to reopen)");
    return;
  }
  if (auto st = trace->reopen(); !st) {
    core::log(core::LogLevel::kWarn, "server", "SIGHUP: %s", st.error().message.c_str());
  } else {
    core::log(core::LogLevel::kInfo, "server", "SIGHUP: trace %s reopened",
              config.server.trace_csv.c_str());
  }
}

int run_stream(const config::ServerConfig& config, const server::CliOverrides& cli,
               const std::string& config_path) {
  auto options = server::make_stream_options(config, cli);
  if (!options) {
    core::log(core::LogLevel::kError, "server", "%s", options.error().message.c_str());
    return 2;
  }
  std::unique_ptr<server::BlockTraceCsv> trace;
  if (!config.server.trace_csv.empty()) {
    auto t = server::BlockTraceCsv::open(config.server.trace_csv);
    if (!t) {
      core::log(core::LogLevel::kError, "server", "%s", t.error().message.c_str());
      return 2;
    }
    trace = std::move(t.value());
  }
  // The trace is written by every worker thread (one row per block, not per packet) and flushed,
  // reopened and read for /metrics on the main thread: one mutex around it.
  std::mutex trace_mutex;
  // libsrtp's init runs its self-tests (~50-100 ms): once per process, not per session.
  net::SrtpLibraryGuard srtp_library;
  if (const std::string why = net::srtp_crypto_fallback_reason(); !why.empty()) {
    core::log(core::LogLevel::kWarn, "server", "SRTP on libsrtp's own crypto: OpenSSL's %s",
              why.c_str());
  }
  // The main loop accepts RTSP and hands each connection to a worker, serves /metrics and
  // watches the signals; the workers stream (server/include/predrop/server/stream_workers.hpp).
  net::EventLoop loop;
  auto on_block = [&trace, &trace_mutex](const server::BlockTrace& t) {
    if (trace) {
      std::lock_guard lock(trace_mutex);
      trace->write(t);
    }
    core::log(core::LogLevel::kDebug, "block", "%s", server::BlockTraceCsv::format(t).c_str());
  };
  const std::size_t workers = server::resolve_workers(config.server.workers);
  const std::vector<server::StreamDefinition> streams = options->streams;  // shared points
  server::StreamWorkers srv(loop, std::move(options.value()), workers, on_block);
  try {
    srv.start();
  } catch (const std::exception& e) {
    core::log(core::LogLevel::kError, "server", "cannot start: %s", e.what());
    return 1;
  }
  // Pulled streams (docs/live.md "Pull") are played from the main loop into their live points.
  const net::MonotonicClock clock;
  std::vector<std::unique_ptr<server::LivePull>> pulls =
      server::start_pulls(loop, clock, srv.callback_guard(), streams);
  server::ControlBackend control;  // outlives the endpoint that calls into it
  server::WhepBackend whep;        // so does this
  std::unique_ptr<server::MetricsEndpoint> metrics;
  if (config.server.metrics_listen) {
    auto addr = net::SocketAddress::from_ip(config.server.metrics_listen->host,
                                            config.server.metrics_listen->port);
    if (!addr) {
      core::log(core::LogLevel::kError, "server", "metrics_listen: %s",
                addr.error().message.c_str());
      return 2;
    }
    try {
      metrics = std::make_unique<server::MetricsEndpoint>(
          loop, *addr, [&srv, &metrics, &trace, &trace_mutex, &pulls] {
            // Each worker copies its counters and sessions on its own thread (a short wait on
            // the main loop, off the packet path); the sum is rendered here.
            const std::vector<server::ServerSnapshot> snaps = srv.snapshots();
            std::vector<server::PullStatus> pulled;
            pulled.reserve(pulls.size());
            for (const auto& p : pulls) {
              pulled.push_back(p->status());
            }
            std::lock_guard lock(trace_mutex);
            return server::render_metrics(snaps, {metrics.get(), trace.get(), pulled});
          });
      core::log(core::LogLevel::kInfo, "server", "metrics at http://%s/metrics",
                metrics->address().to_string().c_str());
      // The JSON control API on the same listener (docs/control-api.md).
      for (const auto& s : config.server.streams) {
        control.streams.push_back({s.name, s.path});
      }
      control.snapshots = [&srv] { return srv.snapshots(); };
      control.history = [&srv](std::uint64_t n) { return srv.session_history(n); };
      control.end_session = [&srv](std::uint64_t n) {
        const bool ended = srv.end_session(n);
        if (ended) {
          core::log(core::LogLevel::kInfo, "server", "session %llu ended by the API",
                    static_cast<unsigned long long>(n));
        }
        return ended;
      };
      control.wall_now_us = [] {
        return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
      };
      control.token = config.server.api_token;
      metrics->set_control(
          [&control](const server::HttpRequest& q) { return server::handle_control(q, control); });
      core::log(core::LogLevel::kInfo, "server", "control API at http://%s/api/v1/ (%s)",
                metrics->address().to_string().c_str(),
                control.token.empty() ? "read-only: no server.api_token" : "token set");
      // The status page at / and /status reads that API from the browser.
      metrics->set_pages(server::serve_status_page);
      core::log(core::LogLevel::kInfo, "server", "status page at http://%s/",
                metrics->address().to_string().c_str());
      // WHEP and a player page per stream on the same listener (docs/webrtc.md).
      for (const auto& s : config.server.streams) {
        whep.streams.push_back(s.name);
      }
      whep.offer = [&srv](std::string_view stream, std::string_view offer,
                          const net::SocketAddress& peer,
                          std::string_view ip) { return srv.whep_offer(stream, offer, peer, ip); };
      whep.end = [&srv](std::string_view session) { return srv.whep_delete(session); };
      whep.quality = [&srv](std::string_view session, const server::PageQuality& report) {
        return srv.whep_quality(session, report);
      };
      metrics->set_whep(
          [&whep](const server::HttpRequest& q) { return server::handle_whep(q, whep); });
    } catch (const std::exception& e) {
      core::log(core::LogLevel::kError, "server", "%s", e.what());
      return 1;
    }
  }
  std::string ports;
  for (std::size_t k = 0; k < srv.worker_count(); ++k) {
    if (!ports.empty()) ports += ", ";
    ports += std::to_string(srv.rtp_port(k)) + "/" + std::to_string(srv.rtp_port(k) + 1);
  }
  core::log(core::LogLevel::kInfo, "server",
            "%zu worker loop%s%s, RTP/RTCP ports %s, SRTP %s (crypto %s), policy %s",
            srv.worker_count(), srv.worker_count() == 1 ? "" : "s",
            config.server.workers == 0 ? " (auto: one per core)" : "", ports.c_str(),
            std::string(config::srtp_name(config.server.srtp)).c_str(),
            std::string(net::to_string(net::srtp_crypto_in_use())).c_str(),
            config.control.policy.c_str());
  // Logged last: scripts wait for this line (tests/integration/lib.sh), so that everything
  // above is in place once it appears.
  for (const auto& s : config.server.streams) {
    core::log(core::LogLevel::kInfo, "server", "serving rtsp://%s/%s (%s)",
              srv.rtsp_address().to_string().c_str(), s.name.c_str(),
              s.publish ? "published: ANNOUNCE with ?secret=" : s.path.c_str());
  }
  // A reload (SIGHUP, POST /api/v1/reload) re-reads the file with the same command-line
  // overrides and applies what can change under playing sessions: how sessions started from now
  // on are controlled ([control], [discard]), the log level and the API token. Playing sessions
  // keep their controllers; keys only a restart applies are named in the answer.
  config::ServerConfig running = config;
  auto reload = [&]() -> core::Result<std::string> {
    if (config_path.empty()) return core::make_error("started without -c: no file to re-read");
    auto loaded = config::load_config_file(config_path);
    if (!loaded) return loaded.error();
    config::ServerConfig next = std::move(loaded.value());
    if (auto st = server::apply_overrides(next, cli); !st) return st.error();
    auto session_control = server::make_session_control(next, cli);
    if (!session_control) return session_control.error();
    if (!srv.set_session_control(*session_control)) {
      return core::make_error("a worker did not take the new configuration");
    }
    core::LogLevel level;
    if (core::parse_log_level(next.server.log_level, level)) core::set_log_level(level);
    control.token = next.server.api_token;
    std::string message = "policy " + next.control.policy +
                          " for sessions started from now on; playing sessions keep theirs";
    if (const std::string later = server::restart_only_changes(running, next); !later.empty()) {
      message += "; applied only by a restart: " + later;
    }
    running.control = next.control;
    running.discard = next.discard;
    running.server.log_level = next.server.log_level;
    running.server.api_token = next.server.api_token;
    core::log(core::LogLevel::kInfo, "server", "reload: %s", message.c_str());
    return message;
  };
  control.reload = reload;
  // Every callback of the program runs inside the acceptor loop's exception boundary.
  server::CallbackGuard& guard = srv.callback_guard();
  auto flush_trace = [&trace, &trace_mutex] {
    if (!trace) return;
    std::lock_guard lock(trace_mutex);
    trace->flush();
  };
  // SIGTERM/SIGINT: an orderly end. Every worker sends each of its clients an RTCP BYE and
  // closes its handles, the threads are joined (in srv.stop()), the trace is flushed, and run()
  // returns after this loop iteration, so the process exits 0 at once.
  net::SignalWatcher signals(loop, {SIGINT, SIGTERM}, [&](int signum) {
    core::log(core::LogLevel::kInfo, "server", "signal %d (%s): shutting down", signum,
              signum == SIGTERM ? "SIGTERM" : "SIGINT");
    guard.run(server::CallbackKind::kTimer, [&] { pulls.clear(); });
    guard.run(server::CallbackKind::kTimer, [&] { srv.stop(); });
    guard.run(server::CallbackKind::kTimer, [&] { metrics.reset(); });
    flush_trace();
    loop.stop();
  });
  // SIGHUP: the trace is reopened (reopen_trace()) and, with -c, the configuration reloaded;
  // the server goes on (a bad file is logged and changes nothing).
  net::SignalWatcher hangup(loop, {SIGHUP}, [&](int) {
    guard.run(server::CallbackKind::kTimer, [&] {
      std::lock_guard lock(trace_mutex);
      reopen_trace(trace.get(), config);
    });
    if (config_path.empty()) return;
    guard.run(server::CallbackKind::kTimer, [&] {
      if (auto done = reload(); !done) {
        core::log(core::LogLevel::kWarn, "server", "SIGHUP: reload refused, nothing changed: %s",
                  done.error().message.c_str());
      }
    });
  });
  hangup.keep_loop_alive(false);
  // The trace is buffered: written once a second (and on SIGTERM and at exit), not per row.
  net::Timer trace_flush(loop, flush_trace);
  trace_flush.start(1000, 1000);
  trace_flush.keep_loop_alive(false);
  loop.run();
  pulls.clear();
  srv.stop();
  metrics.reset();
  flush_trace();
  return 0;
}

}  // namespace

namespace {
int run(int argc, char** argv) {
  // A peer that resets its TCP connection must cost a write error, not the process (libuv does
  // not ignore SIGPIPE itself). SIGHUP must not end the process either; stream mode installs
  // its own handler, DDL mode keeps it ignored.
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGHUP, SIG_IGN);
  CLI::App app{
      "predrop-server: adaptive pre-discard streaming server (RTSP/SRTP) and DDL relay.\n"
      "Each block of media (a stage) is sent with a fraction R of its packets discarded before "
      "they enter the network; R follows each client's per-block reports."};
  std::string config_path;
  server::CliOverrides cli;
  app.add_option("-c,--config", config_path, "TOML configuration (see configs/README.md)")
      ->check(CLI::ExistingFile);
  app.add_option("--mode", cli.mode, "Override server.mode: stream or ddl");
  app.add_option("--listen", cli.listen, "Override server.rtsp_listen (host:port)");
  app.add_option("--stream", cli.streams, "Add a stream NAME=PATH (repeatable)");
  app.add_option("--policy", cli.policy,
                 "Override control.policy: basic, history, fixed, adaptive, capacity");
  app.add_option("--fixed-rate", cli.fixed_rate, "Override control.fixed_rate");
  app.add_option("--player-rate", cli.player_rate,
                 "R for clients that send no PDFB reports (ffplay, GStreamer) with "
                 "--player-adaptation fixed; default 0");
  app.add_option("--player-adaptation", cli.player_adaptation,
                 "Override control.player_adaptation for clients without PDFB: rr (R from "
                 "their RTCP Receiver Reports, capacity policy; default) or fixed (--player-rate)");
  app.add_option("--interleaved-queue-bytes", cli.interleaved_queue_bytes,
                 "Media queue per RTSP-over-TCP (interleaved) connection; packets that do not "
                 "fit are dropped; 0 refuses TCP transport (461); 0..67108864; overrides "
                 "server.interleaved_queue_bytes (default 262144)");
  app.add_option("--srtp", cli.srtp,
                 "Override server.srtp: AES_CM_128_HMAC_SHA1_80, AES_CM_128_HMAC_SHA1_32, "
                 "AEAD_AES_128_GCM or none");
  app.add_option("--rtp-port", cli.rtp_port,
                 "Server RTP port of worker 0 (RTCP is +1; worker k uses +2k); default: a free "
                 "pair per worker");
  app.add_option("--trace-csv", cli.trace_csv, "Override server.trace_csv");
  app.add_option("--metrics", cli.metrics, "Override server.metrics_listen (host:port)");
  app.add_flag("--loop", cli.loop, "Loop the media forever");
  app.add_flag("--no-gso", cli.no_gso,
               "Send every RTP packet as its own sendmmsg message. By default the packets of one "
               "frame to one client go as one UDP GSO message (UDP_SEGMENT), and the server falls "
               "back to this by itself, for good, if the kernel refuses GSO");
  app.add_option("--max-stages", cli.max_stages, "Stop each session after this many blocks");
  app.add_option("--push", cli.pushes,
                 "Send STREAM to ADDR:PORT without RTSP and write an SDP file: "
                 "STREAM@ADDR:PORT@FILE.sdp (repeatable)");
  app.add_option("--workers", cli.workers,
                 "Override server.workers: streaming worker loops (threads), each with its own "
                 "sessions and RTP/RTCP port pair (--rtp-port P: worker k uses P+2k); 1..64, or "
                 "auto/0 = one per core (the default)");
  app.add_option("--log-level", cli.log_level, "trace, debug, info, warn, error, off");
  std::string srtp_crypto = "openssl";
  app.add_option("--srtp-crypto", srtp_crypto,
                 "What libsrtp's AES and HMAC-SHA1 run on: openssl (default; OpenSSL's libcrypto, "
                 "installed under libsrtp after its own test vectors pass) or libsrtp (the crypto "
                 "libsrtp was built with: NSS on Debian, several times slower per packet)")
      ->check(CLI::IsMember({"openssl", "libsrtp"}));
  app.set_version_flag("--version", "predrop-server " PREDROP_VERSION);
  CLI11_PARSE(app, argc, argv);
  net::set_srtp_crypto(net::parse_srtp_crypto(srtp_crypto).value_or(net::SrtpCrypto::OpenSsl));

  config::ServerConfig config;
  if (!config_path.empty()) {
    auto loaded = config::load_config_file(config_path);
    if (!loaded) {
      std::fprintf(stderr, "predrop-server: %s\n", loaded.error().message.c_str());
      return 2;
    }
    config = std::move(loaded.value());
  }
  if (auto st = server::apply_overrides(config, cli); !st) {
    std::fprintf(stderr, "predrop-server: %s\n", st.error().message.c_str());
    return 2;
  }
  core::LogLevel level;
  if (!core::parse_log_level(config.server.log_level, level)) level = core::LogLevel::kInfo;
  core::set_log_level(level);
  if (config.server.mode == config::ServerMode::kDdl) {
    return ddl::run_ddl_mode(config);
  }
  return run_stream(config, cli, config_path);
}
}  // namespace

// Exceptions are for start-up and configuration (docs/design.md §5); one that still escapes is
// reported as an error exit, never std::terminate.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: fatal: %s\n", "predrop-server", e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: fatal: unknown exception\n", "predrop-server");
  }
  return 1;
}

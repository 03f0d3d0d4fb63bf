// predrop-load: scripted load clients against a running predrop server (issue 6). Reads a
// scenario (configs/load/*.toml, keys in configs/load/README.md), runs it with a live progress
// line, prints the final table and appends a summary CSV row.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <exception>
#include <string>

#include "predrop/core/log.hpp"
#include "predrop/load/runner.hpp"
#include "predrop/load/scenario.hpp"
#include "predrop/load/shards.hpp"
#include "predrop/load/whep_run.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/srtp_session.hpp"

using namespace predrop;

namespace {
int run(int argc, char** argv) {
  CLI::App app{"predrop-load: N scripted RTSP/SRTP clients against a running predrop server"};
  std::string path;
  std::string url, metrics, csv, summary_csv, label, log_level = "warn";
  std::optional<std::uint32_t> clients;
  std::optional<double> ramp, hold, join, leave;
  std::optional<int> pid;
  std::optional<std::uint32_t> verify_every, threads;
  bool quiet = false;
  app.add_option("scenario", path, "Scenario TOML file (not with the whep subcommand)")
      ->check(CLI::ExistingFile);
  // `predrop-load whep`: scripted WebRTC viewers instead of RTSP clients (whep_run.hpp).
  load::WhepRunConfig whep;
  std::string whep_http = "127.0.0.1:9464", whep_csv, whep_label;
  CLI::App* whep_cmd = app.add_subcommand(
      "whep", "N scripted WHEP viewers (POST, ICE, DTLS, SRTP, transport-cc) against a server");
  whep_cmd->add_option("--http", whep_http, "The server's HTTP listener host:port");
  whep_cmd->add_option("--stream", whep.stream, "Stream name (POST /<stream>/whep)")->required();
  whep_cmd->add_option("--clients", whep.clients, "Viewers");
  whep_cmd->add_option("--ramp", whep.ramp_s, "Seconds over which they start");
  whep_cmd->add_option("--settle", whep.settle_s, "Seconds after the ramp before the window");
  whep_cmd->add_option("--hold", whep.hold_s, "The measured window, seconds");
  whep_cmd->add_option("--server-pid", whep.server_pid, "Server pid (default: by the HTTP port)");
  whep_cmd->add_option("--verify-every", whep.srtp_verify_every, "Authenticate every N-th packet");
  double whep_feedback_ms = 50;
  whep_cmd
      ->add_option("--feedback-ms", whep_feedback_ms,
                   "transport-cc feedback interval per viewer (Chromium: ~50-100 ms)")
      ->check(CLI::Range(1.0, 10000.0));
  whep_cmd->add_option("--csv", whep_csv, "Append a summary row to this CSV");
  whep_cmd->add_option("--label", whep_label, "The CSV row's label");
  app.add_option("--url", url, "Override server.url");
  app.add_option("--server-pid", pid, "Override server.pid (CPU figures)");
  app.add_option("--metrics", metrics, "Override server.metrics (host:port, or none)");
  app.add_option("--clients", clients, "Override population.clients");
  app.add_option("--ramp", ramp, "Override population.ramp_s");
  app.add_option("--hold", hold, "Override population.hold_s");
  app.add_option("--join-rate", join, "Override churn.join_per_s");
  app.add_option("--leave-rate", leave, "Override churn.leave_per_s");
  app.add_option("--verify-every", verify_every,
                 "Override srtp_verify_every of every group (1 = verify all packets)");
  app.add_option("--threads", threads,
                 "Override population.threads (client threads, each with its own loop and a "
                 "share of the clients)")
      ->check(CLI::Range(1, 64));
  app.add_option("--csv", csv, "Override report.csv (per-interval rows)");
  app.add_option("--summary-csv", summary_csv, "Override report.summary_csv");
  app.add_option("--label", label, "Override report.label");
  app.add_flag("-q,--quiet", quiet, "No progress line");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off");
  app.set_version_flag("--version", "predrop-load " PREDROP_VERSION);
  CLI11_PARSE(app, argc, argv);
  core::LogLevel level;
  if (core::parse_log_level(log_level, level)) core::set_log_level(level);

  if (whep_cmd->parsed()) {
    const auto colon = whep_http.rfind(':');
    auto address = net::SocketAddress::from_ip(
        whep_http.substr(0, colon),
        static_cast<std::uint16_t>(std::stoul(whep_http.substr(colon + 1))));
    if (colon == std::string::npos || !address) {
      std::fprintf(stderr, "predrop-load: --http wants host:port\n");
      return 2;
    }
    whep.http = *address;
    whep.feedback_interval_us = static_cast<std::uint64_t>(whep_feedback_ms * 1000);
    net::SrtpLibraryGuard srtp_library;
    net::EventLoop loop;
    const net::MonotonicClock clock;
    auto result = load::run_whep(loop, clock, whep, quiet ? nullptr : stderr);
    if (!result) {
      std::fprintf(stderr, "predrop-load: %s\n", result.error().message.c_str());
      return 2;
    }
    load::print_whep_summary(stdout, whep, *result);
    if (!whep_csv.empty()) {
      if (auto st = load::append_whep_csv(whep_csv, whep_label, *result); !st) {
        std::fprintf(stderr, "predrop-load: %s\n", st.error().message.c_str());
        return 2;
      }
    }
    return result->playing_at_close == result->clients ? 0 : 1;
  }
  if (path.empty()) {
    std::fprintf(stderr, "predrop-load: a scenario file or the whep subcommand is needed\n");
    return 2;
  }

  auto loaded = load::load_scenario_file(path);
  if (!loaded) {
    std::fprintf(stderr, "predrop-load: %s\n", loaded.error().message.c_str());
    return 2;
  }
  load::LoadScenario sc = std::move(loaded.value());
  if (!url.empty()) sc.url = url;
  if (pid) sc.server_pid = *pid;
  if (!metrics.empty()) sc.metrics = metrics == "none" ? std::string() : metrics;
  if (clients) sc.clients = *clients;
  if (threads) sc.threads = *threads;
  if (ramp) sc.ramp_s = *ramp;
  if (hold) sc.hold_s = *hold;
  if (join) sc.join_per_s = *join;
  if (leave) sc.leave_per_s = *leave;
  if (verify_every) {
    for (auto& g : sc.groups) {
      g.srtp_verify_every = std::max<std::uint32_t>(1, *verify_every);
    }
  }
  if (!csv.empty()) sc.csv = csv;
  if (!summary_csv.empty()) sc.summary_csv = summary_csv;
  if (!label.empty()) sc.label = label;
  if (sc.full_clients > sc.clients) sc.full_clients = sc.clients;

  // libsrtp's init runs its self-tests: once per process.
  net::SrtpLibraryGuard srtp_library;
  net::EventLoop loop;
  const net::MonotonicClock clock;
  std::FILE* progress = quiet ? nullptr : stderr;
  core::Result<load::LoadSummary> summary = core::make_error("not run");
  if (sc.threads <= 1) {
    load::LoadRunner runner(loop, clock, sc, progress);
    net::SignalWatcher signals(loop, {SIGINT, SIGTERM}, [&](int) { runner.stop(); });
    signals.keep_loop_alive(false);
    summary = runner.run();
  } else {
    if (progress != nullptr) {
      std::fprintf(progress,
                   "predrop-load: %u client threads; the live line counts the first thread's "
                   "clients, the summary every thread's\n",
                   sc.threads);
    }
    load::ShardedRun run(loop, clock, sc, progress);
    net::SignalWatcher signals(loop, {SIGINT, SIGTERM}, [&](int) { run.stop(); });
    signals.keep_loop_alive(false);
    summary = run.run();
  }
  if (!summary) {
    std::fprintf(stderr, "predrop-load: %s\n", summary.error().message.c_str());
    return 2;
  }
  load::print_summary(stdout, sc, *summary);
  if (!sc.summary_csv.empty()) {
    if (auto st = load::append_summary_csv(sc.summary_csv, *summary); !st) {
      std::fprintf(stderr, "predrop-load: %s\n", st.error().message.c_str());
      return 2;
    }
  }
  return summary->joins > 0 && summary->sessions_max == 0 ? 1 : 0;
}
}  // namespace

// Exceptions are for start-up and configuration (docs/design.md §5); one that still escapes is
// reported as an error exit, never std::terminate.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: fatal: %s\n", "predrop-load", e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: fatal: unknown exception\n", "predrop-load");
  }
  return 1;
}

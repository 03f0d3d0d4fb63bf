// predrop-ddl-worker: one training worker of a DDL job (see predrop/ddl/train/worker.hpp,
// docs/ddl-mode.md).
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "predrop/config/config.hpp"
#include "predrop/core/log.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/ddl/train/dataset.hpp"
#include "predrop/ddl/train/worker.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/srtp_session.hpp"

using namespace predrop;

namespace {

core::Result<net::SocketAddress> resolve(const std::string& text, bool allow_port_zero) {
  auto ep = config::parse_endpoint(text, allow_port_zero);
  if (!ep) return ep.error();
  if (ep->host == "localhost") return net::SocketAddress::loopback_v4(ep->port);
  return net::SocketAddress::from_ip(ep->host, ep->port);
}

std::string read_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

namespace {
int run(int argc, char** argv) {
  CLI::App app{
      "predrop-ddl-worker: trains an MLP on Fashion-MNIST in a data-parallel job through a "
      "predrop DDL relay (predrop-server --mode ddl), sending gradients and receiving their "
      "average as SRTP tensor chunks and reporting L and P per stage over SRTCP."};
  std::string relay_text, config_path, key_text, key_file, srtp_name, csv_path, bind_text,
      log_level = "info", policy;
  std::string data_dir(ddl::train::kFashionMnistDir);
  ddl::train::DdlWorkerOptions o;
  int rank = -1;
  std::optional<double> fixed_rate;
  unsigned print_every = 1;
  app.set_version_flag("--version", "predrop-ddl-worker " PREDROP_VERSION);
  app.add_option("--relay", relay_text, "The relay's address, host:port")->required();
  app.add_option("--rank", rank, "Shard index 0..workers-1 (default: the relay picks)");
  app.add_option("-c,--config", config_path,
                 "The job's TOML file ([server].srtp, [control], [discard] for the worker's own "
                 "egress controller)")
      ->check(CLI::ExistingFile);
  app.add_option("--key", key_text,
                 "Job key: \"a=crypto:1 <SUITE> inline:<base64>\" or bare base64 (default: "
                 "$PREDROP_DDL_KEY); \"none\" for plain RTP");
  app.add_option("--key-file", key_file, "Read the job key from this file");
  app.add_option("--srtp", srtp_name, "SRTP suite of a bare base64 key (default: from -c)");
  app.add_option("--data", data_dir, "Directory of the Fashion-MNIST IDX files");
  app.add_option("--seed", o.seed, "Model and data seed (the same for every worker)");
  app.add_option("--stages", o.stages, "Training iterations");
  app.add_option("--batch", o.batch, "Mini-batch per worker");
  app.add_option("--lr", o.learning_rate, "SGD learning rate");
  app.add_option("--momentum", o.momentum, "SGD momentum");
  app.add_option("--probe", o.probe, "Probe batch size for P");
  app.add_option("--eval-every", o.eval_every, "Test accuracy every n stages (0: at the end)");
  app.add_option("--train-subset", o.train_subset, "Train on this many samples (0: all)");
  app.add_option("--test-subset", o.test_subset, "Evaluate on this many test samples (0: all)");
  app.add_option("--policy", policy, "Egress controller policy (overrides -c)");
  app.add_option("--fixed-rate", fixed_rate, "R of the fixed egress policy");
  app.add_option("--bind", bind_text, "Local address (default 0.0.0.0:0)");
  app.add_option("--csv", csv_path, "Write a per-stage CSV trace");
  app.add_option("--print-every", print_every, "Print every n-th stage (0: none)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off");
  CLI11_PARSE(app, argc, argv);

  core::LogLevel level;
  if (!core::parse_log_level(log_level, level)) level = core::LogLevel::kInfo;
  core::set_log_level(level);
  auto fail = [](const std::string& m, int code) {
    std::fprintf(stderr, "predrop-ddl-worker: %s\n", m.c_str());
    return code;
  };

  auto relay = resolve(relay_text, false);
  if (!relay) return fail("--relay: " + relay.error().message, 2);
  o.relay = *relay;
  o.bind = relay->is_v4() ? net::SocketAddress::any_v4(0) : net::SocketAddress::loopback_v6(0);
  if (!bind_text.empty()) {
    auto b = resolve(bind_text, true);
    if (!b) return fail("--bind: " + b.error().message, 2);
    o.bind = *b;
  }
  if (rank >= 0) o.rank = static_cast<std::uint16_t>(rank);

  // Egress controller and SRTP suite from the job's file, then the flags.
  config::ServerConfig config;
  if (!config_path.empty()) {
    auto c = config::load_config_file(config_path);
    if (!c) return fail(c.error().message, 2);
    config = std::move(c.value());
  }
  if (!policy.empty()) config.control.policy = policy;
  if (fixed_rate) config.control.fixed_rate = *fixed_rate;
  auto pc = config::make_policy_config(config.control);
  if (!pc) return fail("control: " + pc.error().message, 2);
  o.egress_policy = *pc;
  o.egress_discard = config.discard.policy;
  o.discard_seed = config.discard.seed;
  o.report_timeout_stages = config.control.report_timeout_stages;

  std::optional<wire::SrtpSuite> suite;
  if (!srtp_name.empty()) {
    if (srtp_name != "none") {
      suite = wire::suite_from_name(srtp_name);
      if (!suite) return fail("--srtp: unknown suite " + srtp_name, 2);
    }
  } else {
    suite = config.server.srtp;
  }
  if (key_text.empty() && !key_file.empty()) {
    key_text = read_key_file(key_file);
    if (key_text.empty()) return fail("cannot read the key file " + key_file, 2);
  }
  if (key_text.empty()) {
    if (const char* env = std::getenv(ddl::kKeyEnvironment)) key_text = env;
  }
  if (key_text.empty()) {
    return fail(std::string("no job key: pass --key, --key-file or $") + ddl::kKeyEnvironment +
                    " (the relay prints its key at start)",
                2);
  }
  auto key = ddl::parse_job_key(key_text, suite);
  if (!key) return fail(key.error().message, 2);
  o.key = *key;

  auto data = ddl::train::load_ddl_dataset(data_dir);
  if (!data) return fail(data.error().message, 1);

  std::FILE* csv = nullptr;
  if (!csv_path.empty()) {
    csv = std::fopen(csv_path.c_str(), "w");
    if (csv == nullptr) return fail("cannot write " + csv_path, 2);
    std::fprintf(csv,
                 "stage,rank,train_loss,probe_loss,P,test_accuracy,L_us,received,announced,lost,"
                 "filled,partial,close_reason,deadline_us,uplink_rate,uplink_discarded,"
                 "uplink_L_us,stage_us\n");
  }

  net::SrtpLibraryGuard srtp_library;
  net::EventLoop loop;
  const net::MonotonicClock clock;
  core::Status result = core::Ok{};
  ddl::train::DdlWorkerSummary summary;
  std::unique_ptr<ddl::train::DdlWorker> worker;
  try {
    worker = std::make_unique<ddl::train::DdlWorker>(
        loop, clock, *data, o,
        [&](const ddl::train::DdlWorkerStageRow& r) {
          if (csv != nullptr) {
            std::fprintf(
                csv, "%u,%u,%.6f,%.6f,%.6g,%.4f,%.0f,%u,%u,%u,%u,%u,%u,%llu,%.4f,%u,%.0f,%llu\n",
                r.stage, unsigned{r.rank}, r.train_loss, r.probe_loss, r.performance,
                r.test_accuracy, r.reception_period_us, r.received, r.announced, r.lost, r.filled,
                r.partial, unsigned{r.close_reason}, static_cast<unsigned long long>(r.deadline_us),
                r.uplink_rate, r.uplink_discarded, r.uplink_period_us,
                static_cast<unsigned long long>(r.stage_us));
          }
          if (print_every != 0 && (r.stage % print_every == 0 || r.test_accuracy >= 0)) {
            char acc[32] = "";
            if (r.test_accuracy >= 0) std::snprintf(acc, sizeof acc, " acc %.3f", r.test_accuracy);
            std::printf(
                "stage %5u rank %u loss %.4f probe %.4f P %+.5f L %.2f ms recv %u/%u lost %u "
                "filled %u R_up %.2f%s\n",
                r.stage, unsigned{r.rank}, r.train_loss, r.probe_loss, r.performance,
                r.reception_period_us / 1000.0, r.received, r.announced, r.lost, r.filled,
                r.uplink_rate, acc);
            std::fflush(stdout);
          }
        },
        [&](const core::Status& st, const ddl::train::DdlWorkerSummary& s) {
          result = st;
          summary = s;
        });
  } catch (const std::exception& e) {
    return fail(e.what(), 2);
  }
  if (auto st = worker->start(); !st) return fail(st.error().message, 1);
  net::SignalWatcher signals(loop, {SIGINT, SIGTERM}, [&](int) { worker->stop(); });
  signals.keep_loop_alive(false);
  loop.run();
  worker.reset();
  if (csv != nullptr) std::fclose(csv);
  if (!result) return fail(result.error().message, 1);
  std::printf(
      "rank %u done: %u stages, test accuracy %.4f, %llu chunks filled, %llu lost, %llu late\n",
      unsigned{summary.rank}, summary.stages, summary.final_accuracy,
      static_cast<unsigned long long>(summary.chunks_filled),
      static_cast<unsigned long long>(summary.chunks_lost),
      static_cast<unsigned long long>(summary.late_chunks));
  return 0;
}
}  // namespace

// Exceptions are for start-up and configuration (docs/design.md §5); one that still escapes is
// reported as an error exit, never std::terminate.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: fatal: %s\n", "predrop-ddl-worker", e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: fatal: unknown exception\n", "predrop-ddl-worker");
  }
  return 1;
}

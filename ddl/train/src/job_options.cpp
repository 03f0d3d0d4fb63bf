#include "job_options.hpp"

#include <CLI/CLI.hpp>

#include <exception>
#include <stdexcept>
#include <utility>

#include "predrop/config/config.hpp"
#include "predrop/core/log.hpp"
#include "predrop/ddl/train/dataset.hpp"

namespace predrop::ddl::train {

std::optional<int> parse_job_command_line(int argc, char** argv, JobCommandLine& cl) {
  CLI::App app{
      "predrop-ddl-job: runs a whole local DDL job on loopback (relay + N workers, real SRTP over "
      "UDP) and prints per stage: R per worker, L, loss, test accuracy, chunks discarded / lost / "
      "filled; writes a CSV trace."};
  app.set_version_flag("--version", "predrop-ddl-job " PREDROP_VERSION);
  cl.data_dir = std::string(kFashionMnistDir);
  DdlWorkerOptions& wo = cl.worker;
  wo.test_subset = 0;
  app.add_option("-c,--config", cl.config_path,
                 "Job TOML (configs/ddl.toml); default: built-in (basic rule, priority discard, "
                 "adaptive deadline, burst, AES-GCM)")
      ->check(CLI::ExistingFile);
  app.add_option("--workers", cl.workers, "Workers")->check(CLI::Range(1, 64));
  app.add_option("--stages", wo.stages, "Training iterations");
  app.add_option("--policy", cl.policy,
                 "control.policy: basic, history, fixed, adaptive, capacity");
  app.add_option("--fixed-rate", cl.fixed_rate, "control.fixed_rate (policy fixed)");
  app.add_option("--discard", cl.discard, "discard.policy: uniform, random, priority");
  app.add_option("--fill", cl.fill, "ddl.missing_chunk_fill: zero or own");
  app.add_option("--pacing", cl.pacing, "ddl.pacing: paced or burst");
  app.add_option("--deadline-ms", cl.deadline_ms, "ddl.stage_deadline_ms (default: adaptive)");
  app.add_option("--egress-discard", cl.egress, "ddl.worker_egress_discard: true or false");
  app.add_option("--srtp", cl.srtp, "server.srtp suite, or none");
  app.add_option("--seed", wo.seed, "Model and data seed");
  app.add_option("--batch", wo.batch, "Mini-batch per worker");
  app.add_option("--lr", wo.learning_rate, "SGD learning rate");
  app.add_option("--train-subset", wo.train_subset, "Training samples used (0: all 60 000)");
  app.add_option("--test-subset", wo.test_subset, "Test samples evaluated (0: all 10 000)");
  app.add_option("--eval-every", wo.eval_every, "Test accuracy every n stages");
  app.add_option("--data", cl.data_dir, "Fashion-MNIST directory");
  app.add_option("--kill", cl.kills, "RANK@STAGE: that worker vanishes at that stage (repeatable)");
  app.add_option("--csv", cl.csv_path, "CSV trace (\"\": none)");
  app.add_option("--print-every", cl.print_every, "Print every n-th stage (0: summary only)");
  app.add_option("--log-level", cl.log_level, "Relay and worker log level");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return std::nullopt;
}

core::Result<JobSetup> make_job_setup(const JobCommandLine& cl) {
  core::LogLevel level;
  if (!core::parse_log_level(cl.log_level, level)) level = core::LogLevel::kWarn;
  core::set_log_level(level);

  config::ServerConfig config;
  config.server.mode = config::ServerMode::kDdl;
  config.ddl.stage_deadline_ms.reset();  // adaptive unless the file or --deadline-ms says
  config.ddl.pacing = config::Pacing::kBurst;
  // Our own peers on both ends: AES-GCM, which libsrtp (with NSS) runs faster than AES-CM+HMAC.
  config.server.srtp = wire::SrtpSuite::AeadAes128Gcm;
  if (!cl.config_path.empty()) {
    auto c = config::load_config_file(cl.config_path);
    if (!c) return c.error();
    config = std::move(c.value());
  }
  if (!cl.policy.empty()) config.control.policy = cl.policy;
  if (cl.fixed_rate) config.control.fixed_rate = *cl.fixed_rate;
  if (cl.deadline_ms) config.ddl.stage_deadline_ms = *cl.deadline_ms;
  if (cl.egress) config.ddl.worker_egress_discard = *cl.egress;
  if (!cl.fill.empty()) {
    if (cl.fill != "zero" && cl.fill != "own") return core::make_error("--fill: zero or own");
    config.ddl.missing_chunk_fill =
        cl.fill == "own" ? config::MissingChunkFill::kOwn : config::MissingChunkFill::kZero;
  }
  if (!cl.pacing.empty()) {
    if (cl.pacing != "paced" && cl.pacing != "burst") {
      return core::make_error("--pacing: paced or burst");
    }
    config.ddl.pacing = cl.pacing == "paced" ? config::Pacing::kPaced : config::Pacing::kBurst;
  }
  if (!cl.discard.empty()) {
    auto policy = core::parse_discard_policy(cl.discard);
    if (!policy) return core::make_error("--discard: " + policy.error().message);
    config.discard.policy = *policy;
  }
  config.ddl.workers = cl.workers;
  if (config.server.max_sessions < cl.workers) config.server.max_sessions = cl.workers;

  JobSetup s;
  s.workers = cl.workers;
  s.data_dir = cl.data_dir;
  s.csv_path = cl.csv_path;
  s.print_every = cl.print_every;
  if (!cl.srtp.empty()) {
    if (cl.srtp != "none") {
      s.suite = wire::suite_from_name(cl.srtp);
      if (!s.suite) return core::make_error("--srtp: unknown suite " + cl.srtp);
    }
  } else {
    s.suite = config.server.srtp;
  }
  if (auto st = config::validate_config(config); !st) return st.error();
  auto pc = config::make_policy_config(config.control);
  if (!pc) return core::make_error("control: " + pc.error().message);
  const core::DiscardPolicy dp = config.discard.policy;

  s.vanish.resize(cl.workers);
  for (const auto& k : cl.kills) {
    const auto at = k.find('@');
    try {
      if (at == std::string::npos) throw std::invalid_argument(k);
      const unsigned long r = std::stoul(k.substr(0, at));
      const unsigned long st = std::stoul(k.substr(at + 1));
      if (r >= cl.workers) throw std::invalid_argument(k);
      s.vanish[r] = static_cast<std::uint32_t>(st);
    } catch (const std::exception&) {
      return core::make_error("--kill " + k + ": expected RANK@STAGE with RANK < --workers");
    }
  }

  DdlRelayOptions& ro = s.relay;
  ro.listen = net::SocketAddress::loopback_v4(0);
  ro.workers = cl.workers;
  ro.stage_deadline_ms = config.ddl.stage_deadline_ms;
  ro.missing_fill = config.ddl.missing_chunk_fill == config::MissingChunkFill::kOwn
                        ? MissingPolicy::kOwn
                        : MissingPolicy::kZero;
  ro.chunk_elements = static_cast<std::uint16_t>(config.ddl.chunk_bytes / 4);
  ro.max_tensor_elements = config.ddl.max_tensor_elements;
  ro.worker_egress_discard = config.ddl.worker_egress_discard;
  ro.paced = config.ddl.pacing == config::Pacing::kPaced;
  ro.policy = *pc;
  ro.discard = dp;
  ro.discard_seed = config.discard.seed;
  ro.report_timeout_stages = config.control.report_timeout_stages;
  ro.peer_timeout_ms = config.server.session_timeout_s * 1000;

  s.worker = cl.worker;
  s.worker.egress_policy = *pc;
  s.worker.egress_discard = dp;
  s.worker.discard_seed = config.discard.seed;
  s.worker.report_timeout_stages = config.control.report_timeout_stages;
  return s;
}

}  // namespace predrop::ddl::train

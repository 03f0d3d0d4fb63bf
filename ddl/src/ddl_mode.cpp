// predrop-server --mode ddl: run_ddl_mode() builds the relay (relay.hpp) from the configuration,
// takes or makes the job key, writes the per-(stage, worker) trace and runs the loop until the
// job is over or a signal ends it. Decisions: docs/ddl-mode.md.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "predrop/config/config.hpp"
#include "predrop/core/log.hpp"
#include "predrop/ddl/relay.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/srtp_session.hpp"

namespace predrop::ddl {

namespace {

constexpr const char* kLog = "ddl-relay";

// The relay's per-(stage, worker) trace: one row per report (or missing report).
class RelayTrace final : public DdlRelayListener {
 public:
  explicit RelayTrace(std::FILE* csv) : csv_(csv) {
    if (csv_ != nullptr) {
      std::fprintf(csv_,
                   "stage,rank,reported,rate,planned,discarded,sent,L_us,P,received,announced,"
                   "queue_delay_us,decision,next_rate,up_first_us,up_last_us,closed_us,"
                   "sent_done_us,pace_kbps\n");
    }
  }

  void on_stage(const DdlRelayStageRow& row) override {
    std::string rates;
    for (const auto& ps : row.peers) {
      char b[32];
      std::snprintf(b, sizeof b, ps.live ? " %.2f" : " -", ps.rate);
      rates += b;
    }
    core::log(core::LogLevel::kInfo, "ddl-relay",
              "stage %u %s: uplink L %.1f ms, %u/%u chunks, %u partial, %u empty; R [%s ]",
              row.stage,
              row.reason == 0   ? "complete"
              : row.reason == 1 ? "deadline"
                                : "forced",
              row.period_us / 1000.0, row.received, row.expected, row.chunks_partial,
              row.chunks_empty, rates.c_str());
  }

  void on_report(const DdlRelayReportRow& r) override {
    if (csv_ == nullptr) return;
    std::fprintf(csv_,
                 "%u,%u,%d,%.4f,%u,%u,%u,%.0f,%.6g,%u,%u,%s,%s,%.4f,%llu,%llu,%llu,%llu,%.0f\n",
                 r.stage, unsigned{r.rank}, r.reported ? 1 : 0, r.report.rate_used.value_or(0.0),
                 r.planned, r.discarded, r.sent, r.report.reception_period_us, r.report.performance,
                 r.report.packets_received, r.report.packets_announced,
                 r.report.queue_delay_us ? std::to_string(*r.report.queue_delay_us).c_str() : "",
                 std::string(core::to_string(r.decision.kind)).c_str(), r.next_rate,
                 static_cast<unsigned long long>(r.times.up_first_us),
                 static_cast<unsigned long long>(r.times.up_last_us),
                 static_cast<unsigned long long>(r.times.closed_us),
                 static_cast<unsigned long long>(r.times.sent_done_us), r.pace_kbps);
  }

  void on_finished(const core::Status& st) override {
    status_ = st;
    done_ = true;
  }

  bool done_ = false;
  core::Status status_ = core::Ok{};

 private:
  std::FILE* csv_;
};

}  // namespace

int run_ddl_mode(const config::ServerConfig& config) {
  DdlRelayOptions o;
  auto listen = net::SocketAddress::from_ip(config.ddl.listen.host, config.ddl.listen.port);
  if (!listen && config.ddl.listen.host == "localhost") {
    listen = net::SocketAddress::loopback_v4(config.ddl.listen.port);
  }
  if (!listen) {
    core::log(core::LogLevel::kError, kLog, "ddl.listen: %s", listen.error().message.c_str());
    return 2;
  }
  o.listen = *listen;
  o.workers = config.ddl.workers;
  if (o.workers > config.server.max_sessions) {
    core::log(core::LogLevel::kError, kLog, "ddl.workers (%u) exceeds server.max_sessions (%u)",
              o.workers, config.server.max_sessions);
    return 2;
  }
  o.stage_deadline_ms = config.ddl.stage_deadline_ms;
  o.missing_fill = config.ddl.missing_chunk_fill == config::MissingChunkFill::kOwn
                       ? ddl::MissingPolicy::kOwn
                       : ddl::MissingPolicy::kZero;
  o.chunk_elements = static_cast<std::uint16_t>(config.ddl.chunk_bytes / 4);
  o.max_tensor_elements = config.ddl.max_tensor_elements;
  o.worker_egress_discard = config.ddl.worker_egress_discard;
  o.paced = config.ddl.pacing == config::Pacing::kPaced;
  auto policy = config::make_policy_config(config.control);
  if (!policy) {
    core::log(core::LogLevel::kError, kLog, "control: %s", policy.error().message.c_str());
    return 2;
  }
  o.policy = *policy;
  o.discard = config.discard.policy;
  o.discard_seed = config.discard.seed;
  o.report_timeout_stages = config.control.report_timeout_stages;
  o.peer_timeout_ms = config.server.session_timeout_s * 1000;
  // For A/B measurements only (docs/ddl-torch.md "Where a stage's time goes").
  if (const char* g = std::getenv("PREDROP_DDL_NO_GSO"); g != nullptr && *g == '1') o.gso = false;

  // The job key: PREDROP_DDL_KEY (an a=crypto line, or base64 of the configured suite), else a
  // fresh one, printed for the workers.
  const std::optional<wire::SrtpSuite> suite = config.server.srtp;
  if (const char* env = std::getenv(ddl::kKeyEnvironment); env != nullptr && *env != '\0') {
    auto key = ddl::parse_job_key(env, suite);
    if (!key) {
      core::log(core::LogLevel::kError, kLog, "%s: %s", ddl::kKeyEnvironment,
                key.error().message.c_str());
      return 2;
    }
    if (key->suite != suite) {
      core::log(core::LogLevel::kError, kLog, "%s is a key for %s but server.srtp is %s",
                ddl::kKeyEnvironment,
                key->suite ? std::string(wire::suite_name(*key->suite)).c_str() : "none",
                std::string(config::srtp_name(config.server.srtp)).c_str());
      return 2;
    }
    o.key = *key;
  } else {
    o.key = ddl::generate_job_key(suite);
    std::printf("%s=%s\n", ddl::kKeyEnvironment, ddl::format_job_key(o.key).c_str());
    std::fflush(stdout);
  }

  std::FILE* csv = nullptr;
  if (!config.server.trace_csv.empty()) {
    csv = std::fopen(config.server.trace_csv.c_str(), "w");
    if (csv == nullptr) {
      core::log(core::LogLevel::kError, kLog, "cannot write %s: %s",
                config.server.trace_csv.c_str(), std::strerror(errno));
      return 2;
    }
  }
  RelayTrace trace(csv);
  net::SrtpLibraryGuard srtp_library;
  net::EventLoop loop;
  const net::MonotonicClock clock;
  int code = 0;
  {
    std::unique_ptr<DdlRelay> relay;
    try {
      relay = std::make_unique<DdlRelay>(loop, clock, o, &trace);
    } catch (const std::exception& e) {
      core::log(core::LogLevel::kError, kLog, "%s", e.what());
      if (csv != nullptr) std::fclose(csv);
      return 2;
    }
    if (auto st = relay->start(); !st) {
      core::log(core::LogLevel::kError, kLog, "%s", st.error().message.c_str());
      if (csv != nullptr) std::fclose(csv);
      return 1;
    }
    core::log(
        core::LogLevel::kInfo, kLog,
        "listening on %s for %u workers; SRTP %s, policy %s, discard %s, deadline %s, %s",
        relay->local_address().to_string().c_str(), o.workers,
        std::string(config::srtp_name(config.server.srtp)).c_str(), o.policy.policy.c_str(),
        std::string(core::to_string(o.discard)).c_str(),
        o.stage_deadline_ms ? (std::to_string(*o.stage_deadline_ms) + " ms").c_str() : "adaptive",
        o.paced ? "paced" : "burst");
    net::SignalWatcher signals(loop, {SIGINT, SIGTERM}, [&](int signum) {
      core::log(core::LogLevel::kInfo, kLog, "signal %d: ending the job", signum);
      relay->stop("the relay was interrupted");
    });
    signals.keep_loop_alive(false);
    loop.run();
    const DdlRelayStats& s = relay->stats();
    core::log(core::LogLevel::kInfo, kLog,
              "job over after %llu stages: %llu joined, %llu left, %llu evicted, %llu refused; "
              "chunks %llu received, %llu late; %llu reports, %llu missing",
              static_cast<unsigned long long>(s.stages), static_cast<unsigned long long>(s.joined),
              static_cast<unsigned long long>(s.left), static_cast<unsigned long long>(s.evicted),
              static_cast<unsigned long long>(s.refused),
              static_cast<unsigned long long>(s.chunks_received),
              static_cast<unsigned long long>(s.chunks_late),
              static_cast<unsigned long long>(s.reports),
              static_cast<unsigned long long>(s.reports_missing));
    if (!trace.status_) {
      core::log(core::LogLevel::kError, kLog, "%s", trace.status_.error().message.c_str());
      code = 1;
    }
  }
  if (csv != nullptr) std::fclose(csv);
  return code;
}

}  // namespace predrop::ddl

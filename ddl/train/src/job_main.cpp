// predrop-ddl-job: one command for a whole local DDL job on loopback: the relay (the same
// ddl::DdlRelay that predrop-server --mode ddl runs) and N workers (ddl::train::DdlWorker, as in
// predrop-ddl-worker), each on its own thread and event loop, talking real SRTP/SRTCP over UDP on
// 127.0.0.1. Prints one line per stage and writes a CSV trace. See docs/ddl-mode.md.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "predrop/config/config.hpp"
#include "predrop/core/log.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/ddl/relay.hpp"
#include "predrop/ddl/train/worker.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/srtp_session.hpp"

using namespace predrop;

namespace {

struct WorkerDone {
  std::uint16_t index = 0;
  core::Status status = core::Ok{};
  ddl::train::DdlWorkerSummary summary;
};
struct RelayDone {
  core::Status status = core::Ok{};
};
using Event =
    std::variant<ddl::DdlRelayStageRow, ddl::DdlRelayReportRow, ddl::train::DdlWorkerStageRow,
                 WorkerDone, RelayDone, ddl::DdlRelayEvent>;

// Events from the relay and worker threads, consumed by the main thread.
class Inbox {
 public:
  void push(Event e) {
    {
      std::lock_guard lock(mu_);
      q_.push_back(std::move(e));
    }
    cv_.notify_one();
  }
  Event pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return !q_.empty(); });
    Event e = std::move(q_.front());
    q_.pop_front();
    return e;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> q_;
};

class RelayForwarder final : public ddl::DdlRelayListener {
 public:
  explicit RelayForwarder(Inbox& inbox) : inbox_(inbox) {}
  void on_stage(const ddl::DdlRelayStageRow& row) override { inbox_.push(row); }
  void on_report(const ddl::DdlRelayReportRow& row) override { inbox_.push(row); }
  void on_event(const ddl::DdlRelayEvent& e) override { inbox_.push(e); }
  void on_finished(const core::Status& st) override { inbox_.push(RelayDone{st}); }

 private:
  Inbox& inbox_;
};

// Joins the relay's and the workers' views of each stage and prints / writes them in order.
class Table {
 public:
  Table(std::uint32_t workers, std::FILE* csv, unsigned print_every)
      : workers_(workers), csv_(csv), print_every_(print_every), alive_(workers, true) {
    if (csv_ != nullptr) {
      std::fprintf(csv_,
                   "stage,rank,rate,planned,discarded,sent,L_us,received,announced,lost,filled,"
                   "partial,train_loss,probe_loss,P,test_accuracy,decision,next_rate,uplink_rate,"
                   "uplink_discarded,uplink_L_us,relay_close,relay_L_us,deadline_us,stage_us\n");
    }
  }

  void header() const {
    if (print_every_ == 0) return;
    std::printf("%6s  %-*s  %-*s  %7s  %6s  %5s %5s %5s  %s\n", "stage", int(6 * workers_),
                "R per worker", int(7 * workers_), "L ms", "loss", "acc", "disc", "lost", "fill",
                "close");
  }

  // Parts of a stage already printed (e.g. the missing-report note of a vanished worker) are
  // dropped rather than printed again as a stage of their own.
  void add(const ddl::DdlRelayStageRow& r) {
    if (r.stage >= next_) entry(r.stage).relay = r;
  }
  void add(const ddl::DdlRelayReportRow& r) {
    if (r.rank < workers_ && r.stage >= next_) entry(r.stage).reports[r.rank] = r;
  }
  void add(const ddl::train::DdlWorkerStageRow& r) {
    if (r.rank < workers_ && r.stage >= next_) entry(r.stage).rows[r.rank] = r;
  }
  void worker_gone(std::uint16_t rank) {
    if (rank < workers_) alive_[rank] = false;
  }

  // Emits every stage, in order, whose parts are all in (or all of them when `all`).
  void flush(bool all) {
    while (!stages_.empty()) {
      auto it = stages_.begin();
      if (!all && !complete(it->second)) break;
      emit(it->first, it->second);
      next_ = it->first + 1;
      stages_.erase(it);
    }
  }

  std::vector<double> rate_sum, rate_min, rate_max;
  std::vector<std::uint64_t> rate_n;
  std::uint64_t emitted = 0, discarded = 0, lost = 0, filled = 0, deadline_closes = 0;
  std::uint64_t increases = 0, decreases = 0;
  double last_accuracy = -1.0;

 private:
  struct Entry {
    std::optional<ddl::DdlRelayStageRow> relay;
    std::vector<std::optional<ddl::train::DdlWorkerStageRow>> rows;
    std::vector<std::optional<ddl::DdlRelayReportRow>> reports;
  };

  Entry& entry(std::uint32_t stage) {
    Entry& e = stages_[stage];
    if (e.rows.empty()) {
      e.rows.resize(workers_);
      e.reports.resize(workers_);
    }
    return e;
  }

  bool complete(const Entry& e) const {
    if (!e.relay) return false;
    for (std::uint32_t w = 0; w < workers_; ++w) {
      const bool in_stage = w < e.relay->peers.size() && e.relay->peers[w].live;
      if (!in_stage || !alive_[w]) continue;
      if (!e.rows[w] || !e.reports[w]) return false;
    }
    return true;
  }

  void emit(std::uint32_t stage, const Entry& e) {
    ++emitted;
    if (rate_sum.empty()) {
      rate_sum.assign(workers_, 0.0);
      rate_min.assign(workers_, 1.0);
      rate_max.assign(workers_, 0.0);
      rate_n.assign(workers_, 0);
    }
    std::string rates, periods;
    double loss = 0.0, acc = 0.0;
    unsigned n_loss = 0, n_acc = 0;
    std::uint32_t disc = 0, lst = 0, fill = 0;
    for (std::uint32_t w = 0; w < workers_; ++w) {
      char b[32];
      const ddl::DdlRelayPeerStage* ps =
          e.relay && w < e.relay->peers.size() && e.relay->peers[w].live ? &e.relay->peers[w]
                                                                         : nullptr;
      if (ps != nullptr) {
        std::snprintf(b, sizeof b, "%5.2f ", ps->rate);
        disc += ps->discarded;
        rate_sum[w] += ps->rate;
        rate_min[w] = std::min(rate_min[w], ps->rate);
        rate_max[w] = std::max(rate_max[w], ps->rate);
        ++rate_n[w];
      } else {
        std::snprintf(b, sizeof b, "%5s ", "-");
      }
      rates += b;
      const auto& row = e.rows[w];
      if (row) {
        std::snprintf(b, sizeof b, "%6.2f ", row->reception_period_us / 1000.0);
        loss += row->train_loss;
        ++n_loss;
        if (row->test_accuracy >= 0) {
          acc += row->test_accuracy;
          ++n_acc;
        }
        lst += row->lost;
        fill += row->filled;
      } else {
        std::snprintf(b, sizeof b, "%6s ", "-");
      }
      periods += b;
      const auto& rep = e.reports[w];
      if (rep) {
        if (rep->decision.kind == core::DecisionKind::kIncrease) ++increases;
        if (rep->decision.kind == core::DecisionKind::kDecrease) ++decreases;
      }
      if (csv_ != nullptr && (ps != nullptr || row)) write_csv(stage, w, ps, row, rep, e.relay);
    }
    discarded += disc;
    lost += lst;
    filled += fill;
    if (e.relay && e.relay->reason == 1) ++deadline_closes;
    if (n_acc != 0) last_accuracy = acc / n_acc;
    if (print_every_ == 0) return;
    if (stage % print_every_ != 0 && n_acc == 0) return;
    char accs[16] = "     -";
    if (n_acc != 0) std::snprintf(accs, sizeof accs, "%6.3f", acc / n_acc);
    const char* close = !e.relay               ? "?"
                        : e.relay->reason == 0 ? "complete"
                        : e.relay->reason == 1 ? "deadline"
                                               : "forced";
    std::printf("%6u  %s  %s  %7.4f  %s  %5u %5u %5u  %s\n", stage, rates.c_str(), periods.c_str(),
                n_loss != 0 ? loss / n_loss : 0.0, accs, disc, lst, fill, close);
    std::fflush(stdout);
  }

  void write_csv(std::uint32_t stage, std::uint32_t w, const ddl::DdlRelayPeerStage* ps,
                 const std::optional<ddl::train::DdlWorkerStageRow>& row,
                 const std::optional<ddl::DdlRelayReportRow>& rep,
                 const std::optional<ddl::DdlRelayStageRow>& relay) {
    std::fprintf(
        csv_,
        "%u,%u,%.4f,%u,%u,%u,%.0f,%u,%u,%u,%u,%u,%.6f,%.6f,%.6g,%.4f,%s,%.4f,%.4f,%u,%.0f,%u,%.0f,"
        "%llu,%llu\n",
        stage, w, ps ? ps->rate : 0.0, ps ? ps->planned : 0u, ps ? ps->discarded : 0u,
        ps ? ps->sent : 0u, row ? row->reception_period_us : 0.0, row ? row->received : 0u,
        row ? row->announced : 0u, row ? row->lost : 0u, row ? row->filled : 0u,
        row ? row->partial : 0u, row ? row->train_loss : 0.0, row ? row->probe_loss : 0.0,
        row ? row->performance : 0.0, row ? row->test_accuracy : -1.0,
        rep ? std::string(core::to_string(rep->decision.kind)).c_str() : "",
        rep ? rep->next_rate : 0.0, row ? row->uplink_rate : 0.0, row ? row->uplink_discarded : 0u,
        row ? row->uplink_period_us : -1.0, relay ? unsigned{relay->reason} : 0u,
        relay ? relay->period_us : 0.0,
        static_cast<unsigned long long>(relay ? relay->deadline_us : 0),
        static_cast<unsigned long long>(row ? row->stage_us : 0));
  }

  std::uint32_t workers_;
  std::FILE* csv_;
  unsigned print_every_;
  std::vector<bool> alive_;
  std::map<std::uint32_t, Entry> stages_;
  std::uint32_t next_ = 0;  // stages below this were printed
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "predrop-ddl-job: runs a whole local DDL job on loopback (relay + N workers, real SRTP over "
      "UDP) and prints per stage: R per worker, L, loss, test accuracy, chunks discarded / lost / "
      "filled; writes a CSV trace."};
  std::string config_path, policy, fill, discard, csv_path = "ddl-job.csv", log_level = "warn",
                                                  pacing, srtp;
  std::string data_dir(ddl::train::kFashionMnistDir);
  std::uint32_t workers = 3;
  std::optional<double> fixed_rate;
  std::optional<std::uint32_t> deadline_ms;
  std::optional<bool> egress;
  std::vector<std::string> kills;
  unsigned print_every = 1;
  ddl::train::DdlWorkerOptions wo;
  wo.test_subset = 0;
  app.add_option("-c,--config", config_path,
                 "Job TOML (configs/ddl.toml); default: built-in (basic rule, priority discard, "
                 "adaptive deadline, burst, AES-GCM)")
      ->check(CLI::ExistingFile);
  app.add_option("--workers", workers, "Workers")->check(CLI::Range(1, 64));
  app.add_option("--stages", wo.stages, "Training iterations");
  app.add_option("--policy", policy, "control.policy: basic, history, fixed, adaptive");
  app.add_option("--fixed-rate", fixed_rate, "control.fixed_rate (policy fixed)");
  app.add_option("--discard", discard, "discard.policy: uniform, random, priority");
  app.add_option("--fill", fill, "ddl.missing_chunk_fill: zero or own");
  app.add_option("--pacing", pacing, "ddl.pacing: paced or burst");
  app.add_option("--deadline-ms", deadline_ms, "ddl.stage_deadline_ms (default: adaptive)");
  app.add_option("--egress-discard", egress, "ddl.worker_egress_discard: true or false");
  app.add_option("--srtp", srtp, "server.srtp suite, or none");
  app.add_option("--seed", wo.seed, "Model and data seed");
  app.add_option("--batch", wo.batch, "Mini-batch per worker");
  app.add_option("--lr", wo.learning_rate, "SGD learning rate");
  app.add_option("--train-subset", wo.train_subset, "Training samples used (0: all 60 000)");
  app.add_option("--test-subset", wo.test_subset, "Test samples evaluated (0: all 10 000)");
  app.add_option("--eval-every", wo.eval_every, "Test accuracy every n stages");
  app.add_option("--data", data_dir, "Fashion-MNIST directory");
  app.add_option("--kill", kills, "RANK@STAGE: that worker vanishes at that stage (repeatable)");
  app.add_option("--csv", csv_path, "CSV trace (\"\": none)");
  app.add_option("--print-every", print_every, "Print every n-th stage (0: summary only)");
  app.add_option("--log-level", log_level, "Relay and worker log level");
  CLI11_PARSE(app, argc, argv);

  core::LogLevel level;
  if (!core::parse_log_level(log_level, level)) level = core::LogLevel::kWarn;
  core::set_log_level(level);
  auto fail = [](const std::string& m) {
    std::fprintf(stderr, "predrop-ddl-job: %s\n", m.c_str());
    return 2;
  };

  config::ServerConfig config;
  config.server.mode = config::ServerMode::kDdl;
  config.ddl.stage_deadline_ms.reset();  // adaptive unless the file or --deadline-ms says
  config.ddl.pacing = config::Pacing::kBurst;
  // Our own peers on both ends: AES-GCM, which libsrtp (with NSS) runs faster than AES-CM+HMAC.
  config.server.srtp = config::SrtpSuite::kAeadAes128Gcm;
  if (!config_path.empty()) {
    auto c = config::load_config_file(config_path);
    if (!c) return fail(c.error().message);
    config = std::move(c.value());
  }
  if (!policy.empty()) config.control.policy = policy;
  if (fixed_rate) config.control.fixed_rate = *fixed_rate;
  if (deadline_ms) config.ddl.stage_deadline_ms = *deadline_ms;
  if (egress) config.ddl.worker_egress_discard = *egress;
  if (!fill.empty()) {
    if (fill != "zero" && fill != "own") return fail("--fill: zero or own");
    config.ddl.missing_chunk_fill =
        fill == "own" ? config::MissingChunkFill::kOwn : config::MissingChunkFill::kZero;
  }
  if (!pacing.empty()) {
    if (pacing != "paced" && pacing != "burst") return fail("--pacing: paced or burst");
    config.ddl.pacing = pacing == "paced" ? config::Pacing::kPaced : config::Pacing::kBurst;
  }
  if (!discard.empty()) {
    if (discard == "uniform")
      config.discard.policy = config::DiscardPolicyName::kUniform;
    else if (discard == "random")
      config.discard.policy = config::DiscardPolicyName::kRandom;
    else if (discard == "priority")
      config.discard.policy = config::DiscardPolicyName::kPriority;
    else
      return fail("--discard: uniform, random or priority");
  }
  config.ddl.workers = workers;
  if (config.server.max_sessions < workers) config.server.max_sessions = workers;
  std::optional<wire::SrtpSuite> suite;
  if (!srtp.empty()) {
    if (srtp != "none") {
      suite = wire::suite_from_name(srtp);
      if (!suite) return fail("--srtp: unknown suite " + srtp);
    }
  } else if (config.server.srtp != config::SrtpSuite::kNone) {
    suite = wire::suite_from_name(config::to_string(config.server.srtp));
  }
  if (auto st = config::validate_config(config); !st) return fail(st.error().message);
  auto pc = config::make_policy_config(config.control);
  if (!pc) return fail("control: " + pc.error().message);
  auto dp = core::parse_discard_policy(config::to_string(config.discard.policy));
  if (!dp) return fail(dp.error().message);

  std::vector<std::optional<std::uint32_t>> vanish(workers);
  for (const auto& k : kills) {
    const auto at = k.find('@');
    try {
      if (at == std::string::npos) throw std::invalid_argument(k);
      const unsigned long r = std::stoul(k.substr(0, at));
      const unsigned long s = std::stoul(k.substr(at + 1));
      if (r >= workers) throw std::invalid_argument(k);
      vanish[r] = static_cast<std::uint32_t>(s);
    } catch (const std::exception&) {
      return fail("--kill " + k + ": expected RANK@STAGE with RANK < --workers");
    }
  }

  auto data = ddl::train::load_ddl_dataset(data_dir);
  if (!data) return fail(data.error().message);

  // One fresh key for this job, handed to the relay and to every worker.
  const ddl::JobKey key = ddl::generate_job_key(suite);

  ddl::DdlRelayOptions ro;
  ro.listen = net::SocketAddress::loopback_v4(0);
  ro.workers = workers;
  ro.stage_deadline_ms = config.ddl.stage_deadline_ms;
  ro.missing_fill = config.ddl.missing_chunk_fill == config::MissingChunkFill::kOwn
                        ? ddl::MissingPolicy::kOwn
                        : ddl::MissingPolicy::kZero;
  ro.chunk_elements = static_cast<std::uint16_t>(config.ddl.chunk_bytes / 4);
  ro.worker_egress_discard = config.ddl.worker_egress_discard;
  ro.paced = config.ddl.pacing == config::Pacing::kPaced;
  ro.policy = *pc;
  ro.discard = *dp;
  ro.discard_seed = config.discard.seed;
  ro.key = key;
  ro.report_timeout_stages = config.control.report_timeout_stages;
  ro.peer_timeout_ms = config.server.session_timeout_s * 1000;

  std::FILE* csv = nullptr;
  if (!csv_path.empty()) {
    csv = std::fopen(csv_path.c_str(), "w");
    if (csv == nullptr) return fail("cannot write " + csv_path);
  }

  net::SrtpLibraryGuard srtp_library;
  Inbox inbox;
  RelayForwarder forwarder(inbox);
  net::EventLoop relay_loop;
  ddl::DdlRelay relay(relay_loop, ro, &forwarder);
  if (auto st = relay.start(); !st) return fail(st.error().message);
  const net::SocketAddress relay_address = relay.local_address();

  std::printf(
      "predrop DDL job: %u workers x %u stages, relay %s, SRTP %s, policy %s, discard %s, fill "
      "%s, deadline %s, %s, worker egress discard %s\n",
      workers, wo.stages, relay_address.to_string().c_str(),
      suite ? std::string(wire::suite_name(*suite)).c_str() : "none", ro.policy.policy.c_str(),
      std::string(core::to_string(ro.discard)).c_str(),
      std::string(ddl::to_string(ro.missing_fill)).c_str(),
      ro.stage_deadline_ms ? (std::to_string(*ro.stage_deadline_ms) + " ms").c_str() : "adaptive",
      ro.paced ? "paced" : "burst", ro.worker_egress_discard ? "on" : "off");

  const auto t0 = std::chrono::steady_clock::now();
  std::thread relay_thread([&relay_loop] { relay_loop.run(); });
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<net::EventLoop>> loops;
  std::vector<std::unique_ptr<ddl::train::DdlWorker>> worker_objects;
  for (std::uint32_t w = 0; w < workers; ++w) {
    ddl::train::DdlWorkerOptions o = wo;
    o.relay = relay_address;
    o.bind = net::SocketAddress::loopback_v4(0);
    o.key = key;
    o.rank = static_cast<std::uint16_t>(w);
    o.egress_policy = *pc;
    o.egress_discard = *dp;
    o.discard_seed = config.discard.seed;
    o.report_timeout_stages = config.control.report_timeout_stages;
    o.vanish_at_stage = vanish[w];
    loops.push_back(std::make_unique<net::EventLoop>());
    const auto index = static_cast<std::uint16_t>(w);
    worker_objects.push_back(std::make_unique<ddl::train::DdlWorker>(
        *loops.back(), *data, o,
        [&inbox](const ddl::train::DdlWorkerStageRow& r) { inbox.push(r); },
        [&inbox, index](const core::Status& st, const ddl::train::DdlWorkerSummary& s) {
          inbox.push(WorkerDone{index, st, s});
        }));
    if (auto st = worker_objects.back()->start(); !st) return fail(st.error().message);
  }
  for (std::uint32_t w = 0; w < workers; ++w) {
    threads.emplace_back([loop = loops[w].get()] { loop->run(); });
  }

  Table table(workers, csv, print_every);
  table.header();
  std::uint32_t workers_done = 0;
  bool relay_done = false;
  core::Status relay_status = core::Ok{};
  std::vector<WorkerDone> done(workers);
  while (workers_done < workers || !relay_done) {
    Event e = inbox.pop();
    if (auto* r = std::get_if<ddl::DdlRelayStageRow>(&e)) {
      table.add(*r);
    } else if (auto* rr = std::get_if<ddl::DdlRelayReportRow>(&e)) {
      table.add(*rr);
    } else if (auto* wr = std::get_if<ddl::train::DdlWorkerStageRow>(&e)) {
      table.add(*wr);
    } else if (auto* wd = std::get_if<WorkerDone>(&e)) {
      done[wd->index] = *wd;
      ++workers_done;
      table.worker_gone(wd->index);
      if (!wd->status) {
        std::printf("worker %u: %s\n", unsigned{wd->index}, wd->status.error().message.c_str());
      }
    } else if (auto* rd = std::get_if<RelayDone>(&e)) {
      relay_done = true;
      relay_status = rd->status;
    } else if (auto* ev = std::get_if<ddl::DdlRelayEvent>(&e)) {
      if (ev->kind == ddl::DdlRelayEvent::Kind::kEvicted) {
        std::printf("relay: rank %u evicted: %s\n", unsigned{ev->rank}, ev->text.c_str());
      }
    }
    table.flush(false);
  }
  relay_thread.join();
  for (auto& t : threads)
    t.join();
  table.flush(true);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  worker_objects.clear();
  const ddl::DdlRelayStats& rs = relay.stats();
  if (csv != nullptr) std::fclose(csv);

  std::printf("\n%llu stages in %.2f s: %.1f stages/s (relay + %u workers on this machine)\n",
              static_cast<unsigned long long>(rs.stages), seconds,
              static_cast<double>(rs.stages) / seconds, workers);
  for (std::uint32_t w = 0; w < workers; ++w) {
    const double mean =
        w < table.rate_n.size() && table.rate_n[w] ? table.rate_sum[w] / table.rate_n[w] : 0.0;
    std::printf(
        "worker %u: %u stages, test accuracy %.4f, relay R mean %.3f (min %.2f, max %.2f)%s\n", w,
        done[w].summary.stages, done[w].summary.final_accuracy, mean,
        w < table.rate_min.size() ? table.rate_min[w] : 0.0,
        w < table.rate_max.size() ? table.rate_max[w] : 0.0,
        done[w].status ? "" : "  [did not finish]");
  }
  std::printf(
      "relay: %llu chunks received, %llu late (dropped), %llu pre-discarded, %llu reports, %llu "
      "missing; %llu deadline closes; %llu evicted; controller: %llu increases, %llu decreases\n",
      static_cast<unsigned long long>(rs.chunks_received),
      static_cast<unsigned long long>(rs.chunks_late),
      static_cast<unsigned long long>(rs.packets_discarded),
      static_cast<unsigned long long>(rs.reports),
      static_cast<unsigned long long>(rs.reports_missing),
      static_cast<unsigned long long>(table.deadline_closes),
      static_cast<unsigned long long>(rs.evicted), static_cast<unsigned long long>(table.increases),
      static_cast<unsigned long long>(table.decreases));
  std::printf(
      "relay: %llu datagrams failed SRTP/SRTCP, %llu from unknown addresses, %llu too early, "
      "%llu rejected, %llu send drops\n",
      static_cast<unsigned long long>(rs.srtp_failures),
      static_cast<unsigned long long>(rs.foreign_datagrams),
      static_cast<unsigned long long>(rs.chunks_too_early),
      static_cast<unsigned long long>(rs.chunks_rejected),
      static_cast<unsigned long long>(rs.send_drops));
  std::printf("workers: %llu aggregate chunks lost in the network, %llu filled (%s)\n",
              static_cast<unsigned long long>(table.lost),
              static_cast<unsigned long long>(table.filled),
              std::string(ddl::to_string(ro.missing_fill)).c_str());
  if (!csv_path.empty()) std::printf("trace: %s\n", csv_path.c_str());
  bool ok = static_cast<bool>(relay_status);
  for (std::uint32_t w = 0; w < workers; ++w) {
    if (!done[w].status && !vanish[w]) ok = false;
  }
  if (!relay_status) std::printf("relay: %s\n", relay_status.error().message.c_str());
  return ok ? 0 : 1;
}

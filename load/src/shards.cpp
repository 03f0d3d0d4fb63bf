// Several client threads for one load run (predrop/load/shards.hpp).
#include "predrop/load/shards.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "predrop/load/runner.hpp"

namespace predrop::load {

namespace {

// Share `index` of `total` split into `count` parts as evenly as integers allow.
std::uint32_t share(std::uint64_t total, std::uint32_t index, std::uint32_t count) {
  return static_cast<std::uint32_t>(total / count + (index < total % count ? 1 : 0));
}

void append(std::vector<double>& to, const std::vector<double>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

LoadScenario shard_of(const LoadScenario& whole, std::uint32_t index, std::uint32_t count) {
  LoadScenario s = whole;
  if (count <= 1) return s;
  s.threads = 1;
  s.clients = std::max<std::uint32_t>(1, share(whole.clients, index, count));
  s.max_joins = std::max<std::uint32_t>(1, share(whole.max_joins, index, count));
  s.churn_band = share(whole.churn_band, index, count);
  s.join_per_s = whole.join_per_s / count;
  s.leave_per_s = whole.leave_per_s / count;
  s.seed = whole.seed + index;
  if (index != 0) {
    // The server's figures are taken once, by the first shard; so are the full clients.
    s.full_clients = 0;
    s.metrics.clear();
    s.server_pid = -1;
    s.csv.clear();
  }
  s.summary_csv.clear();  // main writes the merged row
  return s;
}

LoadSummary merge_summaries(std::vector<LoadSummary> shards) {
  if (shards.empty()) return {};
  LoadSummary m = std::move(shards.front());
  double psnr_sum = m.full_psnr_mean * static_cast<double>(m.full_blocks);
  for (std::size_t i = 1; i < shards.size(); ++i) {
    const LoadSummary& s = shards[i];
    m.hold_s = std::max(m.hold_s, s.hold_s);
    m.joins += s.joins;
    m.playing_after_ramp += s.playing_after_ramp;
    m.sessions_mean += s.sessions_mean;
    m.sessions_max += s.sessions_max;  // an upper bound: the shards' maxima need not coincide
    m.leaves += s.leaves;
    m.packets_per_s += s.packets_per_s;
    m.mbit_per_s += s.mbit_per_s;
    m.blocks += s.blocks;
    m.reports += s.reports;
    m.refused_453 += s.refused_453;
    m.refused_503 += s.refused_503;
    for (const auto& [kind, n] : s.errors) {
      m.errors[kind] += n;
    }
    m.srtp_failures += s.srtp_failures;
    m.srtp_verified += s.srtp_verified;
    psnr_sum += s.full_psnr_mean * static_cast<double>(s.full_blocks);
    m.full_blocks += s.full_blocks;
    append(m.samples.l_ms, s.samples.l_ms);
    append(m.samples.loss_pct, s.samples.loss_pct);
    append(m.samples.quality_db, s.samples.quality_db);
    append(m.samples.report_delay_ms, s.samples.report_delay_ms);
    append(m.samples.feedback_rtt_ms, s.samples.feedback_rtt_ms);
  }
  m.full_psnr_mean = m.full_blocks > 0 ? psnr_sum / static_cast<double>(m.full_blocks) : 0;
  m.l_ms = percentiles(m.samples.l_ms);
  m.loss_pct = percentiles(m.samples.loss_pct);
  m.quality_db = percentiles(m.samples.quality_db);
  m.report_delay_ms = percentiles(m.samples.report_delay_ms);
  m.feedback_rtt_ms = percentiles(m.samples.feedback_rtt_ms);
  // The first shard measured the server's CPU over its hold window against its own clients'
  // packets; per packet it is taken against every client's (or the server's own count).
  if (m.server_cpu_pct >= 0) {
    const double pkts = m.server_pkt_per_s > 0 ? m.server_pkt_per_s : m.packets_per_s;
    m.server_us_per_packet = pkts > 0 ? m.server_cpu_pct / 100 * 1e6 / pkts : -1;
  }
  return m;
}

struct ShardedRun::Impl {
  net::EventLoop& control;
  const net::Clock& clock;
  LoadScenario scenario;
  std::FILE* progress;
  std::mutex mutex;                  // guards runners
  std::vector<LoadRunner*> runners;  // live runners, for stop()
  bool stop_requested = false;       // under mutex: shards that start later stop at once
  std::atomic<std::uint32_t> finished{0};

  Impl(net::EventLoop& c, const net::Clock& k, LoadScenario s, std::FILE* p)
      : control(c), clock(k), scenario(std::move(s)), progress(p) {}

  void run_shard(std::uint32_t index, std::optional<core::Result<LoadSummary>>& out) {
    const std::uint32_t count = scenario.threads;
    net::EventLoop loop;
    LoadRunner runner(loop, clock, shard_of(scenario, index, count),
                      index == 0 ? progress : nullptr);
    {
      std::lock_guard lock(mutex);
      runners.push_back(&runner);
      if (stop_requested) runner.stop();
    }
    out = runner.run();
    {
      std::lock_guard lock(mutex);
      runners.erase(std::find(runners.begin(), runners.end(), &runner));
    }
    finished.fetch_add(1);
  }

  core::Result<LoadSummary> run() {
    const std::uint32_t count = std::max<std::uint32_t>(1, scenario.threads);
    std::vector<std::optional<core::Result<LoadSummary>>> results(count);
    std::vector<std::thread> threads;
    threads.reserve(count);
    for (std::uint32_t i = 0; i < count; ++i) {
      threads.emplace_back([this, i, &results] { run_shard(i, results[i]); });
    }
    // The control loop only waits: it keeps the caller's signal watcher served meanwhile.
    net::Timer poll(control, [this, count] {
      if (finished.load() == count) control.stop();
    });
    poll.start(100, 100);
    control.run();
    poll.stop();
    for (auto& t : threads) {
      t.join();
    }
    std::vector<LoadSummary> summaries;
    for (auto& r : results) {
      if (!r || !*r) return r ? r->error() : core::make_error("a load shard did not finish");
      summaries.push_back(std::move(r->value()));
    }
    return merge_summaries(std::move(summaries));
  }

  void stop() {
    std::lock_guard lock(mutex);
    stop_requested = true;
    for (LoadRunner* r : runners) {
      r->stop();
    }
  }
};

ShardedRun::ShardedRun(net::EventLoop& control, const net::Clock& clock, LoadScenario scenario,
                       std::FILE* progress)
    : impl_(std::make_unique<Impl>(control, clock, std::move(scenario), progress)) {}

ShardedRun::~ShardedRun() = default;

core::Result<LoadSummary> ShardedRun::run() {
  return impl_->run();
}

void ShardedRun::stop() {
  impl_->stop();
}

}  // namespace predrop::load

// The load tester's scheduler (predrop/load/runner.hpp): ramp, hold with churn, drain.
#include "predrop/load/runner.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <random>
#include <unordered_map>
#include <utility>

#include "predrop/client/measuring_client.hpp"
#include "predrop/load/client.hpp"
#include "predrop/load/csv_output.hpp"
#include "predrop/load/metrics_probe.hpp"
#include "predrop/load/proc.hpp"
#include "predrop/load/progress.hpp"
#include "predrop/rtsp/rtsp_headers.hpp"

namespace predrop::load {

namespace {

enum class Phase { kRamp, kHold, kDrain, kOver };

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kRamp:
      return "ramp";
    case Phase::kHold:
      return "hold";
    case Phase::kDrain:
      return "drain";
    case Phase::kOver:
      return "over";
  }
  return "?";
}

struct Slot {
  std::uint64_t id = 0;
  std::unique_ptr<LightClient> light;
  std::unique_ptr<client::MeasuringClient> full;
  bool playing = false;
  bool leaving = false;
  bool done = false;
  std::string session;   // the server's public number for it (its /metrics label), once known
  double confirmed = 0;  // reports_total last seen in /metrics
  std::deque<std::uint64_t> unconfirmed;  // send times of PDFBs not yet seen there
};

}  // namespace

struct LoadRunner::Impl {
  net::EventLoop& loop;
  const net::Clock& clock;
  LoadScenario sc;
  ProgressLine progress;
  net::SocketAddress server;
  int server_pid = 0;
  std::mt19937_64 rng;

  std::map<std::uint64_t, std::unique_ptr<Slot>> slots;
  std::unordered_map<std::string, Slot*> by_session;
  std::uint64_t next_id = 0;
  std::uint32_t full_started = 0;
  std::uint64_t start_us = 0;
  Phase phase = Phase::kRamp;
  std::uint64_t backoff_until_us = 0;
  std::uint64_t next_join_us = 0;
  std::uint64_t next_leave_us = 0;
  std::atomic<bool> stop_requested{false};  // set from another thread by stop()

  // Counters of clients already destroyed, so that totals survive churn.
  std::uint64_t gone_packets = 0, gone_bytes = 0, gone_srtp_fail = 0, gone_srtp_verified = 0;

  // Hold window.
  bool hold_started = false, hold_ended = false;
  std::uint64_t hold_t0 = 0, hold_t1 = 0;
  std::uint64_t hold_packets0 = 0, hold_bytes0 = 0, hold_packets1 = 0, hold_bytes1 = 0;
  std::optional<double> cpu0, cpu1;
  double metrics_pkts0 = -1, metrics_pkts1 = -1;
  double session_samples = 0, session_sum = 0;

  std::vector<double> l_ms, loss_pct, quality, report_delay, rtt_ms;
  double full_psnr_sum = 0;
  LoadSummary summary;

  std::unique_ptr<net::Timer> ticker;
  std::unique_ptr<net::Timer> progress_timer;
  std::unique_ptr<net::Timer> metrics_timer;
  std::unique_ptr<MetricsProbe> metrics;
  MetricsSnapshot last_metrics;
  // Packets the server sent, summed over per-session increments, so that sessions that ended
  // (and vanished from /metrics) keep counting.
  std::unordered_map<std::string, double> sent_seen;
  double sent_total = 0;
  bool sent_known = false;
  IntervalCsv csv;
  std::uint64_t last_progress_us = 0, last_progress_packets = 0, last_progress_bytes = 0;
  std::optional<double> last_progress_cpu;
  std::uint64_t tick_count = 0;

  Impl(net::EventLoop& l, const net::Clock& c, LoadScenario s, std::FILE* p)
      : loop(l), clock(c), sc(std::move(s)), progress(p), rng(sc.seed) {}

  double elapsed_s(std::uint64_t now) const { return static_cast<double>(now - start_us) / 1e6; }

  std::size_t live() const {
    std::size_t n = 0;
    for (const auto& [id, s] : slots) {
      n += (!s->done && !s->leaving) ? 1 : 0;
    }
    return n;
  }
  std::size_t playing() const {
    std::size_t n = 0;
    for (const auto& [id, s] : slots) {
      n += (s->playing && !s->done && !s->leaving) ? 1 : 0;
    }
    return n;
  }

  std::pair<std::uint64_t, std::uint64_t> traffic() const {
    std::uint64_t p = gone_packets, b = gone_bytes;
    for (const auto& [id, s] : slots) {
      if (s->light) {
        p += s->light->stats().packets;
        b += s->light->stats().bytes;
      }
    }
    return {p, b};
  }

  void error(const std::string& kind) { ++summary.errors[kind]; }

  const LoadGroup& pick_group() {
    double total = 0;
    for (const auto& g : sc.groups) {
      total += g.weight;
    }
    std::uniform_real_distribution<double> u(0, total);
    double x = u(rng);
    for (const auto& g : sc.groups) {
      if (x < g.weight) return g;
      x -= g.weight;
    }
    return sc.groups.back();
  }

  void join(std::uint64_t now) {
    if (summary.joins >= sc.max_joins) return;
    ++summary.joins;
    auto slot = std::make_unique<Slot>();
    slot->id = next_id++;
    Slot* s = slot.get();
    slots.emplace(s->id, std::move(slot));
    if (full_started < sc.full_clients) {
      ++full_started;
      client::ClientOptions co;
      co.url = sc.url;
      co.reference = sc.reference;
      co.psnr_cap_db = sc.psnr_cap_db;
      co.feedback = true;
      s->full = std::make_unique<client::MeasuringClient>(
          loop, clock, co,
          [this, s](const client::BlockResult& r) {
            s->playing = true;
            ++summary.full_blocks;
            if (std::isfinite(r.psnr_db)) full_psnr_sum += r.psnr_db;
            if (phase == Phase::kHold) {
              l_ms.push_back(r.reception_period_ms);
              loss_pct.push_back(100 * r.network_loss);
            }
          },
          [this, s](const core::Status& st, const client::ClientSummary& cs) {
            if (!st && !s->leaving) error("full: " + st.error().message.substr(0, 60));
            gone_srtp_fail += cs.srtp_failures;
            s->done = true;
          });
      s->full->start();
      return;
    }
    LightClientConfig c;
    c.url = sc.url;
    c.server = server;
    c.group = pick_group();
    c.request_timeout_s = sc.request_timeout_s;
    c.psnr_cap_db = sc.psnr_cap_db;
    c.concealed_db = sc.concealed_db;
    LightClient::Events ev;
    ev.on_playing = [s](LightClient&) { s->playing = true; };
    // /metrics labels a session by its public number, which the server's SRs name.
    ev.on_numbered = [this, s](LightClient& lc) {
      s->session = lc.server_number();
      by_session[s->session] = s;
    };
    ev.on_block = [this, s](LightClient&, const LightBlock& b) {
      ++summary.blocks;
      if (b.reported) {
        ++summary.reports;
        s->unconfirmed.push_back(b.report_time_us);
        if (s->unconfirmed.size() > 64) s->unconfirmed.pop_front();
      }
      if (phase != Phase::kHold) return;
      l_ms.push_back(b.measurement.reception_period_us / 1000.0);
      loss_pct.push_back(100 * b.loss);
      quality.push_back(b.quality_db);
      if (b.reported) report_delay.push_back(b.report_delay_us / 1000.0);
    };
    ev.on_failed = [this, s](LightClient&, const LightFailure& f) {
      if (f.status == 453) {
        ++summary.refused_453;
      } else if (f.status == 503) {
        ++summary.refused_503;
      } else {
        error(f.what + (f.status != 0 ? " " + std::to_string(f.status) : std::string()));
      }
      if (f.status == 453 || f.status == 503) {
        backoff_until_us = clock.now_us() + 1'000'000;
      }
      s->done = true;
    };
    ev.on_left = [this, s](LightClient&) {
      ++summary.leaves;
      s->done = true;
    };
    s->light = std::make_unique<LightClient>(loop, clock, c, std::move(ev));
    s->light->start();
    (void)now;
  }

  void leave_random() {
    std::vector<Slot*> candidates;
    for (auto& [id, s] : slots) {
      if (s->light && s->playing && !s->leaving && !s->done) candidates.push_back(s.get());
    }
    if (candidates.empty()) return;
    std::uniform_int_distribution<std::size_t> u(0, candidates.size() - 1);
    Slot* s = candidates[u(rng)];
    s->leaving = true;
    s->light->leave();
  }

  std::uint64_t exp_interval_us(double per_s) {
    std::exponential_distribution<double> e(per_s);
    return static_cast<std::uint64_t>(e(rng) * 1e6);
  }

  void reap() {
    for (auto it = slots.begin(); it != slots.end();) {
      Slot& s = *it->second;
      if (!s.done) {
        ++it;
        continue;
      }
      if (s.light) {
        gone_packets += s.light->stats().packets;
        gone_bytes += s.light->stats().bytes;
        gone_srtp_fail += s.light->stats().srtp_failures;
        gone_srtp_verified += s.light->stats().srtp_verified;
      }
      if (!s.session.empty()) by_session.erase(s.session);
      it = slots.erase(it);
    }
  }

  void begin_hold(std::uint64_t now) {
    hold_started = true;
    hold_t0 = now;
    std::tie(hold_packets0, hold_bytes0) = traffic();
    if (server_pid > 0) cpu0 = process_cpu_seconds(server_pid);
    metrics_pkts0 = sent_known ? sent_total : -1;
    summary.playing_after_ramp = playing();
    next_join_us = now + (sc.join_per_s > 0 ? exp_interval_us(sc.join_per_s) : 0);
    next_leave_us = now + (sc.leave_per_s > 0 ? exp_interval_us(sc.leave_per_s) : 0);
  }

  void end_hold(std::uint64_t now) {
    hold_ended = true;
    hold_t1 = now;
    std::tie(hold_packets1, hold_bytes1) = traffic();
    if (server_pid > 0) cpu1 = process_cpu_seconds(server_pid);
    metrics_pkts1 = sent_known ? sent_total : -1;
  }

  void begin_drain() {
    phase = Phase::kDrain;
    for (auto& [id, s] : slots) {
      if (s->done || s->leaving) continue;
      s->leaving = true;
      if (s->light) s->light->leave();
      if (s->full) s->full->stop();
    }
  }

  void tick() {
    const std::uint64_t now = clock.now_us();
    ++tick_count;
    reap();
    const double t = elapsed_s(now);
    const double ramp_end = sc.ramp_s;
    const double hold_end = sc.ramp_s + sc.hold_s;
    if (phase == Phase::kRamp && t >= ramp_end) {
      phase = Phase::kHold;
      begin_hold(now);
    }
    if ((phase == Phase::kHold && t >= hold_end) || (stop_requested && phase < Phase::kDrain)) {
      if (!hold_started) begin_hold(now);
      end_hold(now);
      begin_drain();
    }
    if (phase == Phase::kDrain) {
      if (slots.empty() || t >= hold_end + sc.drain_s || (stop_requested && t >= hold_end + 60)) {
        for (auto& [id, s] : slots) {
          if (s->light) s->light->abort();
        }
        phase = Phase::kOver;
        finish();
      }
      return;
    }
    if (tick_count % 5 == 0) {
      for (auto& [id, s] : slots) {
        if (s->light && !s->done) s->light->poll(now);
      }
    }
    if (phase == Phase::kHold) {
      const std::size_t band =
          sc.churn_band != 0 ? sc.churn_band : std::max<std::uint32_t>(1, sc.clients / 10);
      session_samples += 1;
      session_sum += static_cast<double>(playing());
      summary.sessions_max = std::max<std::uint64_t>(summary.sessions_max, playing());
      if (sc.leave_per_s > 0 && now >= next_leave_us) {
        next_leave_us = now + exp_interval_us(sc.leave_per_s);
        if (live() + band > sc.clients) leave_random();
      }
      if (sc.join_per_s > 0 && now >= next_join_us) {
        next_join_us = now + exp_interval_us(sc.join_per_s);
        if (live() < sc.clients + band && now >= backoff_until_us) join(now);
      }
    }
    // Top up to the target (the ramp line, then `clients`), a bounded number per tick, backing
    // off for a second after a refusal.
    const double frac = sc.ramp_s > 0 ? std::min(1.0, t / sc.ramp_s) : 1.0;
    const auto target = static_cast<std::size_t>(std::ceil(frac * sc.clients));
    const std::size_t per_tick = std::max<std::size_t>(
        2, static_cast<std::size_t>(sc.clients / std::max(1.0, sc.ramp_s * 100)) + 2);
    std::size_t started = 0;
    while (live() < target && started < per_tick && now >= backoff_until_us &&
           summary.joins < sc.max_joins) {
      join(now);
      ++started;
    }
  }

  void fetch_metrics() {
    if (!metrics || metrics->busy()) return;
    metrics->fetch([this](core::Result<MetricsSnapshot> m) {
      if (!m) return error(m.error().message);  // the kind: "metrics connect" / "metrics reply"
      on_metrics(std::move(m.value()));
    });
  }

  void on_metrics(MetricsSnapshot m) {
    const std::uint64_t now = m.fetched_us;
    for (const auto& [session, value] : m.sent) {
      auto [it, fresh] = sent_seen.try_emplace(session, 0.0);
      if (value > it->second) sent_total += value - it->second;
      it->second = value;
    }
    sent_known = true;
    for (const auto& [session, count] : m.reports) {
      auto it = by_session.find(session);
      if (it == by_session.end()) continue;
      Slot& s = *it->second;
      double delta = count - s.confirmed;
      s.confirmed = count;
      while (delta >= 1 && !s.unconfirmed.empty()) {
        const std::uint64_t sent = s.unconfirmed.front();
        s.unconfirmed.pop_front();
        delta -= 1;
        if (phase == Phase::kHold && sent >= hold_t0) {
          rtt_ms.push_back(static_cast<double>(now - std::min(now, sent)) / 1000.0);
        }
      }
    }
    last_metrics = std::move(m);
  }

  void show_progress() {
    const std::uint64_t now = clock.now_us();
    const auto [packets, bytes] = traffic();
    const double dt = static_cast<double>(now - last_progress_us) / 1e6;
    std::optional<double> cpu = server_pid > 0 ? process_cpu_seconds(server_pid) : std::nullopt;
    ProgressSample p;
    p.t_s = elapsed_s(now);
    p.phase = phase_name(phase);
    p.playing = playing();
    p.live = live();
    p.clients = sc.clients;
    p.rx_pkt_per_s = dt > 0 ? static_cast<double>(packets - last_progress_packets) / dt : 0;
    p.rx_mbit_per_s = dt > 0 ? static_cast<double>(bytes - last_progress_bytes) * 8 / 1e6 / dt : 0;
    if (cpu && last_progress_cpu && dt > 0) {
      p.server_cpu_pct = 100 * (*cpu - *last_progress_cpu) / dt;
    }
    last_progress_cpu = cpu;
    last_progress_us = now;
    last_progress_packets = packets;
    last_progress_bytes = bytes;
    std::vector<double> recent(l_ms.end() - std::min<std::size_t>(l_ms.size(), 2000), l_ms.end());
    const Percentiles lp = percentiles(recent);
    p.l_p50_ms = lp.p50;
    p.l_p99_ms = lp.p99;
    p.reports = summary.reports;
    p.refused_453 = summary.refused_453;
    p.refused_503 = summary.refused_503;
    p.errors = total_errors(summary);
    progress.show(p, now);
    csv.write(p);
  }

  void finish() {
    show_progress();
    progress.finish();
    ticker.reset();
    progress_timer.reset();
    metrics_timer.reset();
    metrics.reset();
    for (auto& [id, s] : slots) {
      s->done = true;
    }
    reap();  // keeps their counters
    by_session.clear();
    loop.stop();
  }

  core::Result<LoadSummary> run() {
    auto url = rtsp::parse_rtsp_url(sc.url);
    if (!url) return core::make_error("server.url: " + url.error().message);
    const std::string host = url->host == "localhost" ? "127.0.0.1" : url->host;
    auto addr = net::SocketAddress::from_ip(host, url->port);
    if (!addr) return core::make_error("server.url: host must be an IP address");
    server = *addr;
    server_pid = sc.server_pid;
    if (server_pid == 0) server_pid = find_pid_listening_on(url->port).value_or(0);
    if (!sc.metrics.empty()) {
      auto m = net::SocketAddress::parse(sc.metrics);
      if (!m) return core::make_error("server.metrics: " + m.error().message);
      metrics = std::make_unique<MetricsProbe>(loop, clock, *m);
    }
    if (!sc.csv.empty()) {
      if (auto st = csv.open(sc.csv); !st) return st.error();
    }
    summary.label = sc.label;
    start_us = clock.now_us();
    last_progress_us = start_us;
    if (server_pid > 0) last_progress_cpu = process_cpu_seconds(server_pid);
    ticker = std::make_unique<net::Timer>(loop, [this] { tick(); });
    ticker->start(0, 10);
    progress_timer = std::make_unique<net::Timer>(loop, [this] { show_progress(); });
    const auto pms = static_cast<std::uint64_t>(sc.progress_s * 1000);
    progress_timer->start(pms, pms);
    if (metrics) {
      metrics_timer = std::make_unique<net::Timer>(loop, [this] { fetch_metrics(); });
      const auto mms = static_cast<std::uint64_t>(sc.metrics_poll_s * 1000);
      metrics_timer->start(0, mms);
    }
    loop.run();

    // The summary.
    summary.hold_s = static_cast<double>(hold_t1 - hold_t0) / 1e6;
    if (summary.hold_s > 0) {
      summary.packets_per_s = static_cast<double>(hold_packets1 - hold_packets0) / summary.hold_s;
      summary.mbit_per_s =
          static_cast<double>(hold_bytes1 - hold_bytes0) * 8 / 1e6 / summary.hold_s;
      if (cpu0 && cpu1) {
        summary.server_cpu_pct = 100 * (*cpu1 - *cpu0) / summary.hold_s;
      }
      if (metrics_pkts0 >= 0 && metrics_pkts1 >= 0) {
        summary.server_pkt_per_s = (metrics_pkts1 - metrics_pkts0) / summary.hold_s;
      }
      const double pkts =
          summary.server_pkt_per_s > 0 ? summary.server_pkt_per_s : summary.packets_per_s;
      if (cpu0 && cpu1 && pkts > 0) {
        summary.server_us_per_packet = (*cpu1 - *cpu0) * 1e6 / (pkts * summary.hold_s);
      }
    }
    summary.sessions_mean = session_samples > 0 ? session_sum / session_samples : 0;
    summary.l_ms = percentiles(l_ms);
    summary.loss_pct = percentiles(loss_pct);
    summary.quality_db = percentiles(quality);
    summary.report_delay_ms = percentiles(report_delay);
    summary.feedback_rtt_ms = percentiles(rtt_ms);
    summary.samples = LoadSamples{std::move(l_ms), std::move(loss_pct), std::move(quality),
                                  std::move(report_delay), std::move(rtt_ms)};
    summary.srtp_failures = gone_srtp_fail;
    summary.srtp_verified = gone_srtp_verified;
    summary.full_psnr_mean =
        summary.full_blocks > 0 ? full_psnr_sum / static_cast<double>(summary.full_blocks) : 0;
    summary.server_late_known = last_metrics.late_known;
    summary.server_late_blocks = static_cast<std::uint64_t>(last_metrics.late_blocks);
    return summary;
  }
};

LoadRunner::LoadRunner(net::EventLoop& loop, const net::Clock& clock, LoadScenario scenario,
                       std::FILE* progress)
    : impl_(std::make_unique<Impl>(loop, clock, std::move(scenario), progress)) {}

LoadRunner::~LoadRunner() = default;

core::Result<LoadSummary> LoadRunner::run() {
  return impl_->run();
}

void LoadRunner::stop() {
  impl_->stop_requested = true;
}

}  // namespace predrop::load

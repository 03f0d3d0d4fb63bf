// `predrop-load whep` (predrop/load/whep_run.hpp).
#include "predrop/load/whep_run.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <vector>

#include "predrop/load/metrics_probe.hpp"
#include "predrop/load/proc.hpp"
#include "predrop/load/whep_client.hpp"
#include "predrop/webrtc/dtls_certificate.hpp"

namespace predrop::load {

namespace {

// One end of the measured window.
struct Mark {
  std::uint64_t at_us = 0;
  std::optional<double> cpu_s;
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;
  std::optional<double> sent;  // server, from /metrics
  std::optional<double> late;
  bool scraped = false;
};

enum class Phase { kRamp, kWindow, kClosing, kLeaving };

}  // namespace

core::Result<WhepRunSummary> run_whep(net::EventLoop& loop, const net::Clock& clock,
                                      const WhepRunConfig& config, std::FILE* progress) {
  auto cert = webrtc::DtlsCertificate::generate();
  if (!cert) return cert.error();
  int pid = config.server_pid;
  if (pid == 0) pid = find_pid_listening_on(config.http.port()).value_or(0);

  WhepRunSummary s;
  s.clients = config.clients;
  std::vector<std::unique_ptr<WhepClient>> clients;
  clients.reserve(config.clients);
  std::uint32_t left = 0;
  MetricsProbe probe(loop, clock, config.http);
  Mark open;
  Mark close;
  Phase phase = Phase::kRamp;
  const std::uint64_t t0 = clock.now_us();
  const std::optional<double> cpu_at_start =
      pid != 0 ? process_cpu_seconds(pid) : std::optional<double>{};
  const auto ramp_us = static_cast<std::uint64_t>(config.ramp_s * 1e6);
  const std::uint64_t open_us = t0 + ramp_us + static_cast<std::uint64_t>(config.settle_s * 1e6);
  const std::uint64_t close_us = open_us + static_cast<std::uint64_t>(config.hold_s * 1e6);
  std::uint64_t leave_deadline_us = 0;
  std::uint64_t last_progress_us = 0;

  WhepClient::Events events;
  events.on_failed = [&](WhepClient&, const std::string& what, const std::string&) {
    ++s.failures[what];
  };
  events.on_left = [&](WhepClient&) { ++left; };

  auto playing = [&] {
    return static_cast<std::uint32_t>(
        std::count_if(clients.begin(), clients.end(), [](const auto& c) { return c->playing(); }));
  };
  auto mark = [&](Mark& m) {
    m.at_us = clock.now_us();
    if (pid != 0) m.cpu_s = process_cpu_seconds(pid);
    for (const auto& c : clients) {
      m.packets += c->stats().packets;
      m.bytes += c->stats().bytes;
    }
    (void)probe.fetch([&m](const core::Result<MetricsSnapshot>& snap) {
      m.scraped = true;
      if (!snap) return;
      m.sent = snap->packets_sent;
      if (snap->late_known) m.late = snap->late_blocks;
    });
  };

  net::Timer tick(loop, [&] {
    const std::uint64_t now = clock.now_us();
    while (clients.size() < config.clients &&
           now >= t0 + (config.clients > 0 ? ramp_us * clients.size() / config.clients : 0)) {
      WhepClientConfig cc;
      cc.http = config.http;
      cc.stream = config.stream;
      cc.certificate = *cert;
      cc.srtp_verify_every = config.srtp_verify_every;
      cc.feedback_interval_us = config.feedback_interval_us;
      clients.push_back(std::make_unique<WhepClient>(loop, clock, cc, events));
      clients.back()->start();
    }
    for (auto& c : clients) {
      c->poll(now);
    }
    if (phase == Phase::kRamp && now >= open_us) {
      s.playing_at_open = playing();
      mark(open);
      phase = Phase::kWindow;
    } else if (phase == Phase::kWindow && now >= close_us && !probe.busy()) {
      s.playing_at_close = playing();
      mark(close);
      phase = Phase::kClosing;
    } else if (phase == Phase::kClosing && (close.scraped || now > close.at_us + 3'000'000)) {
      phase = Phase::kLeaving;
      leave_deadline_us = now + 3'000'000;
      for (auto& c : clients) {
        c->leave();
      }
    } else if (phase == Phase::kLeaving) {
      // A failed viewer never reports on_left: it is inert already.
      std::size_t failed = 0;
      for (const auto& [what, n] : s.failures) {
        failed += n;
      }
      if (left + failed >= clients.size() || now > leave_deadline_us) loop.stop();
    }
    if (progress != nullptr && now > last_progress_us + 1'000'000) {
      last_progress_us = now;
      std::fprintf(progress, "\rwhep: %zu started, %u playing  ", clients.size(), playing());
      std::fflush(progress);
    }
  });
  tick.start(5, 5);
  loop.run();
  tick.stop();
  if (progress != nullptr) std::fprintf(progress, "\n");
  for (auto& c : clients) {
    c->abort();
  }

  s.window_s = static_cast<double>(close.at_us - open.at_us) / 1e6;
  if (s.window_s > 0) {
    s.received_pkt_s = static_cast<double>(close.packets - open.packets) / s.window_s;
    s.received_mbit_s = static_cast<double>(close.bytes - open.bytes) * 8 / s.window_s / 1e6;
    if (open.sent && close.sent) s.server_sent_pkt_s = (*close.sent - *open.sent) / s.window_s;
    if (open.cpu_s && close.cpu_s) {
      s.server_cpu = (*close.cpu_s - *open.cpu_s) / s.window_s;
      const double pkts = s.server_sent_pkt_s > 0 ? s.server_sent_pkt_s : s.received_pkt_s;
      if (pkts > 0) s.server_us_per_packet = s.server_cpu * 1e6 / pkts;
    }
    if (cpu_at_start && open.cpu_s && s.server_cpu >= 0 && s.playing_at_open > 0) {
      const double media_s = s.server_cpu * (0.5 * config.ramp_s + config.settle_s);
      s.server_join_ms = (*open.cpu_s - *cpu_at_start - media_s) * 1e3 / s.playing_at_open;
    }
    if (open.late && close.late) {
      s.late_stages_window = *close.late - *open.late;
      s.late_stages_total = *close.late;
    }
  }
  std::vector<double> connect;
  for (const auto& c : clients) {
    const WhepClientStats& st = c->stats();
    s.srtp_verified += st.srtp_verified;
    s.srtp_failures += st.srtp_failures;
    s.feedback_sent += st.feedback_sent;
    if (st.connect_us > 0) connect.push_back(static_cast<double>(st.connect_us) / 1e3);
  }
  if (!connect.empty()) {
    std::sort(connect.begin(), connect.end());
    s.connect_ms_p50 = connect[connect.size() / 2];
    s.connect_ms_max = connect.back();
  }
  return s;
}

void print_whep_summary(std::FILE* out, const WhepRunConfig& config, const WhepRunSummary& s) {
  std::fprintf(out, "whep: %u viewers of '%s', playing %u at the window's open, %u at its close\n",
               s.clients, config.stream.c_str(), s.playing_at_open, s.playing_at_close);
  for (const auto& [what, n] : s.failures) {
    std::fprintf(out, "  failed (%s): %u\n", what.c_str(), n);
  }
  std::fprintf(
      out,
      "  window %.1f s: received %.0f pkt/s (%.1f Mbit/s), server sent %.0f pkt/s\n"
      "  server CPU %.1f %% of a core, %.2f us per packet, %.3f %% of a core per session\n"
      "  late stages %.0f in the window (%.0f since start)\n"
      "  SRTP verified %llu, failed %llu; transport-cc messages sent %llu; connect p50 "
      "%.1f ms, max %.1f ms\n"
      "  server CPU per join %.2f ms (the ramp's CPU less the media's, per viewer playing)\n",
      s.window_s, s.received_pkt_s, s.received_mbit_s, s.server_sent_pkt_s, s.server_cpu * 100,
      s.server_us_per_packet,
      s.playing_at_close > 0 ? s.server_cpu * 100 / s.playing_at_close : 0.0, s.late_stages_window,
      s.late_stages_total, static_cast<unsigned long long>(s.srtp_verified),
      static_cast<unsigned long long>(s.srtp_failures),
      static_cast<unsigned long long>(s.feedback_sent), s.connect_ms_p50, s.connect_ms_max,
      s.server_join_ms);
}

core::Status append_whep_csv(const std::string& path, const std::string& label,
                             const WhepRunSummary& s) {
  const bool fresh = !std::filesystem::exists(path);
  std::ofstream f(path, std::ios::app);
  if (!f) return core::make_error("cannot write " + path);
  if (fresh) {
    f << "label,clients,playing_open,playing_close,window_s,received_pkt_s,received_mbit_s,"
         "server_sent_pkt_s,server_cpu,server_us_per_packet,late_window,late_total,"
         "srtp_verified,srtp_failures,feedback_sent,connect_ms_p50,connect_ms_max,server_join_ms\n";
  }
  f << label << ',' << s.clients << ',' << s.playing_at_open << ',' << s.playing_at_close << ','
    << s.window_s << ',' << s.received_pkt_s << ',' << s.received_mbit_s << ','
    << s.server_sent_pkt_s << ',' << s.server_cpu << ',' << s.server_us_per_packet << ','
    << s.late_stages_window << ',' << s.late_stages_total << ',' << s.srtp_verified << ','
    << s.srtp_failures << ',' << s.feedback_sent << ',' << s.connect_ms_p50 << ','
    << s.connect_ms_max << ',' << s.server_join_ms << '\n';
  return core::Ok{};
}

}  // namespace predrop::load

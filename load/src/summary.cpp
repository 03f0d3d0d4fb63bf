// The final table of predrop-load (predrop/load/summary.hpp).
#include "predrop/load/summary.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace predrop::load {

Percentiles percentiles(std::vector<double>& v) {
  Percentiles p;
  p.count = v.size();
  if (v.empty()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    p.p50 = p.p90 = p.p99 = p.max = p.mean = nan;
    return p;
  }
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    // Nearest rank.
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  p.max = v.back();
  double sum = 0;
  for (double x : v) {
    sum += x;
  }
  p.mean = sum / static_cast<double>(v.size());
  return p;
}

std::uint64_t total_errors(const LoadSummary& s) {
  std::uint64_t n = 0;
  for (const auto& [kind, count] : s.errors) {
    n += count;
  }
  return n;
}

namespace {
std::string ms(const Percentiles& p) {
  char b[96];
  if (p.count == 0) return "-";
  std::snprintf(b, sizeof b, "p50 %.1f  p99 %.1f  max %.1f  (n=%zu)", p.p50, p.p99, p.max, p.count);
  return b;
}
}  // namespace

void print_summary(std::FILE* out, const LoadScenario& sc, const LoadSummary& s) {
  std::fprintf(out, "\npredrop-load summary%s%s\n", s.label.empty() ? "" : ": ", s.label.c_str());
  std::fprintf(out, "  %-28s %s\n", "stream", sc.url.c_str());
  std::fprintf(out, "  %-28s %u clients, ramp %.0f s, hold %.0f s, churn +%.2f/-%.2f per s\n",
               "scenario", sc.clients, sc.ramp_s, sc.hold_s, sc.join_per_s, sc.leave_per_s);
  std::fprintf(out, "  %-28s %llu joins, %llu leaves\n", "joins",
               static_cast<unsigned long long>(s.joins), static_cast<unsigned long long>(s.leaves));
  std::fprintf(out, "  %-28s %llu after ramp, mean %.1f, max %llu\n", "sessions held",
               static_cast<unsigned long long>(s.playing_after_ramp), s.sessions_mean,
               static_cast<unsigned long long>(s.sessions_max));
  std::fprintf(out, "  %-28s %.0f pkt/s, %.1f Mbit/s (received, hold window %.1f s)\n", "traffic",
               s.packets_per_s, s.mbit_per_s, s.hold_s);
  if (s.server_cpu_pct >= 0) {
    std::fprintf(out, "  %-28s %.1f %% of one core, %.2f us per packet sent\n", "server CPU",
                 s.server_cpu_pct, s.server_us_per_packet);
  } else {
    std::fprintf(out, "  %-28s n/a (no server pid)\n", "server CPU");
  }
  if (s.server_pkt_per_s >= 0) {
    std::fprintf(out, "  %-28s %.0f pkt/s (server metrics)\n", "server sent", s.server_pkt_per_s);
  }
  std::fprintf(out, "  %-28s %s ms\n", "block L", ms(s.l_ms).c_str());
  std::fprintf(out, "  %-28s %s %%\n", "network loss per block", ms(s.loss_pct).c_str());
  std::fprintf(out, "  %-28s %s dB\n", "quality (loss-derived)", ms(s.quality_db).c_str());
  std::fprintf(out, "  %-28s %s ms\n", "report delay", ms(s.report_delay_ms).c_str());
  std::fprintf(out, "  %-28s %s ms\n", "feedback round trip",
               s.feedback_rtt_ms.count ? ms(s.feedback_rtt_ms).c_str()
                                       : "n/a (no metrics, or no report seen there)");
  std::fprintf(out, "  %-28s %llu blocks, %llu reports sent\n", "blocks",
               static_cast<unsigned long long>(s.blocks),
               static_cast<unsigned long long>(s.reports));
  if (s.full_blocks > 0) {
    std::fprintf(out, "  %-28s %llu blocks, mean PSNR %.2f dB\n", "full clients",
                 static_cast<unsigned long long>(s.full_blocks), s.full_psnr_mean);
  }
  std::fprintf(out, "  %-28s 453: %llu  503: %llu\n", "refused",
               static_cast<unsigned long long>(s.refused_453),
               static_cast<unsigned long long>(s.refused_503));
  std::fprintf(out, "  %-28s %llu failed of %llu verified\n", "SRTP",
               static_cast<unsigned long long>(s.srtp_failures),
               static_cast<unsigned long long>(s.srtp_verified));
  if (s.server_late_known) {
    std::fprintf(out, "  %-28s %llu\n", "server late blocks",
                 static_cast<unsigned long long>(s.server_late_blocks));
  }
  if (s.errors.empty()) {
    std::fprintf(out, "  %-28s none\n", "errors");
  } else {
    for (const auto& [k, v] : s.errors) {
      std::fprintf(out, "  %-28s %s: %llu\n", "errors", k.c_str(),
                   static_cast<unsigned long long>(v));
    }
  }
}

}  // namespace predrop::load

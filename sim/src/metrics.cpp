#include "predrop/sim/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace predrop::sim {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr SimTime kWindowUs = 5'000'000;
// How long after an onset of congestion the queue counts as the onset's (FlowSummary).
constexpr SimTime kOnsetUs = 2'500'000;
constexpr SimTime kOnsetStepUs = 100'000;

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return kNaN;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

double mean(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  double s = 0;
  for (double x : v) {
    s += x;
  }
  return s / static_cast<double>(v.size());
}

bool congested_at(const CaseSpec& spec, Direction d, SimTime t, double stream_bps) {
  return fair_share_bps(spec, d, t) < 0.98 * stream_bps;
}

// Bytes of a flow received (left the bottleneck) in [from, to).
double received_bytes(const std::vector<PacketRecord>& log, SimTime from, SimTime to) {
  double b = 0;
  for (const auto& r : log) {
    if (r.dropped) continue;
    const SimTime out = r.arrived_us + r.queue_us;
    if (out >= from && out < to) b += r.bytes;
  }
  return b;
}
}  // namespace

CaseSummary summarize(const CaseSpec& spec, const CaseRun& run) {
  CaseSummary cs;
  std::vector<double> flow_psnr;
  std::vector<double> flow_cpsnr;
  for (std::size_t i = 0; i < run.media.size(); ++i) {
    const auto& blocks = run.media[i];
    const std::uint32_t id = run.media_flow_ids[i];
    const Direction dir = run.flow_paths[id].direction;
    FlowSummary f;
    std::vector<double> psnr, cpsnr, rate;
    std::vector<std::uint8_t> congested;
    double sent = 0, lost = 0;
    for (const auto& b : blocks) {
      const SimTime mid = (b.start_us + b.end_us) / 2;
      const double block_bps =
          static_cast<double>(b.block_bytes) * 8e6 / static_cast<double>(b.end_us - b.start_us);
      const bool c = congested_at(spec, dir, mid, block_bps);
      congested.push_back(c);
      if (!b.reported && !b.missing) continue;
      psnr.push_back(b.psnr_db);
      rate.push_back(b.rate);
      if (c) cpsnr.push_back(b.psnr_db);
      sent += b.sent;
      lost += b.lost;
    }
    f.blocks = static_cast<unsigned>(psnr.size());
    f.congested_blocks = static_cast<unsigned>(cpsnr.size());
    f.psnr_db = mean(psnr);
    f.psnr_congested_db = mean(cpsnr);
    f.rate = mean(rate);
    f.loss = sent > 0 ? lost / sent : 0.0;
    std::vector<double> q, qc, qs;
    // Onsets: the flow's start (and resume) and every drop of the fair share by 10 % or more.
    std::vector<SimTime> onsets{spec.media[i].start_us};
    if (spec.media[i].pause_until_us > 0) onsets.push_back(spec.media[i].pause_until_us);
    for (SimTime t = kOnsetStepUs; t < spec.duration_us; t += kOnsetStepUs) {
      if (fair_share_bps(spec, dir, t) < 0.9 * fair_share_bps(spec, dir, t - kOnsetStepUs)) {
        onsets.push_back(t);
      }
    }
    double bytes = 0;
    SimTime first = INT64_MAX, last = 0;
    for (const auto& r : run.logs[id]) {
      if (r.dropped) continue;
      q.push_back(static_cast<double>(r.queue_us) / 1000.0);
      if (congested_at(spec, dir, r.arrived_us, run.stream_rate_bps)) {
        qc.push_back(static_cast<double>(r.queue_us) / 1000.0);
        const bool onset = std::any_of(onsets.begin(), onsets.end(), [&](SimTime o) {
          return r.arrived_us >= o && r.arrived_us < o + kOnsetUs;
        });
        if (!onset) qs.push_back(static_cast<double>(r.queue_us) / 1000.0);
      }
      bytes += r.bytes;
      first = std::min(first, r.arrived_us);
      last = std::max(last, r.arrived_us);
    }
    f.queue_mean_ms = mean(q);
    f.queue_p95_ms = percentile(q, 0.95);
    f.queue_p95_congested_ms = percentile(qc, 0.95);
    f.queue_p95_settled_ms = percentile(qs, 0.95);
    f.throughput_bps = last > first ? bytes * 8e6 / static_cast<double>(last - first) : 0.0;
    // Returns of capacity: a congested block followed by an uncongested one.
    int worst = 0;
    for (std::size_t k = 1; k < blocks.size(); ++k) {
      if (!(congested[k - 1] && !congested[k])) continue;
      int found = -1;
      unsigned run_len = 0;
      for (std::size_t j = k; j < blocks.size(); ++j) {
        if (congested[j]) break;
        run_len = blocks[j].rate <= 0.02 ? run_len + 1 : 0;
        if (run_len == 3) {
          found = static_cast<int>(j - 2 - k);
          break;
        }
      }
      // A return cut short by the next congestion or the run's end without 3 clean blocks:
      // only count it as "never" when at least 6 uncongested blocks followed.
      std::size_t clear = 0;
      for (std::size_t j = k; j < blocks.size() && !congested[j]; ++j) {
        ++clear;
      }
      if (found < 0 && clear < 6) continue;
      if (found < 0) {
        worst = -1;
        break;
      }
      worst = std::max(worst, found);
    }
    f.return_blocks = worst;
    cs.flows.push_back(f);
    flow_psnr.push_back(f.psnr_db);
    if (!cpsnr.empty()) flow_cpsnr.push_back(f.psnr_congested_db);
  }
  cs.psnr_db = mean(flow_psnr);
  cs.psnr_congested_db = mean(flow_cpsnr);
  cs.queue_p95_congested_ms = kNaN;
  cs.queue_p95_settled_ms = kNaN;
  cs.loss = 0;
  cs.return_blocks = 0;
  for (const auto& f : cs.flows) {
    if (!std::isnan(f.queue_p95_congested_ms)) {
      cs.queue_p95_congested_ms =
          std::isnan(cs.queue_p95_congested_ms)
              ? f.queue_p95_congested_ms
              : std::max(cs.queue_p95_congested_ms, f.queue_p95_congested_ms);
    }
    if (!std::isnan(f.queue_p95_settled_ms)) {
      cs.queue_p95_settled_ms = std::isnan(cs.queue_p95_settled_ms)
                                    ? f.queue_p95_settled_ms
                                    : std::max(cs.queue_p95_settled_ms, f.queue_p95_settled_ms);
    }
    cs.loss += f.loss / static_cast<double>(cs.flows.size());
    if (f.return_blocks < 0 || cs.return_blocks < 0) {
      cs.return_blocks = -1;
    } else {
      cs.return_blocks = std::max(cs.return_blocks, f.return_blocks);
    }
  }
  // Self-fairness over 5 s windows in which every media flow of the forward direction is active.
  cs.fair_windows = kNaN;
  cs.worst_ratio = kNaN;
  cs.psnr_spread_db = kNaN;
  std::vector<std::size_t> fwd;
  for (std::size_t i = 0; i < run.media.size(); ++i) {
    if (run.flow_paths[run.media_flow_ids[i]].direction == Direction::kForward) fwd.push_back(i);
  }
  if (fwd.size() >= 2) {
    unsigned windows = 0, fair = 0;
    double worst = 1.0;
    std::vector<double> psnr_sum(fwd.size(), 0.0), psnr_n(fwd.size(), 0.0);
    for (SimTime w = 0; w + kWindowUs <= spec.duration_us; w += kWindowUs) {
      bool all = true;
      for (std::size_t i : fwd) {
        const MediaSpec& m = spec.media[i];
        const bool paused = m.pause_from_us >= 0 && w + kWindowUs > m.pause_from_us &&
                            w < m.pause_until_us + 2'000'000;
        if (w < m.start_us + 3'000'000 || w + kWindowUs > m.stop_us || paused) all = false;
      }
      if (!all) continue;
      double lo = 1e300, hi = 0;
      for (std::size_t i : fwd) {
        const double b = received_bytes(run.logs[run.media_flow_ids[i]], w, w + kWindowUs);
        lo = std::min(lo, b);
        hi = std::max(hi, b);
      }
      ++windows;
      const double ratio = lo > 0 ? hi / lo : 1e9;
      worst = std::max(worst, ratio);
      if (ratio <= 1.25) ++fair;
      for (std::size_t k = 0; k < fwd.size(); ++k) {
        for (const auto& b : run.media[fwd[k]]) {
          if (b.start_us >= w && b.start_us < w + kWindowUs && (b.reported || b.missing)) {
            psnr_sum[k] += b.psnr_db;
            psnr_n[k] += 1;
          }
        }
      }
    }
    if (windows > 0) {
      cs.fair_windows = static_cast<double>(fair) / windows;
      cs.worst_ratio = worst;
      double lo = 1e300, hi = -1e300;
      for (std::size_t k = 0; k < fwd.size(); ++k) {
        if (psnr_n[k] == 0) continue;
        lo = std::min(lo, psnr_sum[k] / psnr_n[k]);
        hi = std::max(hi, psnr_sum[k] / psnr_n[k]);
      }
      cs.psnr_spread_db = hi - lo;
    }
  }
  // Against long TCP flows: over the time both were active.
  cs.tcp_share_ratio = kNaN;
  cs.tcp_bps = kNaN;
  for (std::size_t t = 0; t < spec.tcp.size(); ++t) {
    if (spec.tcp[t].short_seed != 0) continue;
    const SimTime from =
        std::max(spec.tcp[t].start_us, spec.media.empty() ? 0 : spec.media[0].start_us) + 5'000'000;
    const SimTime to = std::min({spec.tcp[t].stop_us, spec.duration_us,
                                 spec.media.empty() ? INT64_MAX : spec.media[0].stop_us});
    if (to <= from || run.media.empty()) continue;
    double media_bytes = 0, fair_bits = 0;
    for (SimTime x = from; x < to; x += 100'000) {
      fair_bits += fair_share_bps(spec, Direction::kForward, x) * 0.1;
    }
    media_bytes = received_bytes(run.logs[run.media_flow_ids[0]], from, to);
    cs.tcp_share_ratio = fair_bits > 0 ? media_bytes * 8 / fair_bits : kNaN;
    cs.tcp_bps = received_bytes(run.logs[run.tcp_flow_ids[t]], from, to) * 8e6 /
                 static_cast<double>(to - from);
    break;
  }
  return cs;
}

std::string summary_header() {
  return "policy                    PSNR  cPSNR     R  loss%  q95c   ret  fair5s worst  spread  "
         "tcpshare tcpkbps  q95s";
}

std::string summary_row(const std::string& label, const CaseSummary& s) {
  double r = 0;
  for (const auto& f : s.flows) {
    r += f.rate / static_cast<double>(s.flows.size());
  }
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%-24s %6.2f %6.2f %5.3f %6.2f %5.0f %5d  %6.2f %5.2f %6.2f  %8.2f %7.0f %5.0f",
                label.c_str(), s.psnr_db, s.psnr_congested_db, r, 100 * s.loss,
                s.queue_p95_congested_ms, s.return_blocks, s.fair_windows, s.worst_ratio,
                s.psnr_spread_db, s.tcp_share_ratio, s.tcp_bps / 1000, s.queue_p95_settled_ms);
  return buf;
}

}  // namespace predrop::sim

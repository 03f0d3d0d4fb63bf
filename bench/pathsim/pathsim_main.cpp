// predrop-pathsim: the rate policies on simulated paths (predrop::sim), for judging a policy on
// the whole RFC 8867 suite with repeats in seconds before the real bed (bench/README.md, "The
// path simulator"). Two commands:
//   predrop-pathsim clip-table CLIP.mp4 OUT.csv      the server's packetization of a clip
//   predrop-pathsim run --clip-table T.csv --policy P.toml... [--case NAME...] [--seeds N]
// Policies are the bed's policy files (bench/testbed/policies/*.toml: [control] and [discard]).
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "predrop/config/config.hpp"
#include "predrop/core/stage_report.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/sim/cases.hpp"
#include "predrop/sim/clip.hpp"
#include "predrop/sim/metrics.hpp"
#include "predrop/sim/scenario.hpp"
#include "predrop/wire/rtp.hpp"

namespace {

using namespace predrop;

int clip_table(const std::string& media_path, const std::string& out) {
  auto file = media::MediaFile::open(media_path);
  if (!file) {
    std::fprintf(stderr, "predrop-pathsim: %s\n", file.error().message.c_str());
    return 1;
  }
  const auto& m = **file;
  // The server's per-packet link overhead (StreamSession): RTP header with both extensions, the
  // default SRTP suite's tag, and the link's headers.
  const std::uint32_t overhead = static_cast<std::uint32_t>(
      wire::rtp_header_size(wire::RtpExtensionIds{1, 2}) +
      net::srtp_rtp_tag_size(wire::SrtpSuite::AesCm128HmacSha1_80) + core::kLinkOverheadBytes);
  sim::Clip clip;
  const auto packets = m.packets();
  const auto frames = m.frames();
  for (const auto& b : m.blocks()) {
    sim::ClipBlock cb;
    cb.duration_us = b.duration_us;
    for (std::uint32_t i = b.first_packet; i < b.first_packet + b.packet_count; ++i) {
      const auto& p = packets[i];
      const auto& f = frames[p.frame];
      sim::ClipPacket cp;
      cp.offset_us = p.send_offset_us;
      cp.bytes = p.payload_size + overhead;
      cp.importance = p.importance;
      cp.frame = p.frame - b.first_frame;
      cp.video = f.display_index >= 0;
      cp.reference = f.reference;
      cp.key = f.type == media::FrameType::kKey || f.type == media::FrameType::kIntra;
      cb.packets.push_back(cp);
    }
    sim::finish_block(cb);
    clip.blocks.push_back(std::move(cb));
  }
  auto st = sim::save_clip_table(clip, out);
  if (!st) {
    std::fprintf(stderr, "predrop-pathsim: %s\n", st.error().message.c_str());
    return 1;
  }
  std::printf("%zu blocks, %.0f kbit/s on the link\n", clip.blocks.size(),
              clip.mean_rate_bps() / 1000);
  return 0;
}

struct Policy {
  std::string name;
  core::PolicyConfig config;
  core::DiscardPolicy discard;
};

core::Result<Policy> load_policy(const std::string& path) {
  std::ifstream in(path);
  if (!in) return core::make_error("cannot read " + path);
  std::stringstream text;
  text << "[server]\nmode = \"stream\"\n[server.streams]\nx = \"/dev/null\"\n" << in.rdbuf();
  auto cfg = config::parse_config(text.str(), path);
  if (!cfg) return core::make_error(cfg.error().message);
  auto pc = config::make_policy_config(cfg->control);
  if (!pc) return core::make_error(pc.error().message);
  return Policy{std::filesystem::path(path).stem().string(), *pc, cfg->discard.policy};
}

double nan_mean(const std::vector<double>& v) {
  double s = 0;
  int n = 0;
  for (double x : v) {
    if (!std::isnan(x)) {
      s += x;
      ++n;
    }
  }
  return n ? s / n : std::nan("");
}

// Mean of several repeats' summaries (return_blocks: the worst, -1 if any never returned).
sim::CaseSummary average(const std::vector<sim::CaseSummary>& runs) {
  sim::CaseSummary m = runs.front();
  const auto avg = [&](auto field) {
    std::vector<double> v;
    for (const auto& r : runs)
      v.push_back(r.*field);
    return nan_mean(v);
  };
  m.psnr_db = avg(&sim::CaseSummary::psnr_db);
  m.psnr_congested_db = avg(&sim::CaseSummary::psnr_congested_db);
  m.queue_p95_congested_ms = avg(&sim::CaseSummary::queue_p95_congested_ms);
  m.queue_p95_settled_ms = avg(&sim::CaseSummary::queue_p95_settled_ms);
  m.loss = avg(&sim::CaseSummary::loss);
  m.fair_windows = avg(&sim::CaseSummary::fair_windows);
  m.worst_ratio = avg(&sim::CaseSummary::worst_ratio);
  m.psnr_spread_db = avg(&sim::CaseSummary::psnr_spread_db);
  m.tcp_share_ratio = avg(&sim::CaseSummary::tcp_share_ratio);
  m.tcp_bps = avg(&sim::CaseSummary::tcp_bps);
  for (const auto& r : runs) {
    if (r.return_blocks < 0 || m.return_blocks < 0) {
      m.return_blocks = -1;
    } else {
      m.return_blocks = std::max(m.return_blocks, r.return_blocks);
    }
  }
  for (std::size_t f = 0; f < m.flows.size(); ++f) {
    double r = 0;
    for (const auto& x : runs)
      r += x.flows[f].rate / static_cast<double>(runs.size());
    m.flows[f].rate = r;
  }
  return m;
}

void write_packets(const std::string& dir, const sim::CaseRun& run, unsigned seed) {
  std::ofstream out(dir + "/" + run.case_name + "." + run.policy_name + "." + std::to_string(seed) +
                    ".packets.csv");
  out << "flow,name,arrived_s,queue_ms,bytes,dropped\n";
  for (std::size_t f = 0; f < run.logs.size(); ++f) {
    for (const auto& r : run.logs[f]) {
      out << f << ',' << run.flow_names[f] << ',' << static_cast<double>(r.arrived_us) / 1e6 << ','
          << static_cast<double>(r.queue_us) / 1000.0 << ',' << r.bytes << ',' << r.dropped << '\n';
    }
  }
}

void write_blocks(const std::string& dir, const sim::CaseRun& run, unsigned seed) {
  std::filesystem::create_directories(dir);
  write_packets(dir, run, seed);
  std::ofstream out(dir + "/" + run.case_name + "." + run.policy_name + "." + std::to_string(seed) +
                    ".csv");
  out << "flow,stage,start_s,planned_r,r,packets,discarded,lost,psnr_db,L_ms,queue_ms,reported,"
         "missing,estimate_kbps,qmax_ms,reason\n";
  for (std::size_t f = 0; f < run.media.size(); ++f) {
    const auto& log = run.logs[run.media_flow_ids[f]];
    for (const auto& b : run.media[f]) {
      double qmax = 0;
      for (const auto& r : log) {
        if (r.arrived_us >= b.start_us && r.arrived_us < b.end_us && !r.dropped) {
          qmax = std::max(qmax, static_cast<double>(r.queue_us) / 1000.0);
        }
      }
      out << f << ',' << b.stage << ',' << static_cast<double>(b.start_us) / 1e6 << ','
          << b.planned_rate << ',' << b.rate << ',' << b.packets << ',' << b.discarded << ','
          << b.lost << ',' << b.psnr_db << ',' << b.reception_period_us / 1000 << ','
          << b.queue_us / 1000 << ',' << b.reported << ',' << b.missing << ','
          << (std::isnan(b.estimate) ? 0.0 : b.estimate * 8000) << ',' << qmax << ",\"" << b.reason
          << "\"\n";
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"predrop-pathsim: rate policies on simulated RFC 8867 paths"};
  app.require_subcommand(1);
  std::string media_path, table_out;
  auto* table =
      app.add_subcommand("clip-table", "write a clip's packet table (the server's packetization)");
  table->add_option("clip", media_path, "media file")->required();
  table->add_option("out", table_out, "CSV to write")->required();

  auto* run = app.add_subcommand("run", "run cases with policies and print the summary tables");
  std::string table_path, csv_dir;
  std::vector<std::string> policies, case_names;
  unsigned seeds = 3;
  double one_way_ms = 50;
  bool list = false;
  sim::QualityModel quality;
  run->add_option("--clip-table", table_path,
                  "clip table (clip-table's output); default: synthetic");
  run->add_option("--policy", policies, "policy file(s) ([control] and [discard])")->required();
  run->add_option("--case", case_names, "case name(s); default: all");
  run->add_option("--seeds", seeds, "repeats per case and policy (start jitter, clip offset)");
  run->add_option("--one-way-ms", one_way_ms, "default one-way propagation delay");
  run->add_option("--blocks-csv", csv_dir, "write every run's per-block table here");
  run->add_flag("--list", list, "list the cases and exit");
  double alert_ms = 0;
  run->add_option("--alert-ms", alert_ms,
                  "experiment: receivers send an interim alert when a packet queued this long "
                  "(0 = off, the server's behaviour)");
  bool coupled = false;
  run->add_flag("--coupled", coupled,
                "experiment: couple each case's media sessions (core::SharedBottleneck)");
  run->add_option("--mse-skipped", quality.mse_skipped, "P model: MSE of a picture not shown");
  run->add_option("--mse-corrupt", quality.mse_corrupt, "P model: MSE of a damaged picture");
  CLI11_PARSE(app, argc, argv);

  if (*table) return clip_table(media_path, table_out);

  std::shared_ptr<const sim::Clip> clip;
  if (!table_path.empty()) {
    auto c = sim::load_clip_table(table_path);
    if (!c) {
      std::fprintf(stderr, "predrop-pathsim: %s\n", c.error().message.c_str());
      return 1;
    }
    clip = std::make_shared<sim::Clip>(std::move(*c));
  } else {
    sim::SyntheticClip spec;
    spec.blocks = 90;
    spec.scale = {1.0, 1.2, 0.9, 1.1, 0.8};
    clip = std::make_shared<sim::Clip>(sim::make_synthetic_clip(spec));
  }
  sim::CaseOptions co;
  co.stream_bps = clip->mean_rate_bps();
  co.scale = co.stream_bps / 1.5e6;
  co.one_way_us = static_cast<sim::SimTime>(one_way_ms * 1000);
  auto cases = sim::all_cases(co);
  if (list) {
    for (const auto& c : cases)
      std::printf("%s\n", c.name.c_str());
    return 0;
  }
  std::vector<Policy> pols;
  for (const auto& p : policies) {
    auto x = load_policy(p);
    if (!x) {
      std::fprintf(stderr, "predrop-pathsim: %s\n", x.error().message.c_str());
      return 2;
    }
    pols.push_back(*x);
  }
  std::printf("clip %.0f kbit/s, RFC capacities x %.3f, one-way %.0f ms, %u seeds\n",
              clip->mean_rate_bps() / 1000, co.scale, one_way_ms, seeds);
  for (const auto& c : cases) {
    if (!case_names.empty() &&
        std::find(case_names.begin(), case_names.end(), c.name) == case_names.end()) {
      continue;
    }
    std::printf("\n== %s\n%s\n", c.name.c_str(), sim::summary_header().c_str());
    for (const auto& p : pols) {
      std::vector<sim::CaseSummary> runs;
      for (unsigned s = 1; s <= seeds; ++s) {
        sim::RunOptions o;
        o.policy = p.config;
        o.policy_name = p.name;
        o.discard = p.discard;
        o.clip = clip;
        o.seed = s;
        o.quality = quality;
        o.alert_queue_us = static_cast<sim::SimTime>(alert_ms * 1000);
        o.coupled = coupled;
        o.start_jitter_us = s > 1 ? 1'000'000 : 0;
        o.random_clip_offset = s > 1;
        auto r = sim::run_case(c, o);
        if (!csv_dir.empty()) write_blocks(csv_dir, r, s);
        runs.push_back(sim::summarize(c, r));
      }
      std::printf("%s\n", sim::summary_row(p.name, average(runs)).c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}

// Several client threads (predrop/load/shards.hpp): how a scenario is shared and how the shards'
// summaries merge into the whole run's.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "predrop/load/shards.hpp"

namespace predrop::load {
namespace {

LoadScenario whole() {
  LoadScenario s;
  s.url = "rtsp://127.0.0.1:8554/sample";
  s.metrics = "127.0.0.1:9464";
  s.csv = "intervals.csv";
  s.summary_csv = "summary.csv";
  s.clients = 1001;
  s.max_joins = 5000;
  s.churn_band = 10;
  s.join_per_s = 3;
  s.leave_per_s = 1.5;
  s.full_clients = 2;
  s.threads = 4;
  s.seed = 7;
  s.groups.push_back(LoadGroup{});
  return s;
}

TEST(LoadShards, ClientsAndChurnSplitEvenlyAndTheServerIsMeasuredOnce) {
  const LoadScenario s = whole();
  std::uint32_t clients = 0, joins = 0, band = 0, full = 0;
  double join_rate = 0, leave_rate = 0;
  for (std::uint32_t i = 0; i < 4; ++i) {
    const LoadScenario p = shard_of(s, i, 4);
    SCOPED_TRACE(i);
    EXPECT_EQ(p.threads, 1u);
    EXPECT_EQ(p.clients, i == 0 ? 251u : 250u);  // 1001 = 251 + 3 x 250
    EXPECT_EQ(p.seed, 7u + i);
    EXPECT_TRUE(p.summary_csv.empty()) << "the merged row is written once, by main";
    // Only the first shard polls /metrics, reads the server's CPU, writes intervals, decodes.
    EXPECT_EQ(p.metrics.empty(), i != 0);
    EXPECT_EQ(p.csv.empty(), i != 0);
    EXPECT_EQ(p.server_pid, i == 0 ? 0 : -1);
    clients += p.clients;
    joins += p.max_joins;
    band += p.churn_band;
    full += p.full_clients;
    join_rate += p.join_per_s;
    leave_rate += p.leave_per_s;
  }
  EXPECT_EQ(clients, 1001u);
  EXPECT_EQ(joins, 5000u);
  EXPECT_EQ(band, 10u);
  EXPECT_EQ(full, 2u);
  EXPECT_DOUBLE_EQ(join_rate, 3.0);
  EXPECT_DOUBLE_EQ(leave_rate, 1.5);
}

TEST(LoadShards, OneThreadIsTheScenarioItself) {
  const LoadScenario s = whole();
  const LoadScenario p = shard_of(s, 0, 1);
  EXPECT_EQ(p.clients, s.clients);
  EXPECT_EQ(p.summary_csv, s.summary_csv);
  EXPECT_EQ(p.metrics, s.metrics);
}

TEST(LoadShards, SummariesAddAndPercentilesComeFromEverySample) {
  LoadSummary a, b;
  a.joins = 10;
  b.joins = 12;
  a.packets_per_s = 1000;
  b.packets_per_s = 3000;
  a.srtp_verified = 5;
  b.srtp_verified = 6;
  b.srtp_failures = 1;
  a.errors["timeout"] = 1;
  b.errors["timeout"] = 2;
  b.errors["SETUP 454"] = 1;
  a.full_blocks = 4;
  a.full_psnr_mean = 40;
  // Shard 0 measured the server: 40 % of a core against the server's own 4000 pkt/s.
  a.server_cpu_pct = 40;
  a.server_pkt_per_s = 4000;
  for (int v = 1; v <= 50; ++v)
    a.samples.l_ms.push_back(v);
  for (int v = 51; v <= 100; ++v)
    b.samples.l_ms.push_back(v);
  a.l_ms = percentiles(a.samples.l_ms);  // p50 of its own half: 25
  const LoadSummary m = merge_summaries({a, b});
  EXPECT_EQ(m.joins, 22u);
  EXPECT_DOUBLE_EQ(m.packets_per_s, 4000);
  EXPECT_EQ(m.srtp_verified, 11u);
  EXPECT_EQ(m.srtp_failures, 1u);
  EXPECT_EQ(m.errors.at("timeout"), 3u);
  EXPECT_EQ(m.errors.at("SETUP 454"), 1u);
  EXPECT_EQ(m.full_blocks, 4u);
  EXPECT_DOUBLE_EQ(m.full_psnr_mean, 40);
  EXPECT_EQ(m.l_ms.count, 100u);
  EXPECT_EQ(m.l_ms.p50, 50);
  EXPECT_EQ(m.l_ms.max, 100);
  EXPECT_DOUBLE_EQ(m.server_cpu_pct, 40);
  EXPECT_DOUBLE_EQ(m.server_us_per_packet, 100.0);  // 0.4 s of CPU per s / 4000 packets
}

}  // namespace
}  // namespace predrop::load

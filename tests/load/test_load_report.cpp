// The load tester's report pieces: percentiles, the summary CSV (header once), the per-interval
// CSV and the progress line's throttling off a terminal.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "predrop/load/csv_output.hpp"
#include "predrop/load/progress.hpp"
#include "predrop/load/summary.hpp"

namespace predrop::load {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string temp_path(const char* name) {
  return ::testing::TempDir() + "/predrop_load_" + name + "_" +
         std::to_string(::testing::UnitTest::GetInstance()->random_seed());
}

std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s)
    n += c == '\n' ? 1 : 0;
  return n;
}

TEST(Percentiles, NearestRankAndEmpty) {
  std::vector<double> v{5, 1, 4, 2, 3, 6, 7, 8, 9, 10};
  const Percentiles p = percentiles(v);
  EXPECT_EQ(p.count, 10u);
  EXPECT_EQ(p.p50, 5);
  EXPECT_EQ(p.p90, 9);
  EXPECT_EQ(p.p99, 10);
  EXPECT_EQ(p.max, 10);
  EXPECT_DOUBLE_EQ(p.mean, 5.5);
  std::vector<double> none;
  const Percentiles e = percentiles(none);
  EXPECT_EQ(e.count, 0u);
  EXPECT_TRUE(std::isnan(e.p50) && std::isnan(e.mean));
}

TEST(SummaryCsv, HeaderOnceThenOneRowPerRun) {
  const std::string path = temp_path("summary.csv");
  std::remove(path.c_str());
  LoadSummary s;
  s.label = "run";
  s.errors = {{"timeout", 2}, {"SETUP 454", 1}};
  EXPECT_EQ(total_errors(s), 3u);
  ASSERT_TRUE(append_summary_csv(path, s).ok());
  ASSERT_TRUE(append_summary_csv(path, s).ok());
  const std::string text = slurp(path);
  EXPECT_EQ(text.rfind("label,hold_s,joins,", 0), 0u);
  EXPECT_EQ(count_lines(text), 3u);
  EXPECT_NE(text.find("\nrun,"), std::string::npos);
  std::remove(path.c_str());
  EXPECT_FALSE(append_summary_csv("/nonexistent-dir/x.csv", s).ok());
}

TEST(IntervalCsv, HeaderAndRows) {
  const std::string path = temp_path("interval.csv");
  {
    IntervalCsv csv;
    csv.write(ProgressSample{});  // not open: nothing happens
    ASSERT_TRUE(csv.open(path).ok());
    ProgressSample p;
    p.t_s = 1.5;
    p.phase = "hold";
    p.playing = 3;
    p.live = 4;
    p.rx_pkt_per_s = 1000;
    p.errors = 2;
    csv.write(p);
  }
  const std::string text = slurp(path);
  EXPECT_EQ(text,
            "t_s,phase,playing,live,rx_pkt_per_s,l_p50_ms,l_p99_ms,server_cpu_pct,reports,"
            "refused_453,refused_503,errors\n"
            "1.50,hold,3,4,1000,0.000,0.000,-1.0,0,0,0,2\n");
  std::remove(path.c_str());
}

TEST(ProgressLine, OffATerminalAtMostEveryFiveSeconds) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressLine line(f);
  ProgressSample p;
  p.phase = "ramp";
  p.clients = 10;
  line.show(p, 10'000'000);
  line.show(p, 12'000'000);  // too soon
  line.show(p, 15'000'000);
  line.finish();  // not a terminal: no extra line end
  std::fflush(f);
  std::rewind(f);
  std::string text;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f))
    text += static_cast<char>(c);
  std::fclose(f);
  EXPECT_EQ(count_lines(text), 2u) << text;
  EXPECT_NE(text.find("sessions    0/10"), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
  ProgressLine quiet(nullptr);
  quiet.show(p, 0);  // no output, no crash
  quiet.finish();
}

}  // namespace
}  // namespace predrop::load

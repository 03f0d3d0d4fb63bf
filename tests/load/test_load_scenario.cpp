// The load tester's scenario parser (strict: unknown keys and bad values are errors, with the key
// in the message) and its loss-derived quality figure.
#include <gtest/gtest.h>

#include <cmath>

#include "predrop/load/client.hpp"
#include "predrop/load/scenario.hpp"

namespace predrop::load {
namespace {

TEST(LoadScenario, FullExampleParses) {
  auto s = parse_load_scenario(R"(
[server]
url = "rtsp://127.0.0.1:8554/sample"
pid = 1234
metrics = "127.0.0.1:9464"
[population]
clients = 50
ramp_s = 5
hold_s = 30.5
drain_s = 2
max_joins = 500
[churn]
join_per_s = 2.0
leave_per_s = 1.5
band = 5
[[group]]
name = "fb"
weight = 0.8
[[group]]
name = "player"
weight = 0.2
feedback = false
srtp_verify_every = 16
video_only = true
[full]
clients = 1
reference = "ref.mp4"
[report]
summary_csv = "s.csv"
label = "x"
)",
                               "t.toml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->url, "rtsp://127.0.0.1:8554/sample");
  EXPECT_EQ(s->server_pid, 1234);
  EXPECT_EQ(s->clients, 50u);
  EXPECT_DOUBLE_EQ(s->hold_s, 30.5);
  EXPECT_DOUBLE_EQ(s->leave_per_s, 1.5);
  EXPECT_EQ(s->churn_band, 5u);
  ASSERT_EQ(s->groups.size(), 2u);
  EXPECT_EQ(s->groups[1].name, "player");
  EXPECT_FALSE(s->groups[1].feedback);
  EXPECT_EQ(s->groups[1].srtp_verify_every, 16u);
  EXPECT_TRUE(s->groups[1].video_only);
  EXPECT_TRUE(s->groups[0].feedback);
  EXPECT_EQ(s->full_clients, 1u);
  EXPECT_EQ(s->label, "x");
}

TEST(LoadScenario, DefaultsNeedOnlyTheUrl) {
  auto s = parse_load_scenario("[server]\nurl = \"rtsp://127.0.0.1:1/a\"\n", "t");
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->groups.size(), 1u);
  EXPECT_TRUE(s->groups[0].feedback);
  EXPECT_EQ(s->groups[0].srtp_verify_every, 1u);
}

TEST(LoadScenario, ErrorsNameTheKey) {
  struct Case {
    const char* toml;
    const char* expect;
  };
  const Case cases[] = {
      {"[server]\nurl = \"rtsp://a/b\"\nport = 1\n", "server.port: unknown key"},
      {"[server]\nurl = \"rtsp://a/b\"\n[populaton]\n", "populaton: unknown key"},
      {"[server]\nurl = \"rtsp://a/b\"\n[population]\nclients = 0\n", "population.clients"},
      {"[server]\nurl = \"rtsp://a/b\"\n[population]\nclients = 1.5\n", "whole number"},
      {"[server]\nurl = \"rtsp://a/b\"\n[population]\nramp_s = \"5\"\n", "must be a number"},
      {"[server]\nurl = \"rtsp://a/b\"\n[[group]]\nfeedback = 1\n", "group[0].feedback"},
      {"[server]\nurl = \"rtsp://a/b\"\n[[group]]\nweight = 0\n", "weights"},
      {"[server]\nurl = \"rtsp://a/b\"\n[full]\nclients = 1\n", "full.reference"},
      {"[population]\nclients = 3\n", "server.url: missing"},
      {"[server]\nurl = \"rtsp://a/b\"\n[report]\nconcealed_db = 70\n", "concealed_db"},
      {"[server\n", "t:"},
  };
  for (const auto& c : cases) {
    auto s = parse_load_scenario(c.toml, "t");
    ASSERT_FALSE(s.ok()) << c.toml;
    EXPECT_NE(s.error().message.find(c.expect), std::string::npos)
        << c.toml << " -> " << s.error().message;
  }
}

TEST(LoadQuality, FormulaPoints) {
  // Lossless: the cap; total loss: the concealed figure; one decade of loss ~ 10 dB in between.
  EXPECT_NEAR(loss_quality_db(0.0, 60, 20), 60.0, 1e-9);
  EXPECT_NEAR(loss_quality_db(1.0, 60, 20), 20.0, 0.01);
  EXPECT_NEAR(loss_quality_db(0.01, 60, 20), 40.0, 0.05);
  EXPECT_NEAR(loss_quality_db(0.1, 60, 20), 30.0, 0.01);
  EXPECT_NEAR(loss_quality_db(0.001, 60, 20), 49.59, 0.01);
  // Monotonic and clamped.
  double last = 1e9;
  for (double l = 0; l <= 1.0; l += 0.01) {
    const double q = loss_quality_db(l, 60, 20);
    EXPECT_LE(q, last);
    last = q;
  }
  EXPECT_EQ(loss_quality_db(-1, 60, 20), loss_quality_db(0, 60, 20));
  EXPECT_EQ(loss_quality_db(2, 60, 20), loss_quality_db(1, 60, 20));
}

}  // namespace
}  // namespace predrop::load

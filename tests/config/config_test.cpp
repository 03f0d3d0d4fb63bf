// Server configuration (config/include/predrop/config/config.hpp).
#include "predrop/config/config.hpp"
#include "config_test_util.hpp"

#include <gtest/gtest.h>

#include <string>

namespace predrop::config {
namespace {

using test::expect_error;
using test::stream_with;

const std::string kConfigs = std::string(PREDROP_SOURCE_DIR) + "/configs/";

TEST(Config, ExampleStreamConfigLoads) {
  const auto r = load_config_file(kConfigs + "stream.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& c = *r;
  EXPECT_EQ(c.server.mode, ServerMode::kStream);
  EXPECT_EQ(c.server.rtsp_listen, (Endpoint{"0.0.0.0", 8554}));
  ASSERT_EQ(c.server.streams.size(), 1u);
  EXPECT_EQ(c.server.streams[0], (StreamEntry{"sample", "media/sample.mp4"}));
  EXPECT_EQ(c.server.srtp, wire::SrtpSuite::AesCm128HmacSha1_80);
  EXPECT_EQ(c.server.metrics_listen, (Endpoint{"127.0.0.1", 9464}));
  EXPECT_EQ(c.blocks.duration_ms, 1000u);
  EXPECT_FALSE(c.blocks.bytes);
  EXPECT_EQ(c.control.policy, "capacity") << "the shipped default is the best policy (issue 25)";
  EXPECT_EQ(c.control.rmax, 0.9) << "the rmax every figure of capacity was measured with";
  EXPECT_EQ(c.control.t1, (ThresholdSetting{0.5, false}));
  EXPECT_EQ(c.control.t2, (ThresholdSetting{0.05, true}));
  EXPECT_EQ(c.discard.policy, core::DiscardPolicy::kPriority);
  EXPECT_TRUE(validate_config(c).ok());
}

TEST(Config, ExampleDdlConfigLoads) {
  const auto r = load_config_file(kConfigs + "ddl.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& c = *r;
  EXPECT_EQ(c.server.mode, ServerMode::kDdl);
  EXPECT_TRUE(c.server.streams.empty());
  EXPECT_EQ(c.server.srtp, wire::SrtpSuite::AeadAes128Gcm);
  EXPECT_EQ(c.ddl.listen, (Endpoint{"0.0.0.0", 9000}));
  EXPECT_EQ(c.ddl.workers, 4u);
  EXPECT_EQ(c.ddl.stage_deadline_ms, 500u);
  EXPECT_EQ(c.ddl.missing_chunk_fill, MissingChunkFill::kZero);
  EXPECT_EQ(c.control.policy, "history");
  EXPECT_EQ(c.control.k, 3u);
  EXPECT_EQ(c.control.missing_report, core::MissingReportAction::kIncrease);
  EXPECT_EQ(c.control.t1, (ThresholdSetting{0.01, false}));
  EXPECT_DOUBLE_EQ(c.control.t2.value, 0.10);
}

TEST(Config, DefaultsAreValidAndMinimalFileWorks) {
  ServerConfig c;
  c.server.streams.push_back({"x", "x.mp4"});
  EXPECT_TRUE(validate_config(c).ok()) << validate_config(c).error().message;
  const auto r = parse_config(stream_with(""));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->server.session_timeout_s, 60u);
  EXPECT_EQ(r->control.rmax, 0.5);
  EXPECT_EQ(r->blocks.pacing_quantum_ms, 5u);
  EXPECT_FALSE(r->server.metrics_listen);
}

TEST(Config, BlocksByBytesAndOtherForms) {
  const auto r = parse_config(stream_with(
      "[blocks]\nbytes = 250000\npacing = \"burst\"\n[control]\nt1 = \"5%\"\nt2 = \"2ms\"\n"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->blocks.duration_ms);
  EXPECT_EQ(r->blocks.bytes, 250000u);
  EXPECT_EQ(r->blocks.pacing, Pacing::kBurst);
  EXPECT_EQ(r->control.t1, (ThresholdSetting{0.05, true}));
  const auto q = parse_config(stream_with("[blocks]\npacing_quantum_ms = 0\n"));
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->blocks.pacing_quantum_ms, 0u);
  EXPECT_EQ(r->control.t2, (ThresholdSetting{2000.0, false}));

  const auto d = parse_config(
      "[server]\nmode = \"ddl\"\n[ddl]\nstage_deadline_ms = \"adaptive\"\nlisten = \"[::1]:0\"\n");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_FALSE(d->ddl.stage_deadline_ms);
  EXPECT_EQ(d->ddl.listen, (Endpoint{"::1", 0}));
}

TEST(Config, ThresholdSyntax) {
  EXPECT_EQ(*parse_performance_threshold("0.5"), (ThresholdSetting{0.5, false}));
  EXPECT_EQ(*parse_performance_threshold("0.5dB"), (ThresholdSetting{0.5, false}));
  EXPECT_EQ(*parse_performance_threshold(" 1 db "), (ThresholdSetting{1.0, false}));
  EXPECT_EQ(*parse_performance_threshold("5%"), (ThresholdSetting{0.05, true}));
  EXPECT_EQ(*parse_delay_threshold("5%"), (ThresholdSetting{0.05, true}));
  EXPECT_EQ(*parse_delay_threshold("250us"), (ThresholdSetting{250.0, false}));
  EXPECT_EQ(*parse_delay_threshold("250\xc2\xb5s"), (ThresholdSetting{250.0, false}));
  EXPECT_EQ(*parse_delay_threshold("2.5ms"), (ThresholdSetting{2500.0, false}));
  EXPECT_EQ(*parse_delay_threshold("1s"), (ThresholdSetting{1e6, false}));
  for (const char* bad : {"", "-1", "x", "5%%", "nan", "inf", "1e999"}) {
    EXPECT_FALSE(parse_performance_threshold(bad).ok()) << bad;
    EXPECT_FALSE(parse_delay_threshold(bad).ok()) << bad;
  }
  EXPECT_FALSE(parse_delay_threshold("5").ok()) << "a bare string needs a unit";
  EXPECT_FALSE(parse_delay_threshold("5dB").ok());
}

TEST(Config, UnknownKeysAreNamedWithLineAndHint) {
  expect_error("[server]\nmax_sesions = 3\n", {"test.toml:2:1", "server.max_sesions", "unknown key",
                                               "did you mean server.max_sessions"});
  expect_error(stream_with("[control]\nrmx = 0.4\n"), {"control.rmx", "did you mean control.rmax"});
  expect_error(stream_with("[contrl]\nrmax = 0.4\n"), {"contrl", "did you mean [control]"});
  expect_error("top = 1\n" + stream_with(""), {"test.toml:1:1", "top", "unknown"});
}

TEST(Config, WrongTypesAreNamed) {
  expect_error(stream_with("[control]\nrmax = \"0.4\"\n"),
               {"test.toml:6:8", "control.rmax", "expected a number, got string"});
  expect_error(stream_with("[control]\nk = 1.5\n"),
               {"control.k", "expected an integer, got float"});
  expect_error(stream_with("[blocks]\npacing = 1\n"), {"blocks.pacing", "expected a string"});
  expect_error("[server]\nmode = 1\n", {"server.mode", "expected a string"});
  expect_error("server = 1\n", {"server", "expected a table"});
  expect_error(stream_with("[control]\nt2 = true\n"), {"control.t2", "got boolean"});
  expect_error("[server]\nmode = \"ddl\"\n[ddl]\nworker_egress_discard = \"yes\"\n",
               {"ddl.worker_egress_discard", "expected a boolean"});
  expect_error("[server]\nmode = \"stream\"\nstreams = [\"a\"]\n", {"server.streams", "got array"});
  expect_error("[server]\nmode = \"stream\"\n[server.streams]\na = 5\n",
               {"server.streams.a", "expected a string"});
}

TEST(Config, OutOfRangeValuesAreNamed) {
  expect_error(stream_with("[control]\nrp = 1.5\n"), {"control.rp", "[0, 1]", "1.5"});
  expect_error(stream_with("[control]\nr0 = -0.1\n"), {"control.r0", "[0, 1]"});
  expect_error(stream_with("[control]\nrp = 0.3\nrmax = 0.2\n"),
               {"test.toml:7:8", "control.rmax", "must be >= control.rp"});
  expect_error(stream_with("[control]\nk = 0\n"), {"control.k", "[1, 1024]"});
  expect_error(stream_with("[control]\nk = 3\n"), {"control.k", "use policy = \"history\""});
  expect_error(stream_with("[control]\nt1 = -1\n"), {"control.t1", ">= 0"});
  expect_error(stream_with("[control]\nt2 = \"fast\"\n"), {"control.t2", "\"fast\""});
  expect_error(stream_with("[control]\npsnr_cap_db = 0\n"), {"control.psnr_cap_db"});
  expect_error(stream_with("[blocks]\nduration_ms = 5\n"), {"blocks.duration_ms", "[10, 60000]"});
  expect_error(stream_with("[blocks]\nrtp_payload_bytes = 9000\n"), {"blocks.rtp_payload_bytes"});
  expect_error(stream_with("[blocks]\npacing_quantum_ms = 51\n"),
               {"blocks.pacing_quantum_ms", "[0, 50]"});
  expect_error(stream_with("[server.x]\n"), {"server.x", "unknown"});
  expect_error(
      "[server]\nmode = \"stream\"\nrtsp_listen = \"0.0.0.0:70000\"\n[server.streams]\na = \"b\"\n",
      {"server.rtsp_listen", "port"});
  expect_error("[server]\nmode = \"stream\"\nrtsp_listen = \"nohost\"\n", {"server.rtsp_listen"});
  expect_error("[server]\nmode = \"stream\"\nmax_sessions = 0\n", {"server.max_sessions"});
  expect_error("[server]\nmode = \"stream\"\nsession_timeout_s = 1\n",
               {"server.session_timeout_s"});
  expect_error("[server]\nmode = \"ddl\"\n[ddl]\nworkers = 0\n", {"ddl.workers"});
  expect_error("[server]\nmode = \"ddl\"\n[ddl]\nchunk_bytes = 10\n", {"ddl.chunk_bytes"});
  expect_error("[server]\nmode = \"ddl\"\n[ddl]\nstage_deadline_ms = \"soon\"\n",
               {"ddl.stage_deadline_ms", "adaptive"});
  expect_error("[server]\nmode = \"ddl\"\n[discard]\nseed = -1\n", {"discard.seed"});
}

TEST(Config, ContradictionsAreNamed) {
  expect_error(stream_with("[blocks]\nduration_ms = 500\nbytes = 100000\n"),
               {"test.toml:7:9", "blocks.bytes", "not both"});
  expect_error("[server]\nmode = \"stream\"\n", {"server.streams", "at least one stream"});
  expect_error("[server]\nmode = \"ddl\"\n[server.streams]\na = \"b\"\n",
               {"server.streams", "only valid with server.mode = \"stream\""});
  expect_error("[server]\nmode = \"ddl\"\nrtsp_listen = \"0.0.0.0:1\"\n",
               {"server.rtsp_listen", "stream"});
  expect_error("[server]\nmode = \"ddl\"\n[blocks]\nduration_ms = 100\n", {"blocks", "stream"});
  expect_error(stream_with("[ddl]\nworkers = 2\n"),
               {"ddl", "only valid with server.mode = \"ddl\""});
}

TEST(Config, BadNamesAreNamed) {
  expect_error("[server]\nmode = \"both\"\n", {"server.mode", "\"stream\", \"ddl\"", "\"both\""});
  expect_error(stream_with("[control]\npolicy = \"smart\"\n"),
               {"control.policy", "\"basic\", \"history\", \"fixed\", \"adaptive\"", "\"smart\""});
  expect_error(stream_with("[discard]\npolicy = \"lifo\"\n"), {"discard.policy", "\"uniform\""});
  expect_error("[server]\nmode = \"stream\"\nsrtp = \"AES_256\"\n",
               {"server.srtp", "AEAD_AES_128_GCM"});
  expect_error("[server]\nmode = \"stream\"\nlog_level = \"loud\"\n", {"server.log_level"});
  expect_error("[server]\nmode = \"stream\"\n[server.streams]\n\"../x\" = \"a\"\n",
               {"server.streams", "stream names"});
  expect_error(stream_with("[control]\nmissing_report = \"panic\"\n"), {"control.missing_report"});
}

TEST(Config, SyntaxErrorsCarryTheLine) {
  expect_error("[server]\nmode = \"stream\nx", {"test.toml:2:", "TOML syntax"});
  expect_error("[server]\n[server]\n", {"test.toml:2:", "TOML syntax"});
}

TEST(Config, ValidateConfigNamesKeysOfCodeBuiltConfigs) {
  ServerConfig c;
  c.server.streams.push_back({"x", "x.mp4"});
  c.control.rmax = 0.01;
  auto s = validate_config(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "control.rmax: must be >= control.rp (0.01 < 0.05)");
  c = {};
  c.server.streams.push_back({"x", "x.mp4"});
  c.blocks.bytes = 100000;
  EXPECT_NE(validate_config(c).error().message.find("blocks.bytes"), std::string::npos);
  c.blocks.duration_ms.reset();
  EXPECT_TRUE(validate_config(c).ok());
  c.blocks.bytes.reset();
  EXPECT_NE(validate_config(c).error().message.find("blocks.duration_ms"), std::string::npos);
}

TEST(Config, EndpointSyntax) {
  EXPECT_EQ(*parse_endpoint("127.0.0.1:8554", false), (Endpoint{"127.0.0.1", 8554}));
  EXPECT_EQ(*parse_endpoint("[::]:0", true), (Endpoint{"::", 0}));
  EXPECT_EQ(to_string(Endpoint{"::1", 5}), "[::1]:5");
  EXPECT_EQ(to_string(Endpoint{"h", 5}), "h:5");
  for (const char* bad : {"", ":1", "h:", "h:x", "::1:5", "[::1]5", "h:0", "a b:1", "h:65536"}) {
    EXPECT_FALSE(parse_endpoint(bad, false).ok()) << bad;
  }
  EXPECT_FALSE(load_config_file("/nonexistent/predrop.toml").ok());
}

}  // namespace
}  // namespace predrop::config

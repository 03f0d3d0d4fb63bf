// [control] player_adaptation and [server] interleaved_queue_bytes (config/src/config.cpp,
// docs/rtsp.md "Adaptation from Receiver Reports", configs/README.md).
#include <gtest/gtest.h>

#include <string>

#include "config_test_util.hpp"
#include "predrop/config/config.hpp"

namespace predrop::config {
namespace {

using test::expect_error;
using test::stream_with;

TEST(PlayerConfig, Defaults) {
  const auto r = parse_config(stream_with(""), "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->control.player_adaptation, "rr");
  EXPECT_EQ(r->server.interleaved_queue_bytes, 256U * 1024U);
}

TEST(PlayerConfig, BothValuesOfTheSwitch) {
  for (const std::string v : {"rr", "fixed"}) {
    const auto r = parse_config(
        stream_with("[control]\nplayer_adaptation = \"" + v + "\"\nplayer_rate = 0.2\n"),
        "test.toml");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->control.player_adaptation, v);
    EXPECT_DOUBLE_EQ(r->control.player_rate, 0.2);
  }
}

TEST(PlayerConfig, BadSwitchIsNamed) {
  expect_error(stream_with("[control]\nplayer_adaptation = \"pdfb\"\n"),
               {"control.player_adaptation", "rr", "fixed", "pdfb", "test.toml"});
  expect_error(stream_with("[control]\nplayer_adaptation = 1\n"), {"control.player_adaptation"});
}

TEST(PlayerConfig, BrowserPolicy) {
  EXPECT_EQ(parse_config(stream_with(""), "test.toml")->control.browser_policy, "player");
  const auto r = parse_config(stream_with("[control]\nbrowser_policy = \"client\"\n"), "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->control.browser_policy, "client");
  expect_error(stream_with("[control]\nbrowser_policy = \"page\"\n"),
               {"control.browser_policy", "player", "client", "page", "test.toml"});
}

TEST(PlayerConfig, BrowserAlertMs) {
  EXPECT_EQ(parse_config(stream_with(""), "test.toml")->control.browser_alert_ms, 80U);
  const auto r = parse_config(stream_with("[control]\nbrowser_alert_ms = 0\n"), "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->control.browser_alert_ms, 0U) << "0 turns it off";
  expect_error(stream_with("[control]\nbrowser_alert_ms = 1001\n"),
               {"control.browser_alert_ms", "test.toml"});
  expect_error(stream_with("[control]\nbrowser_alert_ms = -5\n"), {"control.browser_alert_ms"});
}

TEST(PlayerConfig, BrowserStartRate) {
  EXPECT_EQ(parse_config(stream_with(""), "test.toml")->control.browser_start_rate, 0.5);
  const auto r = parse_config(stream_with("[control]\nbrowser_start_rate = 0\n"), "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->control.browser_start_rate, 0.0) << "0 turns it off";
  expect_error(stream_with("[control]\nbrowser_start_rate = 1.5\n"),
               {"control.browser_start_rate", "test.toml"});
  expect_error(stream_with("[control]\nbrowser_start_rate = -0.1\n"),
               {"control.browser_start_rate"});
}

TEST(PlayerConfig, BrowserRepaidBurstBytes) {
  EXPECT_EQ(parse_config(stream_with(""), "test.toml")->control.browser_repaid_burst_bytes, 8000U);
  const auto r =
      parse_config(stream_with("[control]\nbrowser_repaid_burst_bytes = 0\n"), "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->control.browser_repaid_burst_bytes, 0U) << "0 leaves the policy's own setting";
  expect_error(stream_with("[control]\nbrowser_repaid_burst_bytes = 1000001\n"),
               {"control.browser_repaid_burst_bytes", "test.toml"});
  expect_error(stream_with("[control]\nbrowser_repaid_burst_bytes = -1\n"),
               {"control.browser_repaid_burst_bytes"});
}

TEST(PlayerConfig, InterleavedQueueBytes) {
  const auto r = parse_config(stream_with("", "interleaved_queue_bytes = 65536\n"), "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->server.interleaved_queue_bytes, 65536U);
  const auto off = parse_config(stream_with("", "interleaved_queue_bytes = 0\n"), "test.toml");
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ(off->server.interleaved_queue_bytes, 0U);
  expect_error(stream_with("", "interleaved_queue_bytes = -1\n"),
               {"server.interleaved_queue_bytes"});
  expect_error(stream_with("", "interleaved_queue_bytes = 67108865\n"),
               {"server.interleaved_queue_bytes"});
  expect_error(stream_with("", "interleaved_queue_bytes = \"big\"\n"),
               {"server.interleaved_queue_bytes"});
  expect_error("[server]\nmode = \"ddl\"\ninterleaved_queue_bytes = 1024\n",
               {"server.interleaved_queue_bytes"});
}

}  // namespace
}  // namespace predrop::config

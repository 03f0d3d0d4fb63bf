// Keys of issue 25: the "adaptive" policy's tuning in [control.adaptive] and the control API's
// server.api_token (config/src/config.cpp, configs/README.md).
#include <gtest/gtest.h>

#include <string>

#include "config_test_util.hpp"
#include "predrop/config/config.hpp"
#include "predrop/core/adaptive_policy.hpp"

namespace predrop::config {
namespace {

using test::expect_error;
using test::stream_with;

TEST(AdaptiveConfig, EveryTuningKeyReachesThePolicy) {
  const auto r = parse_config(stream_with("[control]\npolicy = \"adaptive\"\nrmax = 0.7\n"
                                          "[control.adaptive]\nloss_threshold = 0.05\n"
                                          "clean_loss = 0.01\nmargin = 0.9\ndrain_margin = 0.8\n"
                                          "queue_high_ms = 40\nqueue_low_ms = 12\n"
                                          "stretch_min_ms = 4\nbase_window = 20\n"
                                          "hold_stages = 2\nmax_hold_stages = 8\n"
                                          "pulse_rate = 0.1\ncreep_step = 0.03\n"
                                          "creep_queue_ms = 5\nquality_floor = 30\n"),
                              "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto p = make_policy_config(r->control);
  ASSERT_TRUE(p.ok()) << p.error().message;
  const core::AdaptiveParams& a = p->adaptive;
  EXPECT_DOUBLE_EQ(a.rmax, 0.7);
  EXPECT_DOUBLE_EQ(a.loss_threshold, 0.05);
  EXPECT_DOUBLE_EQ(a.clean_loss, 0.01);
  EXPECT_DOUBLE_EQ(a.margin, 0.9);
  EXPECT_DOUBLE_EQ(a.drain_margin, 0.8);
  EXPECT_DOUBLE_EQ(a.queue_high_us, 40'000);
  EXPECT_DOUBLE_EQ(a.queue_low_us, 12'000);
  EXPECT_DOUBLE_EQ(a.stretch_min_us, 4'000);
  EXPECT_EQ(a.base_window, 20u);
  EXPECT_EQ(a.hold_stages, 2u);
  EXPECT_EQ(a.max_hold_stages, 8u);
  EXPECT_DOUBLE_EQ(a.pulse_rate, 0.1);
  EXPECT_DOUBLE_EQ(a.creep_step, 0.03);
  EXPECT_DOUBLE_EQ(a.creep_queue_us, 5'000);
  EXPECT_DOUBLE_EQ(a.quality_floor, 30.0);
  auto c = core::make_rate_controller(*p);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ((*c)->name(), "adaptive");
}

TEST(AdaptiveConfig, DefaultsAreTheCores) {
  const auto r = parse_config(stream_with("[control]\npolicy = \"adaptive\"\n"), "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto p = make_policy_config(r->control);
  ASSERT_TRUE(p.ok()) << p.error().message;
  const core::AdaptiveParams d;
  EXPECT_DOUBLE_EQ(p->adaptive.loss_threshold, d.loss_threshold);
  EXPECT_DOUBLE_EQ(p->adaptive.margin, d.margin);
  EXPECT_DOUBLE_EQ(p->adaptive.drain_margin, d.drain_margin);
  EXPECT_DOUBLE_EQ(p->adaptive.queue_high_us, d.queue_high_us);
  EXPECT_DOUBLE_EQ(p->adaptive.queue_low_us, d.queue_low_us);
  EXPECT_DOUBLE_EQ(p->adaptive.stretch_min_us, d.stretch_min_us);
  EXPECT_EQ(p->adaptive.base_window, d.base_window);
  EXPECT_EQ(p->adaptive.hold_stages, d.hold_stages);
  EXPECT_EQ(p->adaptive.max_hold_stages, d.max_hold_stages);
  EXPECT_DOUBLE_EQ(p->adaptive.creep_step, d.creep_step);
  EXPECT_DOUBLE_EQ(p->adaptive.creep_queue_us, d.creep_queue_us);
  EXPECT_EQ(p->adaptive.quality_floor, d.quality_floor);
}

TEST(AdaptiveConfig, BadValuesAreNamed) {
  expect_error(stream_with("[control.adaptive]\nmargin = 1.5\n"),
               {"control.adaptive.margin", "1.5"});
  expect_error(stream_with("[control.adaptive]\nmargn = 0.9\n"),
               {"control.adaptive.margn", "unknown key", "control.adaptive.margin"});
  expect_error(stream_with("[control.adaptive]\nbase_window = 0\n"),
               {"control.adaptive.base_window"});
  expect_error(stream_with("[control.adaptive]\nqueue_low_ms = 50\n"),
               {"control.adaptive.queue_low_ms", "queue_high_ms"});
  expect_error(stream_with("[control.adaptive]\nclean_loss = 0.1\n"),
               {"control.adaptive.clean_loss", "loss_threshold"});
  expect_error(stream_with("[control.adaptive]\ncreep_queue_ms = 20\n"),
               {"control.adaptive.creep_queue_ms"});
  expect_error(stream_with("[control.adaptive]\nhold_stages = 9\n"),
               {"control.adaptive.hold_stages", "max_hold_stages"});
  expect_error(stream_with("[control]\npolicy = \"adaptive\"\nrmax = 0.2\n"
                           "[control.adaptive]\npulse_rate = 0.3\n"),
               {"control.adaptive.pulse_rate", "control.rmax"});
  expect_error(stream_with("[control]\nadaptive = 3\n"), {"control.adaptive", "table"});
  expect_error(stream_with("[control.adaptive]\nqueue_high_ms = \"30ms\"\n"),
               {"control.adaptive.queue_high_ms"});
}

TEST(ApiTokenConfig, EmptyOrAPrintableSecret) {
  const auto r =
      parse_config(stream_with("", "api_token = \"s3cret-token-0123456789\"\n"), "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->server.api_token, "s3cret-token-0123456789");
  const auto none = parse_config(stream_with(""), "test.toml");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none->server.api_token.empty()) << "read-only by default";
  expect_error(stream_with("", "api_token = \"short\"\n"), {"server.api_token", "16..256"});
  expect_error(stream_with("", "api_token = \"has a space in it 0123\"\n"), {"server.api_token"});
  expect_error(stream_with("", "api_token = 12345678901234567\n"), {"server.api_token"});
}

}  // namespace
}  // namespace predrop::config

// The "capacity" policy's [control] keys (config/src/config.cpp, docs/design.md §2.8).
#include <gtest/gtest.h>

#include <string>

#include "config_test_util.hpp"
#include "predrop/config/config.hpp"
#include "predrop/core/capacity_policy.hpp"

namespace predrop::config {
namespace {

using test::expect_error;
using test::stream_with;

TEST(CapacityConfig, SelectableByNameWithItsParameters) {
  const auto r = parse_config(stream_with("[control]\npolicy = \"capacity\"\nrmax = 0.9\nr0 = 0.1\n"
                                          "margin = 0.98\nqueue_target_ms = 15\n"
                                          "increase_step = 0.05\nprobe_gain = 2\n"
                                          "pacing_gain = 1.2\n"
                                          "quality_floor = 25.0\n"),
                              "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto p = make_policy_config(r->control);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->policy, "capacity");
  EXPECT_DOUBLE_EQ(p->capacity.rmax, 0.9);
  EXPECT_DOUBLE_EQ(p->capacity.initial_rate, 0.1);
  EXPECT_DOUBLE_EQ(p->capacity.margin, 0.98);
  EXPECT_DOUBLE_EQ(p->capacity.queue_ref_us, 15'000);
  EXPECT_DOUBLE_EQ(p->capacity.increase_step, 0.05);
  EXPECT_DOUBLE_EQ(p->capacity.probe_gain, 2.0);
  EXPECT_DOUBLE_EQ(p->capacity.pacing_gain, 1.2);
  EXPECT_DOUBLE_EQ(p->capacity.quality_floor, 25.0);
  auto c = core::make_rate_controller(*p);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->name(), "capacity");
  EXPECT_DOUBLE_EQ((*c)->rate(), 0.1);
}

TEST(CapacityConfig, DefaultsBuild) {
  const auto r = parse_config(stream_with("[control]\npolicy = \"capacity\"\n"), "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto p = make_policy_config(r->control);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_DOUBLE_EQ(p->capacity.queue_ref_us, 0.0);
  EXPECT_DOUBLE_EQ(p->capacity.margin, 0.97);
}

TEST(CapacityConfig, BadValuesAreNamed) {
  expect_error(stream_with("[control]\npolicy = \"capacity\"\nmargin = 1.5\n"),
               {"control.margin", "1.5"});
  expect_error(stream_with("[control]\nmargin = 0\n"), {"control.margin"});
  expect_error(stream_with("[control]\nqueue_target_ms = 80\n"), {"control.queue_target_ms"});
  expect_error(stream_with("[control]\nincrease_step = 0\n"), {"control.increase_step"});
  expect_error(stream_with("[control]\nprobe_gain = 1\n"), {"control.probe_gain"});
  expect_error(stream_with("[control]\npacing_gain = 0.5\n"), {"control.pacing_gain"});
  // The probe keys of the capacity policy before issue 21 say where they went.
  expect_error(stream_with("[control]\nprobe_step_ms = 15\n"),
               {"control.probe_step_ms", "removed", "increase_step"});
  expect_error(stream_with("[control]\nprobe_max_ms = 1000\n"), {"control.probe_max_ms"});
  expect_error(stream_with("[control]\nmargin = \"high\"\n"), {"control.margin"});
  expect_error(stream_with("[control]\npolicy = \"capcity\"\n"), {"control.policy", "capacity"});
}

TEST(CapacityConfig, CodeBuiltConfigsAreValidatedToo) {
  ServerConfig c;
  c.server.streams.push_back(StreamEntry{"a", "b"});
  c.control.policy = "capacity";
  c.control.probe_gain = 0.5;
  const auto st = validate_config(c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("control.probe_gain"), std::string::npos);
}

}  // namespace
}  // namespace predrop::config

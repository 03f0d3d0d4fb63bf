// The "capacity" policy's keys: [control.capacity] (and [control]'s rmax and r0)
// (config/src/config.cpp, docs/design.md §2.8).
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
                                          "[control.capacity]\n"
                                          "margin = 0.98\nqueue_target_ms = 15\n"
                                          "increase_step = 0.05\nprobe_gain = 2\n"
                                          "pacing_gain = 1.2\nrepaid_burst_bytes = 8000\n"
                                          "quality_floor = 25.0\n"
                                          "loss_threshold = 0.03\ndecrease_factor = 0.8\n"
                                          "compete_blocks = 5\ncompete_loss_high = 0.2\n"
                                          "compete_loss_low = 0.05\ncompete_gain = 1.1\n"
                                          "missing_backoff = 0.7\n"),
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
  EXPECT_DOUBLE_EQ(p->capacity.repaid_burst_bytes, 8'000);
  EXPECT_DOUBLE_EQ(p->capacity.quality_floor, 25.0);
  EXPECT_DOUBLE_EQ(p->capacity.loss_threshold, 0.03);
  EXPECT_DOUBLE_EQ(p->capacity.decrease_factor, 0.8);
  EXPECT_EQ(p->capacity.compete_blocks, 5U);
  EXPECT_DOUBLE_EQ(p->capacity.compete_loss_high, 0.2);
  EXPECT_DOUBLE_EQ(p->capacity.compete_loss_low, 0.05);
  EXPECT_DOUBLE_EQ(p->capacity.compete_gain, 1.1);
  EXPECT_DOUBLE_EQ(p->capacity.missing_backoff, 0.7);
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
  EXPECT_DOUBLE_EQ(p->capacity.repaid_burst_bytes, 0.0);  // off
}

TEST(CapacityConfig, BadValuesAreNamed) {
  const auto cap = [](const std::string& body) {
    return stream_with("[control]\npolicy = \"capacity\"\n[control.capacity]\n" + body);
  };
  expect_error(cap("margin = 1.5\n"), {"control.capacity.margin", "1.5"});
  expect_error(cap("margin = 0\n"), {"control.capacity.margin"});
  expect_error(cap("queue_target_ms = 80\n"), {"control.capacity.queue_target_ms"});
  expect_error(cap("increase_step = 0\n"), {"control.capacity.increase_step"});
  expect_error(cap("probe_gain = 1\n"), {"control.capacity.probe_gain"});
  expect_error(cap("pacing_gain = 0.5\n"), {"control.capacity.pacing_gain"});
  expect_error(cap("repaid_burst_bytes = -1\n"), {"control.capacity.repaid_burst_bytes"});
  expect_error(cap("decrease_factor = 0.2\n"), {"control.capacity.decrease_factor"});
  expect_error(cap("compete_blocks = 0\n"), {"control.capacity.compete_blocks"});
  expect_error(cap("compete_loss_low = 0.5\n"), {"control.capacity.compete_loss_low"});
  expect_error(cap("compete_gain = 3\n"), {"control.capacity.compete_gain"});
  expect_error(cap("missing_backoff = 0\n"), {"control.capacity.missing_backoff"});
  expect_error(cap("margin = \"high\"\n"), {"control.capacity.margin"});
  expect_error(cap("margine = 0.9\n"), {"control.capacity.margine"});
  expect_error(stream_with("[control]\ncapacity = 3\n"), {"control.capacity", "table"});
  // The keys [control] held before [control.capacity] existed say where they went.
  for (const char* key : {"margin", "queue_target_ms", "increase_step", "probe_gain", "pacing_gain",
                          "quality_floor"}) {
    expect_error(stream_with(std::string("[control]\n") + key + " = 1\n"),
                 {std::string("control.") + key, "moved to [control.capacity]"});
  }
  // The probe keys of the capacity policy before issue 21 say where they went.
  expect_error(stream_with("[control]\nprobe_step_ms = 15\n"),
               {"control.probe_step_ms", "removed", "increase_step"});
  expect_error(stream_with("[control]\nprobe_max_ms = 1000\n"), {"control.probe_max_ms"});
  expect_error(stream_with("[control]\npolicy = \"capcity\"\n"), {"control.policy", "capacity"});
}

TEST(CapacityConfig, CodeBuiltConfigsAreValidatedToo) {
  ServerConfig c;
  c.server.streams.push_back(StreamEntry{"a", "b"});
  c.control.policy = "capacity";
  c.control.capacity.probe_gain = 0.5;
  const auto st = validate_config(c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("control.capacity.probe_gain"), std::string::npos);
}

TEST(CapacityConfig, CouplingPrefixesOffByDefaultAndInRange) {
  const auto d = parse_config(stream_with(""), "test.toml");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->control.couple_prefix_v4, 0U);
  EXPECT_EQ(d->control.couple_prefix_v6, 0U);
  const auto r = parse_config(
      stream_with("[control]\ncouple_prefix_v4 = 24\ncouple_prefix_v6 = 64\n"), "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->control.couple_prefix_v4, 24U);
  EXPECT_EQ(r->control.couple_prefix_v6, 64U);
  expect_error(stream_with("[control]\ncouple_prefix_v4 = 33\n"), {"control.couple_prefix_v4"});
  expect_error(stream_with("[control]\ncouple_prefix_v6 = 129\n"), {"control.couple_prefix_v6"});
  expect_error(stream_with("[control]\ncouple_prefix_v4 = \"24\"\n"), {"control.couple_prefix_v4"});
}

}  // namespace
}  // namespace predrop::config

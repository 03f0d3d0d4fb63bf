// detail::session_config and detail::session_controller (server/src/session_start.hpp): a client
// with PDFB gets the configured policy; a player without it the player policy fed by its RRs, or
// the fixed player rate; each session's discard seed is its own; its rmax (for /metrics) is its
// policy's.
#include <gtest/gtest.h>

#include "server_test_util.hpp"
#include "session_description.hpp"
#include "session_start.hpp"

namespace predrop {
namespace {

using server::detail::SessionEntry;

TEST(SessionStart, AClientWithPdfbGetsTheConfiguredPolicy) {
  auto options = test::loopback_options();
  SessionEntry e;
  e.id = "a";
  e.feedback = true;
  auto c = server::detail::session_controller(e, options);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->name(), "basic");
  const auto cfg = server::detail::session_config(e, options);
  EXPECT_TRUE(cfg.feedback);
  EXPECT_FALSE(cfg.rr_adaptation);
  EXPECT_EQ(cfg.extension_ids, server::detail::kExtensionIds);
}

TEST(SessionStart, APlayerIsAdaptedFromItsReceiverReports) {
  auto options = test::loopback_options();
  SessionEntry e;
  e.id = "b";
  auto c = server::detail::session_controller(e, options);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->name(), "capacity");
  EXPECT_DOUBLE_EQ(c->rate(), 0.0);
  EXPECT_TRUE(server::detail::session_config(e, options).rr_adaptation);
}

TEST(SessionStart, ABrowserGetsTheClientPolicyWithBrowserPolicyClient) {
  // control.browser_policy = "client": a browser with transport-cc has L and its page's P
  // (docs/webrtc.md "Quality in the page"); without transport-cc it stays a player.
  auto options = test::loopback_options();
  SessionEntry e;
  e.id = "w";
  e.webrtc = true;
  e.transport_cc_id = 3;
  EXPECT_EQ(server::detail::session_controller(e, options)->name(), "capacity");
  EXPECT_FALSE(server::detail::session_controller(e, options)->reads_performance());
  EXPECT_TRUE(server::detail::session_config(e, options).page_quality);
  options.browser_client_policy = true;
  EXPECT_EQ(server::detail::session_controller(e, options)->name(), "basic");
  // The exact rule decides on P first: its reports wait for the page's P.
  EXPECT_TRUE(server::detail::session_controller(e, options)->reads_performance());
  e.transport_cc_id = 0;
  EXPECT_EQ(server::detail::session_controller(e, options)->name(), "capacity");
}

TEST(SessionStart, OnlyABrowserWithTransportCcGetsTheBrowserAlert) {
  // control.browser_alert_ms: the server's own interim alert needs the browser's arrival times.
  auto options = test::loopback_options();
  options.browser_alert_us = 80'000;
  SessionEntry e;
  e.id = "w";
  e.webrtc = true;
  e.transport_cc_id = 3;
  EXPECT_EQ(server::detail::session_config(e, options).transport_alert_us, 80'000);
  e.transport_cc_id = 0;
  EXPECT_EQ(server::detail::session_config(e, options).transport_alert_us, 0);
  SessionEntry player;
  player.id = "p";
  EXPECT_EQ(server::detail::session_config(player, options).transport_alert_us, 0);
}

TEST(SessionStart, OnlyABrowserStartsAtTheBrowserStartRate) {
  // control.browser_start_rate: the capacity policy's stages before the first report.
  auto options = test::loopback_options();
  options.browser_start_rate = 0.5;
  SessionEntry e;
  e.id = "w";
  e.webrtc = true;
  e.transport_cc_id = 3;
  EXPECT_EQ(server::detail::session_policy(e, options).capacity.start_rate, 0.5);
  // Never above the policy's rmax.
  options.player_policy.capacity.rmax = 0.4;
  EXPECT_EQ(server::detail::session_policy(e, options).capacity.start_rate, 0.4);
  SessionEntry player;
  player.id = "p";
  EXPECT_FALSE(server::detail::session_policy(player, options).capacity.start_rate.has_value());
  // The exact rule (control.browser_policy = "client") has its own r0.
  options.browser_client_policy = true;
  EXPECT_EQ(server::detail::session_policy(e, options).policy, "basic");
  EXPECT_FALSE(server::detail::session_policy(e, options).capacity.start_rate.has_value());
}

TEST(SessionStart, OnlyABrowserHasItsLeadingBurstRepaid) {
  // control.browser_repaid_burst_bytes: the capacity policy's repaid burst, browsers only.
  auto options = test::loopback_options();
  options.browser_repaid_burst_bytes = 8000;
  options.player_policy.capacity.repaid_burst_bytes = 0;
  SessionEntry e;
  e.id = "w";
  e.webrtc = true;
  e.transport_cc_id = 3;
  EXPECT_EQ(server::detail::session_policy(e, options).capacity.repaid_burst_bytes, 8000);
  SessionEntry player;
  player.id = "p";
  EXPECT_EQ(server::detail::session_policy(player, options).capacity.repaid_burst_bytes, 0);
  // 0: the policy's own setting stays.
  options.browser_repaid_burst_bytes = 0;
  options.player_policy.capacity.repaid_burst_bytes = 12000;
  EXPECT_EQ(server::detail::session_policy(e, options).capacity.repaid_burst_bytes, 12000);
  // Not for the exact rule (control.browser_policy = "client").
  options.browser_repaid_burst_bytes = 8000;
  options.browser_client_policy = true;
  EXPECT_EQ(server::detail::session_policy(e, options).policy, "basic");
}

TEST(SessionStart, OrServedAtTheFixedPlayerRate) {
  auto options = test::loopback_options();
  options.player_adaptation = server::PlayerAdaptation::kFixed;
  options.player_rate = 0.25;
  SessionEntry e;
  e.id = "c";
  auto c = server::detail::session_controller(e, options);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->name(), "fixed");
  EXPECT_DOUBLE_EQ(c->rate(), 0.25);
  EXPECT_FALSE(server::detail::session_config(e, options).rr_adaptation);
}

TEST(SessionStart, EachSessionDiscardsWithItsOwnSeed) {
  auto options = test::loopback_options();
  SessionEntry a, b;
  a.id = "a";
  b.id = "b";
  EXPECT_NE(server::detail::session_config(a, options).discard_seed,
            server::detail::session_config(b, options).discard_seed);
}

TEST(SessionStart, ItsRmaxIsTheMostItsPolicyMayDiscard) {
  auto options = test::loopback_options();
  options.policy.rule.rmax = 0.3;
  options.player_policy.capacity.rmax = 0.4;
  SessionEntry pdfb;
  pdfb.id = "a";
  pdfb.feedback = true;
  EXPECT_DOUBLE_EQ(server::detail::session_config(pdfb, options).rmax, 0.3);
  SessionEntry player;
  player.id = "b";
  EXPECT_DOUBLE_EQ(server::detail::session_config(player, options).rmax, 0.4);
  options.player_adaptation = server::PlayerAdaptation::kFixed;
  options.player_rate = 0.25;
  EXPECT_DOUBLE_EQ(server::detail::session_config(player, options).rmax, 0.25);
}

TEST(SessionStart, ABadPolicyMakesNoController) {
  auto options = test::loopback_options();
  options.policy.policy = "no-such-policy";
  SessionEntry e;
  e.feedback = true;
  EXPECT_EQ(server::detail::session_controller(e, options), nullptr);
}

}  // namespace
}  // namespace predrop

// [server.streams.<name>] source = "publish": a published stream, or source = "rtsp://...": a
// pulled one (config/src/config.cpp, configs/README.md, docs/live.md), beside file streams; the
// secret, replace and pull, and clear errors for what is missing or wrong.
#include <gtest/gtest.h>

#include <string>

#include "config_test_util.hpp"
#include "predrop/config/config.hpp"

namespace predrop::config {
namespace {

using test::expect_error;

std::string with_live(const std::string& table) {
  return "[server]\nmode = \"stream\"\n[server.streams]\nsample = \"media/sample.mp4\"\n"
         "[server.streams.live]\n" +
         table;
}

TEST(LiveConfig, APublishedStreamBesideAFile) {
  const auto r = parse_config(
      with_live("source = \"publish\"\npublish_secret = \"0123456789abcdef\"\nreplace = true\n"),
      "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->server.streams.size(), 2U);
  const StreamEntry& live = r->server.streams[0];
  EXPECT_EQ(live.name, "live");
  EXPECT_TRUE(live.publish);
  EXPECT_EQ(live.publish_secret, "0123456789abcdef");
  EXPECT_TRUE(live.replace);
  EXPECT_TRUE(live.path.empty());
  EXPECT_FALSE(r->server.streams[1].publish);
  const auto plain = parse_config(
      with_live("source = \"publish\"\npublish_secret = \"0123456789abcdef\"\n"), "test.toml");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_FALSE(plain->server.streams[0].replace) << "a second publisher is refused by default";
}

TEST(LiveConfig, APulledStreamOnDemandByDefault) {
  const auto r = parse_config(with_live("source = \"rtsp://10.0.0.1:8554/cam\"\n"), "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const StreamEntry& live = r->server.streams[0];
  EXPECT_EQ(live.pull_url, "rtsp://10.0.0.1:8554/cam");
  EXPECT_FALSE(live.pull_always);
  EXPECT_FALSE(live.publish);
  EXPECT_TRUE(live.path.empty());
  const auto always = parse_config(
      with_live("source = \"rtsp://10.0.0.1:8554/cam\"\npull = \"always\"\n"), "test.toml");
  ASSERT_TRUE(always.ok()) << always.error().message;
  EXPECT_TRUE(always->server.streams[0].pull_always);
}

TEST(LiveConfig, AnOriginListsItsEdges) {
  const auto r = parse_config(
      with_live("source = \"publish\"\npublish_secret = \"0123456789abcdef\"\n"
                "edges = [\"rtsp://198.18.2.2:8554/live\", \"rtsp://198.18.3.2:8554/live\"]\n"),
      "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->server.streams[0].edges, (std::vector<std::string>{"rtsp://198.18.2.2:8554/live",
                                                                  "rtsp://198.18.3.2:8554/live"}));
  expect_error(with_live("source = \"rtsp://10.0.0.1/x\"\nedges = []\n"),
               {"server.streams.live.edges", "1..64"});
  expect_error(with_live("source = \"rtsp://10.0.0.1/x\"\nedges = [\"http://e/x\"]\n"),
               {"server.streams.live.edges", "rtsp://host:port/path"});
}

TEST(LiveConfig, MistakesAreClearErrors) {
  expect_error(with_live("publish_secret = \"0123456789abcdef\"\n"),
               {"server.streams.live", "source = \"publish\""});
  expect_error(with_live("source = \"publish\"\n"), {"server.streams.live", "publish_secret"});
  expect_error(with_live("source = \"publish\"\npublish_secret = \"short\"\n"),
               {"server.streams.live.publish_secret", "at least 16"});
  expect_error(with_live("source = \"publish\"\npublish_secret = \"0123456789abcdef&x\"\n"),
               {"server.streams.live.publish_secret", "unescaped"});
  expect_error(
      with_live("source = \"rtsp://camera/stream\"\npublish_secret = \"0123456789abcdef\"\n"),
      {"server.streams.live", "takes no publish_secret"});
  expect_error(with_live("source = \"http://camera/stream\"\n"),
               {"server.streams.live.source", "rtsp://host:port/path"});
  expect_error(with_live("source = \"rtsp://10.0.0.1/cam\"\npull = \"sometimes\"\n"),
               {"server.streams.live.pull", "\"always\" or \"on-demand\""});
  expect_error(with_live("source = \"publish\"\npublish_secret = \"0123456789abcdef\"\n"
                         "pull = \"always\"\n"),
               {"server.streams.live", "pull is for a pulled stream"});
  expect_error(
      with_live("source = \"publish\"\npublish_secret = \"0123456789abcdef\"\nreplace = 1\n"),
      {"server.streams.live.replace", "boolean"});
  expect_error(
      with_live("source = \"publish\"\npublish_secret = \"0123456789abcdef\"\nsecret = \"x\"\n"),
      {"server.streams.live.secret", "unknown key"});
}

}  // namespace
}  // namespace predrop::config

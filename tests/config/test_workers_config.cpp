// [server] workers and its text form for --workers (config/src/config.cpp, configs/README.md,
// server/include/predrop/server/stream_workers.hpp).
#include <gtest/gtest.h>

#include <string>

#include "config_test_util.hpp"
#include "predrop/config/config.hpp"

namespace predrop::config {
namespace {

using test::expect_error;
using test::stream_with;

TEST(WorkersConfig, DefaultIsAutoOnePerCore) {
  const auto r = parse_config(stream_with(""), "test.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->server.workers, 0U);
}

TEST(WorkersConfig, IntegerAndAutoAreRead) {
  const auto two = parse_config(stream_with("", "workers = 2\n"), "test.toml");
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->server.workers, 2U);
  const auto one = parse_config(stream_with("", "workers = 1\n"), "test.toml");
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one->server.workers, 1U);
  const auto autos = parse_config(stream_with("", "workers = \"auto\"\n"), "test.toml");
  ASSERT_TRUE(autos.ok()) << autos.error().message;
  EXPECT_EQ(autos->server.workers, 0U);
  const auto zero = parse_config(stream_with("", "workers = 0\n"), "test.toml");
  ASSERT_TRUE(zero.ok()) << zero.error().message;
  EXPECT_EQ(zero->server.workers, 0U);
  const auto most = parse_config(stream_with("", "workers = 64\n"), "test.toml");
  ASSERT_TRUE(most.ok()) << most.error().message;
  EXPECT_EQ(most->server.workers, kMaxWorkers);
}

TEST(WorkersConfig, BadValuesAreClearErrors) {
  expect_error(stream_with("", "workers = 65\n"), {"server.workers", "[0, 64]", "65"});
  expect_error(stream_with("", "workers = -1\n"), {"server.workers", "[0, 64]"});
  expect_error(stream_with("", "workers = \"many\"\n"), {"server.workers", "auto", "many"});
  expect_error(stream_with("", "workers = 1.5\n"), {"server.workers", "an integer or \"auto\""});
  expect_error(stream_with("", "workers = true\n"), {"server.workers", "an integer or \"auto\""});
}

TEST(WorkersConfig, OnlyInStreamMode) {
  expect_error("[server]\nmode = \"ddl\"\nworkers = 2\n", {"server.workers"});
}

TEST(WorkersConfig, TextFormForTheCommandLine) {
  EXPECT_EQ(parse_workers("auto").value(), 0U);
  EXPECT_EQ(parse_workers("0").value(), 0U);
  EXPECT_EQ(parse_workers("3").value(), 3U);
  EXPECT_EQ(parse_workers("64").value(), 64U);
  for (const char* bad : {"", "-1", "65", "1000", "two", "2x", " 2"}) {
    const auto r = parse_workers(bad);
    ASSERT_FALSE(r.ok()) << "accepted '" << bad << "'";
    EXPECT_NE(r.error().message.find("auto"), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace predrop::config

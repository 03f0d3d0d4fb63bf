// The block trace CSV (issue 10 item 8): rows are buffered and reach the file on flush() (or when
// the trace is destroyed), not one fflush per row on the loop thread; write errors, e.g. on a
// full disk (/dev/full), are counted, logged once and exported in /metrics; reopen() continues
// in a new file after a rotation moved the old one.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "predrop/server/block_trace_csv.hpp"
#include "predrop/server/server_setup.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

server::BlockTrace row(std::uint32_t stage) {
  server::BlockTrace t;
  t.session = "s";
  t.stage = stage;
  t.reported = true;
  return t;
}

const std::string kHeader = std::string(server::BlockTraceCsv::header()) + "\n";

TEST(BlockTraceCsv, CapacityEstimateIsTheLastColumnInKbitPerSecond) {
  // The capacity policy's estimate (issue 12), for plotting it per block; empty for policies
  // without one.
  const std::string header = server::BlockTraceCsv::header();
  EXPECT_EQ(header.substr(header.rfind(',') + 1), "capacity_kbps");
  server::BlockTrace t = row(3);
  const std::string none = server::BlockTraceCsv::format(t);
  EXPECT_EQ(none.back(), ',') << none;
  t.capacity_estimate = 0.1025;  // bytes per µs = 820 kbit/s
  const std::string some = server::BlockTraceCsv::format(t);
  EXPECT_EQ(some.substr(some.rfind(',') + 1), "820.0") << some;
}

TEST(BlockTraceCsv, RowsAreBufferedUntilFlush) {
  const std::string path = std::string(PREDROP_TEST_TMP) + "/trace-buffered.csv";
  auto t = server::BlockTraceCsv::open(path);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(read_file(path), kHeader) << "the header is written at open";
  (*t)->write(row(0));
  (*t)->write(row(1));
  EXPECT_EQ(read_file(path), kHeader) << "a row went to the file before flush()";
  EXPECT_GT((*t)->buffered_bytes(), 0u);
  (*t)->flush();
  EXPECT_EQ(count(read_file(path), "\n"), 3u);
  EXPECT_EQ((*t)->stats().rows_written, 2u);
  (*t)->write(row(2));
  std::unique_ptr<server::BlockTraceCsv> owned = std::move(t.value());
  owned.reset();  // destruction flushes
  EXPECT_EQ(count(read_file(path), "\n"), 4u);
}

TEST(BlockTraceCsv, LargeBuffersFlushThemselves) {
  const std::string path = std::string(PREDROP_TEST_TMP) + "/trace-large.csv";
  auto t = server::BlockTraceCsv::open(path);
  ASSERT_TRUE(t.ok());
  std::uint32_t stage = 0;
  // The header's flush at open() is the first; write() makes the second by itself.
  while ((*t)->stats().flushes < 2)
    (*t)->write(row(stage++));
  EXPECT_GT((*t)->stats().rows_written, 1000u);
  EXPECT_EQ((*t)->stats().rows_written, stage);
  (*t)->write(row(stage++));
  EXPECT_EQ((*t)->stats().rows_written, stage - 1) << "the row after the flush waits";
  EXPECT_LT((*t)->buffered_bytes(), server::BlockTraceCsv::kFlushBytes);
}

TEST(BlockTraceCsv, WriteErrorsAreCountedLoggedOnceAndExported) {
  auto t = server::BlockTraceCsv::open("/dev/full");
  ASSERT_TRUE(t.ok()) << t.error().message;
  testing::internal::CaptureStderr();
  for (std::uint32_t s = 0; s < 3; ++s)
    (*t)->write(row(s));
  (*t)->flush();
  (*t)->write(row(3));
  (*t)->write(row(4));
  (*t)->flush();
  const std::string log = testing::internal::GetCapturedStderr();
  // The header at open() failed too, before the capture: that was the one log line.
  EXPECT_EQ(count(log, "failed"), 0u) << log;
  EXPECT_EQ((*t)->stats().write_errors, 3u);
  EXPECT_EQ((*t)->stats().rows_lost, 5u);
  EXPECT_EQ((*t)->stats().rows_written, 0u);
  EXPECT_EQ((*t)->buffered_bytes(), 0u) << "lost rows must not pile up";

  // A fresh trace on /dev/full logs exactly once for several failures.
  testing::internal::CaptureStderr();
  auto again = server::BlockTraceCsv::open("/dev/full");
  ASSERT_TRUE(again.ok());
  (*again)->write(row(0));
  (*again)->flush();
  (*again)->write(row(1));
  (*again)->flush();
  const std::string log2 = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(log2, "writing /dev/full failed"), 1u) << log2;
  EXPECT_NE(log2.find("No space left on device"), std::string::npos) << log2;

  net::EventLoop loop;
  server::StreamServer srv(loop, test::loopback_options());
  const std::string metrics = server::render_metrics(srv, {nullptr, t->get()});
  EXPECT_NE(metrics.find("predrop_trace_write_errors_total 3"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("predrop_trace_rows_lost_total 5"), std::string::npos);
}

TEST(BlockTraceCsv, ReopenContinuesInANewFileAfterRotation) {
  const std::string path = std::string(PREDROP_TEST_TMP) + "/trace-rotate.csv";
  const std::string rotated = path + ".1";
  std::filesystem::remove(rotated);
  auto t = server::BlockTraceCsv::open(path);
  ASSERT_TRUE(t.ok());
  (*t)->write(row(0));
  std::filesystem::rename(path, rotated);
  ASSERT_TRUE((*t)->reopen().ok());
  (*t)->write(row(1));
  (*t)->flush();
  EXPECT_EQ(count(read_file(rotated), "\n"), 2u) << "the row before the rotation";
  const std::string fresh = read_file(path);
  EXPECT_EQ(fresh.rfind(kHeader, 0), 0u) << fresh;
  EXPECT_EQ(count(fresh, "\n"), 2u);
}

}  // namespace
}  // namespace predrop

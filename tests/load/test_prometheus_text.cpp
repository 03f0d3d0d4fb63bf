// The Prometheus text parser (load/include/predrop/load/prometheus_text.hpp) and the reduction of
// a /metrics reply to the load report's figures (metrics_probe.hpp, read_metrics_reply).
#include "predrop/load/prometheus_text.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "predrop/load/metrics_probe.hpp"

namespace predrop::load {
namespace {

// What predrop-server's render_metrics() writes (server/src/metrics_text.cpp), one session.
constexpr std::string_view kScrape =
    "# HELP predrop_rtsp_requests_total RTSP requests handled.\n"
    "# TYPE predrop_rtsp_requests_total counter\n"
    "predrop_rtsp_requests_total 42\n"
    "# TYPE predrop_sessions gauge\n"
    "predrop_sessions 1\n"
    "predrop_session_rate{session=\"A1B2\",policy=\"adaptive\"} 0.0500\n"
    "predrop_session_packets_sent_total{session=\"A1B2\"} 1234\n"
    "predrop_session_reports_total{session=\"A1B2\"} 7\n"
    "predrop_session_late_blocks_total{session=\"A1B2\"} 2\n";

TEST(PrometheusText, ParsesThePredropServerScrape) {
  const auto scrape = parse_prometheus_text(kScrape);
  EXPECT_EQ(scrape.skipped_lines, 0u);
  ASSERT_EQ(scrape.samples.size(), 6u);
  EXPECT_EQ(scrape.samples[0].name, "predrop_rtsp_requests_total");
  EXPECT_TRUE(scrape.samples[0].labels.empty());
  EXPECT_EQ(scrape.samples[0].value, 42.0);
  const auto& rate = scrape.samples[2];
  EXPECT_EQ(rate.name, "predrop_session_rate");
  ASSERT_EQ(rate.labels.size(), 2u);
  EXPECT_EQ(rate.label("session").value_or(""), "A1B2");
  EXPECT_EQ(rate.label("policy").value_or(""), "adaptive");
  EXPECT_FALSE(rate.label("absent").has_value());
  EXPECT_DOUBLE_EQ(rate.value, 0.05);
  EXPECT_FALSE(rate.timestamp_ms.has_value());
}

TEST(PrometheusText, EscapesSpecialValuesTimestampsAndCrlf) {
  auto s = parse_prometheus_line(
      R"(m{path="C:\\dir",quote="say \"hi\"",nl="a\nb",brace="}{, ="} 1.5e3 1700000000000)");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->label("path").value_or(""), "C:\\dir");
  EXPECT_EQ(s->label("quote").value_or(""), "say \"hi\"");
  EXPECT_EQ(s->label("nl").value_or(""), "a\nb");
  EXPECT_EQ(s->label("brace").value_or(""), "}{, =");
  EXPECT_EQ(s->value, 1500.0);
  EXPECT_EQ(s->timestamp_ms, 1700000000000LL);

  s = parse_prometheus_line("m NaN");
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(std::isnan(s->value));
  s = parse_prometheus_line("m +Inf\r");
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(std::isinf(s->value) && s->value > 0);
  s = parse_prometheus_line("m{a=\"1\",} -Inf");  // trailing comma allowed
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(std::isinf(s->value) && s->value < 0);
  s = parse_prometheus_line("  m{} 3");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->value, 3.0);
}

TEST(PrometheusText, MalformedLinesAreSkippedAndCounted) {
  for (const char* bad : {
           "m",               // no value
           "m abc",           // not a number
           "m 1 2 3",         // junk after the timestamp
           "m 1 12x",         // bad timestamp
           "m{a=1} 2",        // unquoted label value
           "m{a=\"1\" 2",     // no closing brace
           "m{a=\"1} 2",      // no closing quote
           "m{1a=\"x\"} 2",   // bad label name
           "m{a:b=\"x\"} 2",  // ':' is not allowed in label names
           "9m 1",            // bad metric name
           "m{a=\"x\"}2",     // no blank before the value
       }) {
    EXPECT_FALSE(parse_prometheus_line(bad).has_value()) << bad;
  }
  const auto scrape = parse_prometheus_text("# comment\n\n  \nm abc\nok 1\r\nm{a=1} 2\nlast 2");
  EXPECT_EQ(scrape.skipped_lines, 2u);
  ASSERT_EQ(scrape.samples.size(), 2u);
  EXPECT_EQ(scrape.samples[0].name, "ok");
  EXPECT_EQ(scrape.samples[1].name, "last");  // no final line end
}

TEST(MetricsReply, ReducesAScrapeToTheReportFigures) {
  const std::string reply =
      "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nConnection: close\r\n\r\n" +
      std::string(kScrape) + "predrop_session_packets_sent_total{session=\"C3\"} 100\n";
  const auto m = read_metrics_reply(reply, 1234);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->fetched_us, 1234u);
  EXPECT_EQ(m->reports.size(), 1u);
  EXPECT_EQ(m->reports.at("A1B2"), 7.0);
  EXPECT_EQ(m->sent.at("A1B2"), 1234.0);
  EXPECT_EQ(m->sent.at("C3"), 100.0);
  EXPECT_EQ(m->packets_sent, 1334.0);
  EXPECT_TRUE(m->late_known);
  EXPECT_EQ(m->late_blocks, 2.0);
}

TEST(MetricsReply, TheServerWideLateCounterWinsOverTheLiveSessions) {
  // Sessions that ended are gone from the per-session lines; predrop_late_blocks_total still
  // counts their late blocks, and a scrape during the drain has no session lines at all.
  const std::string reply = "HTTP/1.0 200 OK\r\n\r\n" + std::string(kScrape) +
                            "# TYPE predrop_late_blocks_total counter\n"
                            "predrop_late_blocks_total 9\n";
  const auto m = read_metrics_reply(reply, 0);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->late_known);
  EXPECT_EQ(m->late_blocks, 9.0);
  const auto drained =
      read_metrics_reply("HTTP/1.0 200 OK\r\n\r\npredrop_late_blocks_total 0\n", 0);
  ASSERT_TRUE(drained.ok());
  EXPECT_TRUE(drained->late_known);
  EXPECT_EQ(drained->late_blocks, 0.0);
}

TEST(MetricsReply, OnlyA200IsAScrape) {
  EXPECT_FALSE(read_metrics_reply("HTTP/1.0 404 Not Found\r\n\r\n", 0).ok());
  EXPECT_FALSE(read_metrics_reply("HTTP/1.0 500 Error 200\r\n\r\n", 0).ok());
  EXPECT_FALSE(read_metrics_reply("", 0).ok());
  EXPECT_FALSE(read_metrics_reply("RTSP/1.0 200 OK\r\n\r\n", 0).ok());
  const auto empty = read_metrics_reply("HTTP/1.1 200 OK\n\n", 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->late_known);
  EXPECT_TRUE(empty->reports.empty());
}

}  // namespace
}  // namespace predrop::load

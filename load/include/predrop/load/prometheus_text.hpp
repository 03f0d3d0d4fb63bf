#pragma once
// The Prometheus text exposition format, version 0.0.4 (what predrop-server's /metrics writes;
// https://prometheus.io/docs/instrumenting/exposition_formats/):
//
//   # HELP name text          # TYPE name counter        (comments: skipped)
//   name{label="value",...} 12.5 [timestamp_ms]
//
// A pure parser over text: label values may hold escaped \\, \" and \n and any other byte; the
// value is a float ("NaN", "+Inf" included). A line that does not follow the grammar is skipped
// and counted, so that one odd line never hides the rest of a scrape.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace predrop::load {

/// One sample line.
struct PrometheusSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  ///< In line order, unescaped.
  double value = 0.0;
  std::optional<long long> timestamp_ms;

  /// Value of the label called `key`, if present.
  std::optional<std::string_view> label(std::string_view key) const;
};

/// Every sample of a scrape, in order.
struct PrometheusScrape {
  std::vector<PrometheusSample> samples;
  std::size_t skipped_lines = 0;  ///< Lines that were neither samples, comments nor blank.
};

/// Parses the text of a scrape (LF or CRLF line ends).
PrometheusScrape parse_prometheus_text(std::string_view text);

/// Parses one sample line; nullopt for comments, blank and malformed lines.
std::optional<PrometheusSample> parse_prometheus_line(std::string_view line);

}  // namespace predrop::load

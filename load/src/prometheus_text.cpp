// The Prometheus text exposition format 0.0.4 (predrop/load/prometheus_text.hpp).
#include "predrop/load/prometheus_text.hpp"

#include <charconv>
#include <cstdlib>
#include <limits>

namespace predrop::load {

namespace {

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}
bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

void skip_blanks(std::string_view s, std::size_t& at) {
  while (at < s.size() && is_blank(s[at])) {
    ++at;
  }
}

// A metric or label name at `at`; empty when there is none.
std::string_view read_name(std::string_view s, std::size_t& at, bool label) {
  const std::size_t start = at;
  if (at >= s.size() || !is_name_start(s[at]) || (label && s[at] == ':')) return {};
  ++at;
  while (at < s.size() && is_name_char(s[at]) && !(label && s[at] == ':')) {
    ++at;
  }
  return s.substr(start, at - start);
}

// A quoted label value at `at` (on the opening quote), unescaped into `out`.
bool read_label_value(std::string_view s, std::size_t& at, std::string& out) {
  if (at >= s.size() || s[at] != '"') return false;
  ++at;
  while (at < s.size()) {
    const char c = s[at++];
    if (c == '"') return true;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (at >= s.size()) return false;
    const char e = s[at++];
    if (e == 'n') {
      out += '\n';
    } else if (e == '\\' || e == '"') {
      out += e;
    } else {
      // The format defines only these three escapes; keep anything else as written.
      out += '\\';
      out += e;
    }
  }
  return false;  // no closing quote
}

// A float as Go's strconv.ParseFloat writes it, plus the format's NaN / +Inf / -Inf spellings.
std::optional<double> read_value(std::string_view token) {
  if (token == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (token == "+Inf" || token == "Inf") return std::numeric_limits<double>::infinity();
  if (token == "-Inf") return -std::numeric_limits<double>::infinity();
  if (token.empty()) return std::nullopt;
  // strtod needs a terminated string; a token is short.
  const std::string text(token);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::string_view> PrometheusSample::label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}

std::optional<PrometheusSample> parse_prometheus_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::size_t at = 0;
  skip_blanks(line, at);
  if (at >= line.size() || line[at] == '#') return std::nullopt;
  PrometheusSample s;
  s.name = std::string(read_name(line, at, false));
  if (s.name.empty()) return std::nullopt;
  if (at < line.size() && line[at] == '{') {
    ++at;
    for (;;) {
      skip_blanks(line, at);
      if (at < line.size() && line[at] == '}') {
        ++at;
        break;
      }
      const std::string_view key = read_name(line, at, true);
      if (key.empty()) return std::nullopt;
      skip_blanks(line, at);
      if (at >= line.size() || line[at] != '=') return std::nullopt;
      ++at;
      skip_blanks(line, at);
      std::string value;
      if (!read_label_value(line, at, value)) return std::nullopt;
      s.labels.emplace_back(std::string(key), std::move(value));
      skip_blanks(line, at);
      if (at < line.size() && line[at] == ',') {
        ++at;  // a trailing comma before '}' is allowed
        continue;
      }
      if (at < line.size() && line[at] == '}') {
        ++at;
        break;
      }
      return std::nullopt;
    }
  }
  if (at >= line.size() || !is_blank(line[at])) return std::nullopt;
  skip_blanks(line, at);
  std::size_t end = at;
  while (end < line.size() && !is_blank(line[end])) {
    ++end;
  }
  const auto value = read_value(line.substr(at, end - at));
  if (!value) return std::nullopt;
  s.value = *value;
  at = end;
  skip_blanks(line, at);
  if (at < line.size()) {
    long long ts = 0;
    const auto* first = line.data() + at;
    const auto* last = line.data() + line.size();
    while (last > first && is_blank(*(last - 1))) {
      --last;
    }
    const auto [ptr, ec] = std::from_chars(first, last, ts);
    if (ec != std::errc() || ptr != last) return std::nullopt;
    s.timestamp_ms = ts;
  }
  return s;
}

PrometheusScrape parse_prometheus_text(std::string_view text) {
  PrometheusScrape out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (auto sample = parse_prometheus_line(line)) {
      out.samples.push_back(std::move(*sample));
      continue;
    }
    std::size_t at = 0;
    skip_blanks(line, at);
    const bool blank = at == line.size() || (at + 1 == line.size() && line[at] == '\r');
    if (!blank && line[at] != '#') ++out.skipped_lines;
  }
  return out;
}

}  // namespace predrop::load

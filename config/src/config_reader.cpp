// The strict TOML reader shared by the section files (config_reader.hpp).
#include "config_reader.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace predrop::config::detail {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    prev[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

bool is_stream_name(std::string_view s) {
  return !s.empty() && s.size() <= 64 && s != "." && s != ".." &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return core::text::is_alpha(c) || core::text::is_digit(c) || c == '.' || c == '_' ||
                  c == '-';
         });
}

std::string key_text(std::string_view key) {
  const bool plain = !key.empty() && key.size() <= 80 &&
                     std::all_of(key.begin(), key.end(),
                                 [](char c) { return core::text::is_tchar(c) || c == '.'; });
  return plain ? std::string(key) : core::text::quote_for_error(key, 80);
}

std::string format_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::optional<Problem> range_problem(std::string key, std::uint64_t v, std::uint64_t lo,
                                     std::uint64_t hi) {
  if (v < lo || v > hi) {
    return Problem{std::move(key), "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                       "], got " + std::to_string(v)};
  }
  return std::nullopt;
}

std::optional<Problem> rate_problem(std::string key, double v) {
  if (!std::isfinite(v) || v < 0.0 || v > 1.0) {
    return Problem{std::move(key), "must be a rate in [0, 1], got " + format_number(v)};
  }
  return std::nullopt;
}

std::string_view type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "table";
    case toml::node_type::array:
      return "array";
    case toml::node_type::string:
      return "string";
    case toml::node_type::integer:
      return "integer";
    case toml::node_type::floating_point:
      return "float";
    case toml::node_type::boolean:
      return "boolean";
    case toml::node_type::date:
      return "date";
    case toml::node_type::time:
      return "time";
    case toml::node_type::date_time:
      return "date-time";
    default:
      return "nothing";
  }
}

std::string Reader::location(const toml::source_region& r) const {
  std::string out(source_);
  if (r.begin.line != 0) {
    out += ':' + std::to_string(r.begin.line) + ':' + std::to_string(r.begin.column);
  }
  return out + ": ";
}

void Reader::fail(const toml::source_region& where, std::string_view key, std::string message) {
  if (failed()) {
    return;
  }
  error_ = location(where) + std::string(key) + ": " + std::move(message);
}

void Reader::fail_type(const toml::node& n, std::string_view key, std::string_view expected) {
  fail(n.source(), key, "expected " + std::string(expected) + ", got " + std::string(type_name(n)));
}

void Reader::section(const toml::table& t, std::string_view prefix, const std::vector<Key>& keys) {
  if (keys_seen_ != nullptr) {
    for (const Key& key : keys) {
      if (!key.removed) keys_seen_->push_back(std::string(prefix) + "." + std::string(key.name));
    }
  }
  for (const auto& entry : t) {
    // Plain references, not a structured binding: clang 14 cannot capture those in lambdas.
    const toml::key& k = entry.first;
    const toml::node& node = entry.second;
    if (failed()) {
      return;
    }
    const std::string full = std::string(prefix) + "." + std::string(k.str());
    const auto it =
        std::find_if(keys.begin(), keys.end(), [&](const Key& key) { return key.name == k.str(); });
    if (it != keys.end()) {
      current_ = full;
      it->read(node);
      continue;
    }
    std::string hint;
    std::size_t best = 3;
    for (const auto& key : keys) {
      const auto d = edit_distance(k.str(), key.name);
      if (d < best) {
        best = d;
        hint = " (did you mean " + std::string(prefix) + "." + std::string(key.name) + "?)";
      }
    }
    fail(k.source(), key_text(full), "unknown key" + hint);
  }
}

std::optional<std::int64_t> Reader::integer(const toml::node& n, std::int64_t lo, std::int64_t hi) {
  const auto* v = n.as_integer();
  if (!v) {
    fail_type(n, current_, "an integer");
    return std::nullopt;
  }
  const std::int64_t x = v->get();
  if (x < lo || x > hi) {
    fail(n.source(), current_,
         "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
             std::to_string(x));
    return std::nullopt;
  }
  return x;
}

std::optional<double> Reader::number(const toml::node& n) {
  if (const auto* i = n.as_integer()) {
    return static_cast<double>(i->get());
  }
  if (const auto* f = n.as_floating_point()) {
    if (!std::isfinite(f->get())) {
      fail(n.source(), current_, "must be a finite number");
      return std::nullopt;
    }
    return f->get();
  }
  fail_type(n, current_, "a number");
  return std::nullopt;
}

std::optional<std::string> Reader::string(const toml::node& n) {
  const auto* s = n.as_string();
  if (!s) {
    fail_type(n, current_, "a string");
    return std::nullopt;
  }
  return s->get();
}

std::optional<bool> Reader::boolean(const toml::node& n) {
  const auto* b = n.as_boolean();
  if (!b) {
    fail_type(n, current_, "a boolean");
    return std::nullopt;
  }
  return b->get();
}

void Reader::endpoint_into(const toml::node& n, Endpoint& out, bool allow_zero) {
  const auto s = string(n);
  if (!s) {
    return;
  }
  auto e = parse_endpoint(*s, allow_zero);
  if (!e) {
    fail(n.source(), current_, e.error().message);
    return;
  }
  out = std::move(e).value();
}

// Finds the node of a dotted key for an error location (streams keys contain no dots).
const toml::node* find_node(const toml::table& root, std::string_view key) {
  const toml::node* node = &root;
  std::string_view rest = key;
  while (!rest.empty() && node) {
    const auto dot = rest.find('.');
    const auto part = rest.substr(0, dot);
    const auto* t = node->as_table();
    node = t ? t->get(part) : nullptr;
    rest = dot == std::string_view::npos ? std::string_view{} : rest.substr(dot + 1);
  }
  return node;
}

}  // namespace predrop::config::detail

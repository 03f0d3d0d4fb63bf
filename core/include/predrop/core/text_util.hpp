#pragma once
// Small text helpers shared by the RTSP, SDP and configuration parsers. Everything works on
// string_view and never reads outside it; numbers are parsed with std::from_chars (no locale).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace predrop::core::text {

inline bool is_space(char c) {
  return c == ' ' || c == '\t';
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
inline bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
inline char to_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
}

/// Control characters (RFC 2616 CTL) other than HT; never allowed in header values or URLs.
inline bool is_ctl(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && c != '\t') || u == 0x7f;
}

/// RFC 2616 §2.2 token characters (header names, methods, SDP tokens).
inline bool is_tchar(char c) {
  if (is_alpha(c) || is_digit(c)) {
    return true;
  }
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

inline bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

inline bool has_ctl(std::string_view s) {
  return std::any_of(s.begin(), s.end(), is_ctl);
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && is_space(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (to_lower(a[i]) != to_lower(b[i])) {
      return false;
    }
  }
  return true;
}

inline bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

/// Parses a whole string of decimal digits (no sign, no spaces) into an unsigned value <= max.
template <typename T>
std::optional<T> parse_uint(std::string_view s, T max = std::numeric_limits<T>::max()) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), is_digit)) {
    return std::nullopt;
  }
  T v{};
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v > max) {
    return std::nullopt;
  }
  return v;
}

/// Parses a whole string of hex digits into an unsigned value (no "0x" prefix).
template <typename T>
std::optional<T> parse_hex(std::string_view s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), is_hex)) {
    return std::nullopt;
  }
  T v{};
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc{} || p != s.data() + s.size()) {
    return std::nullopt;
  }
  return v;
}

/// Parses a whole string as a finite decimal number ("1", "0.5", "-2e3"); no leading '+'.
inline std::optional<double> parse_double(std::string_view s) {
  if (s.empty()) {
    return std::nullopt;
  }
  double v = 0.0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

/// Splits at the first `sep`; the second part is empty when `sep` is absent.
inline std::pair<std::string_view, std::string_view> split_once(std::string_view s, char sep) {
  const auto pos = s.find(sep);
  if (pos == std::string_view::npos) {
    return {s, {}};
  }
  return {s.substr(0, pos), s.substr(pos + 1)};
}

/// Calls `fn(piece)` for each `sep`-separated piece of `s` (empty pieces included).
template <typename Fn>
void for_each_piece(std::string_view s, char sep, Fn&& fn) {
  for (;;) {
    const auto pos = s.find(sep);
    if (pos == std::string_view::npos) {
      fn(s);
      return;
    }
    fn(s.substr(0, pos));
    s.remove_prefix(pos + 1);
  }
}

/// Quotes a value for an error message, cutting it short and escaping control bytes, so that
/// hostile input cannot flood or corrupt a log line.
inline std::string quote_for_error(std::string_view s, std::size_t max = 40) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    if (u < 0x20 || u >= 0x7f || s[i] == '"' || s[i] == '\\') {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += s[i];
    }
  }
  if (s.size() > max) {
    out += "...";
  }
  out += '"';
  return out;
}

}  // namespace predrop::core::text

// Private to predrop::config: the strict TOML reader every section file uses (unknown-key checks
// with "did you mean" hints, typed reads with ranges, error text with file:line:column), the name
// tables of the enumerations, and the first-problem collector of the cross-key validation.
// With config_reader.cpp the only place besides the section readers that includes toml++.
#pragma once

#include <toml++/toml.h>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "predrop/config/config.hpp"
#include "predrop/core/text_util.hpp"

namespace predrop::config::detail {

// ---- names ----------------------------------------------------------------------------------

template <typename E>
struct Named {
  E value;
  std::string_view name;
};

inline constexpr std::array<Named<ServerMode>, 2> kModes = {
    {{ServerMode::kStream, "stream"}, {ServerMode::kDdl, "ddl"}}};
inline constexpr std::array<Named<std::optional<wire::SrtpSuite>>, 4> kSuites = {{
    {wire::SrtpSuite::AesCm128HmacSha1_80, "AES_CM_128_HMAC_SHA1_80"},
    {wire::SrtpSuite::AesCm128HmacSha1_32, "AES_CM_128_HMAC_SHA1_32"},
    {wire::SrtpSuite::AeadAes128Gcm, "AEAD_AES_128_GCM"},
    {std::nullopt, "none"},
}};
inline constexpr std::array<Named<Pacing>, 2> kPacings = {
    {{Pacing::kPaced, "paced"}, {Pacing::kBurst, "burst"}}};
inline constexpr std::array<Named<core::DiscardPolicy>, 3> kDiscardPolicies = {{
    {core::DiscardPolicy::kUniform, "uniform"},
    {core::DiscardPolicy::kRandom, "random"},
    {core::DiscardPolicy::kPriority, "priority"},
}};
inline constexpr std::array<Named<core::MissingReportAction>, 3> kMissingActions = {{
    {core::MissingReportAction::kHold, "hold"},
    {core::MissingReportAction::kIncrease, "increase"},
    {core::MissingReportAction::kDecrease, "decrease"},
}};
inline constexpr std::array<Named<MissingChunkFill>, 2> kFills = {
    {{MissingChunkFill::kZero, "zero"}, {MissingChunkFill::kOwn, "own"}}};
// The control policies this configuration accepts; the factory in core builds them.
inline constexpr std::array<std::string_view, 5> kControlPolicies = {"basic", "history", "fixed",
                                                                     "adaptive", "capacity"};
// How sessions without PDFB are controlled (docs/rtsp.md "Adaptation from Receiver Reports").
inline constexpr std::array<std::string_view, 2> kPlayerAdaptations = {"rr", "fixed"};
inline constexpr std::array<std::string_view, 2> kBrowserPolicies = {"player", "client"};
inline constexpr std::array<std::string_view, 7> kLogLevels = {"trace", "debug",    "info", "warn",
                                                               "error", "critical", "off"};

template <typename E, std::size_t N>
std::string_view name_of(const std::array<Named<E>, N>& table, E value) {
  for (const auto& n : table) {
    if (n.value == value) {
      return n.name;
    }
  }
  return "?";
}

/// "one of \"a\", \"b\"" for an error message, from a name table or a list of names.
template <typename Range>
std::string one_of(const Range& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) {
      out += ", ";
    }
    if constexpr (std::is_convertible_v<decltype(n), std::string_view>) {
      out += '"' + std::string(n) + '"';
    } else {
      out += '"' + std::string(n.name) + '"';
    }
  }
  return "one of " + out;
}

/// Levenshtein distance, for "did you mean" hints on misspelt keys.
std::size_t edit_distance(std::string_view a, std::string_view b);
/// A key for an error message: as is when plain, quoted and escaped when it holds odd bytes.
std::string key_text(std::string_view key);
/// A number as an operator wrote it (shortest stream form).
std::string format_number(double v);
/// Letters, digits, '.', '_' and '-', 1..64 bytes, not "." or "..".
bool is_stream_name(std::string_view s);

// ---- validation (shared by parse_config and validate_config) --------------------------------

/// A cross-key problem found after reading, located by its dotted key.
struct Problem {
  std::string key;  // dotted path of the offending key
  std::string message;
};

/// Keeps the first problem found; the section checks run in file order.
class Problems {
 public:
  /// Records `q` unless a problem was recorded before.
  void add(std::optional<Problem> q) {
    if (!first_ && q) {
      first_ = std::move(q);
    }
  }
  /// Whether a problem was recorded.
  bool any() const { return first_.has_value(); }
  /// The first problem, if any.
  std::optional<Problem> take() { return std::move(first_); }

 private:
  std::optional<Problem> first_;
};

/// A problem when `v` is outside [lo, hi].
std::optional<Problem> range_problem(std::string key, std::uint64_t v, std::uint64_t lo,
                                     std::uint64_t hi);
/// A problem when `v` is not a rate in [0, 1].
std::optional<Problem> rate_problem(std::string key, double v);

// ---- TOML reading ---------------------------------------------------------------------------

/// The TOML type of a node as an error message names it.
std::string_view type_name(const toml::node& n);

/// One key of a section: how to read it into the config.
struct Key {
  std::string_view name;
  std::function<void(const toml::node&)> read;
  bool removed = false;  // Read only to refuse it with a message naming its successor.
};

/// Reads sections strictly and keeps the first error, located as file:line:column.
class Reader {
 public:
  /// `source` names the file in error messages.
  explicit Reader(std::string_view source) : source_(source) {}

  /// Whether an error was recorded (later reads record nothing).
  bool failed() const { return !error_.empty(); }
  /// The first error, with its location.
  const std::string& error() const { return error_; }

  /// "<source>:<line>:<column>: " for a region, "<source>: " without a line.
  std::string location(const toml::source_region& r) const;
  /// Records an error at `where` on `key` unless one was recorded before.
  void fail(const toml::source_region& where, std::string_view key, std::string message);
  /// Records "expected <expected>, got <type of n>".
  void fail_type(const toml::node& n, std::string_view key, std::string_view expected);

  /// Reads a section's keys; unknown keys are errors with a hint when one is close.
  void section(const toml::table& t, std::string_view prefix, const std::vector<Key>& keys);

  /// The dotted key being read.
  const std::string& current() const { return current_; }
  /// From now on every section() call lists its keys (dotted) into `out`.
  void list_keys_into(std::vector<std::string>* out) { keys_seen_ = out; }

  /// An integer in [lo, hi], or an error on the current key.
  std::optional<std::int64_t> integer(const toml::node& n, std::int64_t lo, std::int64_t hi);
  /// A finite integer or float, or an error on the current key.
  std::optional<double> number(const toml::node& n);
  /// A string, or an error on the current key.
  std::optional<std::string> string(const toml::node& n);
  /// A boolean, or an error on the current key.
  std::optional<bool> boolean(const toml::node& n);

  /// One of the names of `table` into `out`, or an error listing them.
  template <typename E, std::size_t N>
  void enumeration(const toml::node& n, const std::array<Named<E>, N>& table, E& out) {
    const auto s = string(n);
    if (!s) {
      return;
    }
    for (const auto& e : table) {
      if (e.name == *s) {
        out = e.value;
        return;
      }
    }
    fail(n.source(), current_,
         "must be " + one_of(table) + ", got " + core::text::quote_for_error(*s));
  }

  /// An integer in [lo, hi] into `out`; `out` is left alone on an error.
  template <typename T>
  void unsigned_into(const toml::node& n, T& out, std::int64_t lo, std::int64_t hi) {
    if (const auto v = integer(n, lo, hi)) {
      out = static_cast<T>(*v);
    }
  }

  /// A "host:port" string into `out` (parse_endpoint's rules).
  void endpoint_into(const toml::node& n, Endpoint& out, bool allow_zero);

 private:
  std::string_view source_;
  std::string error_;
  std::string current_;
  std::vector<std::string>* keys_seen_ = nullptr;
};

/// Finds the node of a dotted key for an error location (streams keys contain no dots).
const toml::node* find_node(const toml::table& root, std::string_view key);

// ---- the sections (one file each) -----------------------------------------------------------
// Each read_* reads one table through Reader::section (so its keys are listed for
// accepted_config_keys); each check_* adds that section's cross-key problems in file order.

/// [server] (config_server.cpp); `stream` is whether server.mode is "stream".
void read_server(Reader& r, const toml::table& t, ServerSettings& s, bool stream);
/// [server.streams] (config_streams.cpp): name = "path" or a published stream's table.
void read_streams(Reader& r, const toml::node& n, std::vector<StreamEntry>& out);
/// Checks [server] (config_server.cpp).
void check_server(const ServerSettings& s, Problems& problems);

/// Which of the two exclusive [blocks] sizes the file set (config_blocks.cpp).
struct BlockSizeKeys {
  bool duration = false;
  bool bytes = false;
};
/// [blocks]; notes in `seen` which size keys were there.
void read_blocks(Reader& r, const toml::table& t, BlockConfig& b, BlockSizeKeys& seen);
/// After the whole file: duration_ms and bytes are exclusive, bytes replaces the default.
void finish_blocks(const toml::table& root, Reader& r, BlockConfig& b, const BlockSizeKeys& seen);
/// Checks [blocks].
void check_blocks(const BlockConfig& b, Problems& problems);
/// [discard] (config_blocks.cpp too: how a stage's packets are chosen).
void read_discard(Reader& r, const toml::table& t, DiscardConfig& d);

/// [control] with [control.adaptive] and [control.capacity] (config_control.cpp).
void read_control(Reader& r, const toml::table& t, ControlConfig& c);
/// Checks [control].
void check_control(const ControlConfig& k, Problems& problems);

/// [ddl] (config_ddl.cpp).
void read_ddl(Reader& r, const toml::table& t, DdlConfig& d);
/// Checks [ddl].
void check_ddl(const DdlConfig& d, Problems& problems);

}  // namespace predrop::config::detail

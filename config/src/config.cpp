// Server configuration from TOML (toml++). The only file that includes toml++.
#include "predrop/config/config.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <type_traits>

#include "predrop/core/text_util.hpp"

namespace predrop::config {

using core::make_error;
using core::text::quote_for_error;

namespace {

// ---- names ----------------------------------------------------------------------------------

template <typename E>
struct Named {
  E value;
  std::string_view name;
};

constexpr std::array<Named<ServerMode>, 2> kModes = {
    {{ServerMode::kStream, "stream"}, {ServerMode::kDdl, "ddl"}}};
constexpr std::array<Named<std::optional<wire::SrtpSuite>>, 4> kSuites = {{
    {wire::SrtpSuite::AesCm128HmacSha1_80, "AES_CM_128_HMAC_SHA1_80"},
    {wire::SrtpSuite::AesCm128HmacSha1_32, "AES_CM_128_HMAC_SHA1_32"},
    {wire::SrtpSuite::AeadAes128Gcm, "AEAD_AES_128_GCM"},
    {std::nullopt, "none"},
}};
constexpr std::array<Named<Pacing>, 2> kPacings = {
    {{Pacing::kPaced, "paced"}, {Pacing::kBurst, "burst"}}};
constexpr std::array<Named<core::DiscardPolicy>, 3> kDiscardPolicies = {{
    {core::DiscardPolicy::kUniform, "uniform"},
    {core::DiscardPolicy::kRandom, "random"},
    {core::DiscardPolicy::kPriority, "priority"},
}};
constexpr std::array<Named<core::MissingReportAction>, 3> kMissingActions = {{
    {core::MissingReportAction::kHold, "hold"},
    {core::MissingReportAction::kIncrease, "increase"},
    {core::MissingReportAction::kDecrease, "decrease"},
}};
constexpr std::array<Named<MissingChunkFill>, 2> kFills = {
    {{MissingChunkFill::kZero, "zero"}, {MissingChunkFill::kOwn, "own"}}};
// The control policies this configuration accepts; the factory in core builds them.
constexpr std::array<std::string_view, 5> kControlPolicies = {"basic", "history", "fixed",
                                                              "adaptive", "capacity"};
// How sessions without PDFB are controlled (docs/rtsp.md "Adaptation from Receiver Reports").
constexpr std::array<std::string_view, 2> kPlayerAdaptations = {"rr", "fixed"};
constexpr std::array<std::string_view, 7> kLogLevels = {"trace", "debug",    "info", "warn",
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

// Levenshtein distance, for "did you mean" hints on misspelt keys.
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

// A key for an error message: as is when plain, quoted and escaped when it holds odd bytes.
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

// ---- validation (shared by parse_config and validate_config) --------------------------------

struct Problem {
  std::string key;  // dotted path of the offending key
  std::string message;
};

std::optional<Problem> check_config(const ServerConfig& c) {
  const auto range_u = [](std::string key, std::uint64_t v, std::uint64_t lo,
                          std::uint64_t hi) -> std::optional<Problem> {
    if (v < lo || v > hi) {
      return Problem{std::move(key), "must be in [" + std::to_string(lo) + ", " +
                                         std::to_string(hi) + "], got " + std::to_string(v)};
    }
    return std::nullopt;
  };
  const auto rate = [](std::string key, double v) -> std::optional<Problem> {
    if (!std::isfinite(v) || v < 0.0 || v > 1.0) {
      return Problem{std::move(key), "must be a rate in [0, 1], got " + format_number(v)};
    }
    return std::nullopt;
  };
  std::optional<Problem> p;
  const auto first = [&](std::optional<Problem> q) {
    if (!p && q) {
      p = std::move(q);
    }
  };

  const auto& s = c.server;
  if (s.rtsp_listen.host.empty()) {
    first(Problem{"server.rtsp_listen", "host is empty"});
  }
  if (s.mode == ServerMode::kStream && s.streams.empty()) {
    first(Problem{"server.streams", "mode \"stream\" needs at least one stream (name = \"path\")"});
  }
  if (s.mode == ServerMode::kDdl && !s.streams.empty()) {
    first(Problem{"server.streams", "streams are only served with mode = \"stream\""});
  }
  for (const auto& st : s.streams) {
    if (!is_stream_name(st.name)) {
      first(Problem{"server.streams." + st.name,
                    "stream names use letters, digits, '.', '_' and '-' (1..64 bytes)"});
    }
    if (!st.publish && st.path.empty()) {
      first(Problem{"server.streams." + st.name, "path is empty"});
    }
  }
  first(range_u("server.max_sessions", s.max_sessions, 1, 10000));
  first(range_u("server.max_sessions_per_address", s.max_sessions_per_address, 1, 10000));
  first(range_u("server.max_rtsp_connections", s.max_rtsp_connections, 1, 10000));
  first(range_u("server.session_timeout_s", s.session_timeout_s, 2, 3600));
  first(range_u("server.rtsp_idle_timeout_s", s.rtsp_idle_timeout_s, 1, 3600));
  first(range_u("server.interleaved_queue_bytes", s.interleaved_queue_bytes, 0,
                kMaxInterleavedQueueBytes));
  first(range_u("server.workers", s.workers, 0, kMaxWorkers));
  if (s.metrics_listen && s.metrics_listen->host.empty()) {
    first(Problem{"server.metrics_listen", "host is empty"});
  }
  if (std::find(kLogLevels.begin(), kLogLevels.end(), s.log_level) == kLogLevels.end()) {
    first(Problem{"server.log_level", "must be " + one_of(kLogLevels) + ", got " +
                                          core::text::quote_for_error(s.log_level)});
  }

  const auto& b = c.blocks;
  if (b.duration_ms && b.bytes) {
    first(Problem{"blocks.bytes", "set either blocks.duration_ms or blocks.bytes, not both"});
  } else if (!b.duration_ms && !b.bytes) {
    first(Problem{"blocks.duration_ms", "set one of blocks.duration_ms or blocks.bytes"});
  }
  if (b.duration_ms) {
    first(range_u("blocks.duration_ms", *b.duration_ms, 10, 60000));
  }
  if (b.bytes) {
    first(range_u("blocks.bytes", *b.bytes, 1500, std::uint64_t{1} << 30));
  }
  first(range_u("blocks.rtp_payload_bytes", b.rtp_payload_bytes, 256, 8192));
  first(range_u("blocks.pacing_quantum_ms", b.pacing_quantum_ms, 0, 50));

  const auto& k = c.control;
  if (std::find(kControlPolicies.begin(), kControlPolicies.end(), k.policy) ==
      kControlPolicies.end()) {
    first(Problem{"control.policy", "must be " + one_of(kControlPolicies) + ", got " +
                                        core::text::quote_for_error(k.policy)});
  }
  first(rate("control.r0", k.r0));
  first(rate("control.rp", k.rp));
  first(rate("control.rp1", k.rp1));
  first(rate("control.rp2", k.rp2));
  first(rate("control.rmax", k.rmax));
  first(rate("control.fixed_rate", k.fixed_rate));
  first(rate("control.player_rate", k.player_rate));
  if (std::find(kPlayerAdaptations.begin(), kPlayerAdaptations.end(), k.player_adaptation) ==
      kPlayerAdaptations.end()) {
    first(
        Problem{"control.player_adaptation", "must be " + one_of(kPlayerAdaptations) + ", got " +
                                                 core::text::quote_for_error(k.player_adaptation)});
  }
  if (!p && k.rmax < k.rp) {
    first(Problem{"control.rmax", "must be >= control.rp (" + format_number(k.rmax) + " < " +
                                      format_number(k.rp) + ")"});
  }
  if (!p && k.rmax < k.r0) {
    first(Problem{"control.rmax", "must be >= control.r0 (" + format_number(k.rmax) + " < " +
                                      format_number(k.r0) + ")"});
  }
  first(range_u("control.k", k.k, 1, 1024));
  if (!p && k.policy == "basic" && k.k != 1) {
    first(Problem{"control.k",
                  "policy \"basic\" is the k = 1 rule; use policy = \"history\" for k = " +
                      std::to_string(k.k)});
  }
  const auto threshold = [&](const std::string& key, const ThresholdSetting& t) {
    if (!std::isfinite(t.value) || t.value < 0.0) {
      first(Problem{key, "must be >= 0, got " + format_number(t.value)});
    } else if (t.relative && t.value > 10.0) {
      first(Problem{key, "relative threshold above 1000 %"});
    }
  };
  {
    const AdaptiveTuning& a = k.adaptive;
    if (a.clean_loss > a.loss_threshold) {
      first(Problem{"control.adaptive.clean_loss", "must be <= control.adaptive.loss_threshold (" +
                                                       format_number(a.clean_loss) + " > " +
                                                       format_number(a.loss_threshold) + ")"});
    }
    if (a.queue_low_ms > a.queue_high_ms) {
      first(Problem{"control.adaptive.queue_low_ms", "must be <= control.adaptive.queue_high_ms (" +
                                                         format_number(a.queue_low_ms) + " > " +
                                                         format_number(a.queue_high_ms) + ")"});
    }
    if (a.creep_queue_ms > a.queue_low_ms) {
      first(Problem{"control.adaptive.creep_queue_ms",
                    "must be <= control.adaptive.queue_low_ms (" + format_number(a.creep_queue_ms) +
                        " > " + format_number(a.queue_low_ms) + ")"});
    }
    if (a.hold_stages > a.max_hold_stages) {
      first(
          Problem{"control.adaptive.hold_stages", "must be <= control.adaptive.max_hold_stages (" +
                                                      std::to_string(a.hold_stages) + " > " +
                                                      std::to_string(a.max_hold_stages) + ")"});
    }
    if (k.policy == "adaptive" && a.pulse_rate > k.rmax) {
      first(Problem{"control.adaptive.pulse_rate", "must be <= control.rmax (" +
                                                       format_number(a.pulse_rate) + " > " +
                                                       format_number(k.rmax) + ")"});
    }
  }
  threshold("control.t1", k.t1);
  threshold("control.t2", k.t2);
  first(range_u("control.report_timeout_stages", k.report_timeout_stages, 1, 1000));
  if (!std::isfinite(k.psnr_cap_db) || k.psnr_cap_db <= 0.0 || k.psnr_cap_db > 200.0) {
    first(Problem{"control.psnr_cap_db",
                  "must be in (0, 200] dB, got " + format_number(k.psnr_cap_db)});
  }
  if (!(std::isfinite(k.capacity.margin) && k.capacity.margin > 0.0 && k.capacity.margin <= 1.0)) {
    first(Problem{"control.capacity.margin",
                  "must be in (0, 1], got " + format_number(k.capacity.margin)});
  }
  if (!(std::isfinite(k.capacity.queue_target_ms) && k.capacity.queue_target_ms >= 0.0 &&
        k.capacity.queue_target_ms <= 60.0)) {
    first(Problem{"control.capacity.queue_target_ms",
                  "must be in [0, 60] ms, got " + format_number(k.capacity.queue_target_ms)});
  }
  if (!(std::isfinite(k.capacity.increase_step) && k.capacity.increase_step > 0.0 &&
        k.capacity.increase_step <= 1.0)) {
    first(Problem{"control.capacity.increase_step",
                  "must be in (0, 1], got " + format_number(k.capacity.increase_step)});
  }
  if (!(std::isfinite(k.capacity.probe_gain) && k.capacity.probe_gain > 1.0 &&
        k.capacity.probe_gain <= 4.0)) {
    first(Problem{"control.capacity.probe_gain",
                  "must be in (1, 4], got " + format_number(k.capacity.probe_gain)});
  }
  if (!(std::isfinite(k.capacity.pacing_gain) &&
        (k.capacity.pacing_gain == 0.0 ||
         (k.capacity.pacing_gain >= 1.0 && k.capacity.pacing_gain <= 10.0)))) {
    first(Problem{
        "control.capacity.pacing_gain",
        "must be 0 (no pacing limit) or in [1, 10], got " + format_number(k.capacity.pacing_gain)});
  }
  if (std::isnan(k.capacity.quality_floor)) {
    first(Problem{"control.capacity.quality_floor", "must be a number"});
  }
  {
    const CapacityTuning& t = k.capacity;
    const auto in = [&](const char* key, double v, double lo, double hi) {
      if (!(std::isfinite(v) && v >= lo && v <= hi)) {
        first(Problem{std::string("control.capacity.") + key, "must be in [" + format_number(lo) +
                                                                  ", " + format_number(hi) +
                                                                  "], got " + format_number(v)});
      }
    };
    in("loss_threshold", t.loss_threshold, 0.0, 1.0);
    in("decrease_factor", t.decrease_factor, 0.5, 1.0);
    first(range_u("control.capacity.compete_blocks", t.compete_blocks, 1, 1000));
    in("compete_loss_high", t.compete_loss_high, 0.0, 1.0);
    in("compete_loss_low", t.compete_loss_low, 0.0, t.compete_loss_high);
    in("compete_gain", t.compete_gain, 1.0, 2.0);
    in("missing_backoff", t.missing_backoff, 0.01, 1.0);
  }

  const auto& d = c.ddl;
  if (d.listen.host.empty()) {
    first(Problem{"ddl.listen", "host is empty"});
  }
  first(range_u("ddl.workers", d.workers, 1, 4096));
  if (d.stage_deadline_ms) {
    first(range_u("ddl.stage_deadline_ms", *d.stage_deadline_ms, 1, 600000));
  }
  first(range_u("ddl.chunk_bytes", d.chunk_bytes, 64, 8192));
  first(range_u("ddl.max_tensor_elements", d.max_tensor_elements, 1, 4294967295u));
  return p;
}

// ---- TOML reading ---------------------------------------------------------------------------

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

// One key of a section: how to read it into the config.
struct Key {
  std::string_view name;
  std::function<void(const toml::node&)> read;
  bool removed = false;  // Read only to refuse it with a message naming its successor.
};

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

  std::string location(const toml::source_region& r) const {
    std::string out(source_);
    if (r.begin.line != 0) {
      out += ':' + std::to_string(r.begin.line) + ':' + std::to_string(r.begin.column);
    }
    return out + ": ";
  }

  void fail(const toml::source_region& where, std::string_view key, std::string message) {
    if (failed()) {
      return;
    }
    error_ = location(where) + std::string(key) + ": " + std::move(message);
  }

  void fail_type(const toml::node& n, std::string_view key, std::string_view expected) {
    fail(n.source(), key,
         "expected " + std::string(expected) + ", got " + std::string(type_name(n)));
  }

  // Reads a section's keys; unknown keys are errors with a hint when one is close.
  void section(const toml::table& t, std::string_view prefix, const std::vector<Key>& keys) {
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
      const auto it = std::find_if(keys.begin(), keys.end(),
                                   [&](const Key& key) { return key.name == k.str(); });
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

  const std::string& current() const { return current_; }
  /// From now on every section() call lists its keys (dotted) into `out`.
  void list_keys_into(std::vector<std::string>* out) { keys_seen_ = out; }

  std::optional<std::int64_t> integer(const toml::node& n, std::int64_t lo, std::int64_t hi) {
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

  std::optional<double> number(const toml::node& n) {
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

  std::optional<std::string> string(const toml::node& n) {
    const auto* s = n.as_string();
    if (!s) {
      fail_type(n, current_, "a string");
      return std::nullopt;
    }
    return s->get();
  }

  std::optional<bool> boolean(const toml::node& n) {
    const auto* b = n.as_boolean();
    if (!b) {
      fail_type(n, current_, "a boolean");
      return std::nullopt;
    }
    return b->get();
  }

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

  template <typename T>
  void unsigned_into(const toml::node& n, T& out, std::int64_t lo, std::int64_t hi) {
    if (const auto v = integer(n, lo, hi)) {
      out = static_cast<T>(*v);
    }
  }

  void endpoint_into(const toml::node& n, Endpoint& out, bool allow_zero) {
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

 private:
  std::string_view source_;
  std::string error_;
  std::string current_;
  std::vector<std::string>* keys_seen_ = nullptr;
};

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

void read_all(const toml::table& root, Reader& r, ServerConfig& c) {
  // The mode decides which sections are allowed, so read it first.
  if (const auto* server = root.get_as<toml::table>("server")) {
    if (const auto* mode = server->get("mode")) {
      // Reported with its key path like every other error.
      const auto s = mode->as_string();
      if (!s) {
        r.fail_type(*mode, "server.mode", "a string");
        return;
      }
      bool found = false;
      for (const auto& m : kModes) {
        if (m.name == s->get()) {
          c.server.mode = m.value;
          found = true;
        }
      }
      if (!found) {
        r.fail(mode->source(), "server.mode",
               "must be " + one_of(kModes) + ", got " + core::text::quote_for_error(s->get()));
        return;
      }
    }
  }
  const bool stream = c.server.mode == ServerMode::kStream;
  const auto only_stream = [&](const toml::node& n) {
    r.fail(n.source(), r.current(), "only valid with server.mode = \"stream\"");
  };

  const std::vector<Key> server_keys = {
      {"mode", [](const toml::node&) {}},  // read above
      {"rtsp_listen",
       [&](const toml::node& n) {
         if (!stream) {
           return only_stream(n);
         }
         r.endpoint_into(n, c.server.rtsp_listen, true);
       }},
      {"streams",
       [&](const toml::node& n) {
         if (!stream) {
           return only_stream(n);
         }
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "server.streams", "a table of name = \"path\"");
         }
         for (const auto& [name, path] : *t) {
           const std::string key = "server.streams." + std::string(name.str());
           if (!is_stream_name(name.str())) {
             return r.fail(name.source(), key_text(key),
                           "stream names use letters, digits, '.', '_' and '-' (1..64 bytes)");
           }
           if (const auto* live = path.as_table()) {
             // [server.streams.<name>]: a published stream (docs/live.md).
             StreamEntry e;
             e.name = std::string(name.str());
             bool has_source = false;
             bool has_secret = false;
             r.section(*live, key,
                       {{"source",
                         [&](const toml::node& v) {
                           const auto s = r.string(v);
                           if (!s) return;
                           if (*s != "publish") {
                             return r.fail(v.source(), r.current(),
                                           "must be \"publish\" (a file is " + key +
                                               " = \"path\"; pulling rtsp:// is not built yet), "
                                               "got " +
                                               core::text::quote_for_error(*s));
                           }
                           has_source = true;
                         }},
                        {"publish_secret",
                         [&](const toml::node& v) {
                           const auto s = r.string(v);
                           if (!s) return;
                           const bool url_safe = std::all_of(s->begin(), s->end(), [](char ch) {
                             return std::isalnum(static_cast<unsigned char>(ch)) != 0 ||
                                    ch == '-' || ch == '_' || ch == '.' || ch == '~';
                           });
                           if (s->size() < kMinPublishSecret || !url_safe) {
                             return r.fail(v.source(), r.current(),
                                           "must be at least " + std::to_string(kMinPublishSecret) +
                                               " characters of A-Z a-z 0-9 - _ . ~ (it goes in "
                                               "the publisher's URL unescaped)");
                           }
                           e.publish_secret = *s;
                           has_secret = true;
                         }},
                        {"replace", [&](const toml::node& v) {
                           if (const auto b = r.boolean(v)) e.replace = *b;
                         }}});
             if (r.failed()) return;
             if (!has_source) {
               return r.fail(path.source(), key_text(key),
                             "a stream table needs source = \"publish\"");
             }
             if (!has_secret) {
               return r.fail(path.source(), key_text(key),
                             "a published stream needs publish_secret (viewers need none)");
             }
             e.publish = true;
             c.server.streams.push_back(std::move(e));
             continue;
           }
           const auto* p = path.as_string();
           if (!p) {
             return r.fail_type(path, key,
                                "a string (file path) or a table (source = \"publish\")");
           }
           if (p->get().empty()) {
             return r.fail(path.source(), key, "path is empty");
           }
           c.server.streams.push_back({std::string(name.str()), p->get()});
         }
       }},
      {"max_sessions",
       [&](const toml::node& n) { r.unsigned_into(n, c.server.max_sessions, 1, 10000); }},
      {"max_sessions_per_address",
       [&](const toml::node& n) {
         if (!stream) {
           return only_stream(n);
         }
         r.unsigned_into(n, c.server.max_sessions_per_address, 1, 10000);
       }},
      {"max_rtsp_connections",
       [&](const toml::node& n) {
         if (!stream) {
           return only_stream(n);
         }
         r.unsigned_into(n, c.server.max_rtsp_connections, 1, 10000);
       }},
      {"session_timeout_s",
       [&](const toml::node& n) { r.unsigned_into(n, c.server.session_timeout_s, 2, 3600); }},
      {"interleaved_queue_bytes",
       [&](const toml::node& n) {
         if (!stream) {
           return only_stream(n);
         }
         r.unsigned_into(n, c.server.interleaved_queue_bytes, 0, kMaxInterleavedQueueBytes);
       }},
      {"workers",
       [&](const toml::node& n) {
         if (!stream) {
           return only_stream(n);
         }
         if (n.is_string()) {
           auto w = parse_workers(n.as_string()->get());
           if (!w) {
             return r.fail(n.source(), r.current(), w.error().message);
           }
           c.server.workers = *w;
           return;
         }
         if (!n.is_integer()) {
           return r.fail_type(n, r.current(), "an integer or \"auto\"");
         }
         r.unsigned_into(n, c.server.workers, 0, kMaxWorkers);
       }},
      {"rtsp_idle_timeout_s",
       [&](const toml::node& n) {
         if (!stream) {
           return only_stream(n);
         }
         r.unsigned_into(n, c.server.rtsp_idle_timeout_s, 1, 3600);
       }},
      {"srtp", [&](const toml::node& n) { r.enumeration(n, kSuites, c.server.srtp); }},
      {"metrics_listen",
       [&](const toml::node& n) {
         const auto s = r.string(n);
         if (!s) {
           return;
         }
         if (s->empty()) {
           c.server.metrics_listen.reset();
           return;
         }
         Endpoint e;
         r.endpoint_into(n, e, true);
         if (!r.failed()) {
           c.server.metrics_listen = e;
         }
       }},
      {"trace_csv",
       [&](const toml::node& n) {
         if (auto s = r.string(n)) {
           c.server.trace_csv = std::move(*s);
         }
       }},
      {"api_token",
       [&](const toml::node& n) {
         auto s = r.string(n);
         if (!s) {
           return;
         }
         // Sent in an HTTP header: printable ASCII without spaces, and long enough to matter.
         const bool printable =
             std::all_of(s->begin(), s->end(), [](char ch) { return ch > 0x20 && ch < 0x7f; });
         if (!s->empty() && (!printable || s->size() < 16 || s->size() > 256)) {
           r.fail(n.source(), "server.api_token",
                  "must be empty (read-only API) or 16..256 printable characters without spaces");
           return;
         }
         c.server.api_token = std::move(*s);
       }},
      {"log_level",
       [&](const toml::node& n) {
         const auto s = r.string(n);
         if (!s) {
           return;
         }
         if (std::find(kLogLevels.begin(), kLogLevels.end(), *s) == kLogLevels.end()) {
           return r.fail(
               n.source(), "server.log_level",
               "must be " + one_of(kLogLevels) + ", got " + core::text::quote_for_error(*s));
         }
         c.server.log_level = *s;
       }},
  };

  bool has_duration = false;
  bool has_bytes = false;
  const std::vector<Key> block_keys = {
      {"duration_ms",
       [&](const toml::node& n) {
         std::uint32_t v = 0;
         r.unsigned_into(n, v, 10, 60000);
         c.blocks.duration_ms = v;
         has_duration = true;
       }},
      {"bytes",
       [&](const toml::node& n) {
         std::uint64_t v = 0;
         r.unsigned_into(n, v, 1500, std::int64_t{1} << 30);
         c.blocks.bytes = v;
         has_bytes = true;
       }},
      {"pacing", [&](const toml::node& n) { r.enumeration(n, kPacings, c.blocks.pacing); }},
      {"rtp_payload_bytes",
       [&](const toml::node& n) { r.unsigned_into(n, c.blocks.rtp_payload_bytes, 256, 8192); }},
      {"pacing_quantum_ms",
       [&](const toml::node& n) { r.unsigned_into(n, c.blocks.pacing_quantum_ms, 0, 50); }},
  };

  const auto rate_key = [&](double& field) {
    return [&r, &field](const toml::node& n) {
      const auto v = r.number(n);
      if (!v) {
        return;
      }
      if (*v < 0.0 || *v > 1.0) {
        return r.fail(n.source(), r.current(),
                      "must be a rate in [0, 1], got " + format_number(*v));
      }
      field = *v;
    };
  };
  const auto threshold_key = [&](ThresholdSetting& field, bool delay) {
    return [&r, &field, delay](const toml::node& n) {
      if (n.is_integer() || n.is_floating_point()) {
        const auto v = r.number(n);
        if (!v) {
          return;
        }
        if (*v < 0.0) {
          return r.fail(n.source(), r.current(), "must be >= 0");
        }
        field = ThresholdSetting{*v, false};
        return;
      }
      if (!n.is_string()) {
        return r.fail_type(n, r.current(),
                           delay ? "a number of µs or a string like \"5%\" or \"2ms\""
                                 : "a number or a string like \"5%\" or \"0.5dB\"");
      }
      const auto text = n.as_string()->get();
      auto t = delay ? parse_delay_threshold(text) : parse_performance_threshold(text);
      if (!t) {
        return r.fail(n.source(), r.current(), t.error().message);
      }
      field = *t;
    };
  };
  // A finite number within [lo, hi] for the capacity policy's keys (unit in the message).
  const auto number_key = [&](double& field, std::string key, double lo, double hi,
                              const char* unit) {
    return [&r, &field, key = std::move(key), lo, hi, unit](const toml::node& n) {
      const auto v = r.number(n);
      if (!v) {
        return;
      }
      if (!std::isfinite(*v) || *v < lo || *v > hi) {
        return r.fail(n.source(), key,
                      "must be in [" + format_number(lo) + ", " + format_number(hi) + "]" + unit +
                          ", got " + format_number(*v));
      }
      field = *v;
    };
  };
  // A capacity key of [control] before [control.capacity] existed: refused, naming its home.
  const auto moved_key = [&](std::string_view name) {
    return Key{name,
               [&r, name](const toml::node& n) {
                 r.fail(n.source(), "control." + std::string(name),
                        "moved to [control.capacity] (write it under that table; "
                        "configs/README.md)");
               },
               true};
  };
  const std::vector<Key> control_keys = {
      {"policy",
       [&](const toml::node& n) {
         const auto s = r.string(n);
         if (!s) {
           return;
         }
         if (std::find(kControlPolicies.begin(), kControlPolicies.end(), *s) ==
             kControlPolicies.end()) {
           return r.fail(
               n.source(), "control.policy",
               "must be " + one_of(kControlPolicies) + ", got " + core::text::quote_for_error(*s));
         }
         c.control.policy = *s;
       }},
      {"r0", rate_key(c.control.r0)},
      {"rp", rate_key(c.control.rp)},
      {"rp1", rate_key(c.control.rp1)},
      {"rp2", rate_key(c.control.rp2)},
      {"rmax", rate_key(c.control.rmax)},
      {"fixed_rate", rate_key(c.control.fixed_rate)},
      {"player_rate", rate_key(c.control.player_rate)},
      {"player_adaptation",
       [&](const toml::node& n) {
         const auto s = r.string(n);
         if (!s) {
           return;
         }
         if (std::find(kPlayerAdaptations.begin(), kPlayerAdaptations.end(), *s) ==
             kPlayerAdaptations.end()) {
           return r.fail(n.source(), "control.player_adaptation",
                         "must be " + one_of(kPlayerAdaptations) + ", got " +
                             core::text::quote_for_error(*s));
         }
         c.control.player_adaptation = *s;
       }},
      {"t1", threshold_key(c.control.t1, false)},
      {"t2", threshold_key(c.control.t2, true)},
      {"adaptive",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "control.adaptive", "a table ([control.adaptive])");
         }
         AdaptiveTuning& a = c.control.adaptive;
         const std::vector<Key> keys = {
             {"loss_threshold",
              number_key(a.loss_threshold, "control.adaptive.loss_threshold", 0.0, 1.0, "")},
             {"clean_loss", number_key(a.clean_loss, "control.adaptive.clean_loss", 0.0, 1.0, "")},
             {"margin", number_key(a.margin, "control.adaptive.margin", 0.01, 1.0, "")},
             {"drain_margin",
              number_key(a.drain_margin, "control.adaptive.drain_margin", 0.01, 1.0, "")},
             {"queue_high_ms",
              number_key(a.queue_high_ms, "control.adaptive.queue_high_ms", 0.0, 10000.0, " ms")},
             {"queue_low_ms",
              number_key(a.queue_low_ms, "control.adaptive.queue_low_ms", 0.0, 10000.0, " ms")},
             {"stretch_min_ms",
              number_key(a.stretch_min_ms, "control.adaptive.stretch_min_ms", 0.0, 10000.0, " ms")},
             {"base_window",
              [&](const toml::node& v) { r.unsigned_into(v, a.base_window, 1, 1024); }},
             {"hold_stages",
              [&](const toml::node& v) { r.unsigned_into(v, a.hold_stages, 1, 1024); }},
             {"max_hold_stages",
              [&](const toml::node& v) { r.unsigned_into(v, a.max_hold_stages, 1, 1024); }},
             {"pulse_rate", rate_key(a.pulse_rate)},
             {"creep_step", rate_key(a.creep_step)},
             {"creep_queue_ms",
              number_key(a.creep_queue_ms, "control.adaptive.creep_queue_ms", 0.0, 10000.0, " ms")},
             {"quality_floor",
              number_key(a.quality_floor, "control.adaptive.quality_floor", -1e9, 1e9, "")},
         };
         r.section(*t, "control.adaptive", keys);
       }},
      {"k", [&](const toml::node& n) { r.unsigned_into(n, c.control.k, 1, 1024); }},
      {"missing_report",
       [&](const toml::node& n) { r.enumeration(n, kMissingActions, c.control.missing_report); }},
      {"report_timeout_stages",
       [&](const toml::node& n) { r.unsigned_into(n, c.control.report_timeout_stages, 1, 1000); }},
      {"psnr_cap_db",
       [&](const toml::node& n) {
         const auto v = r.number(n);
         if (!v) {
           return;
         }
         if (*v <= 0.0 || *v > 200.0) {
           return r.fail(n.source(), "control.psnr_cap_db",
                         "must be in (0, 200] dB, got " + format_number(*v));
         }
         c.control.psnr_cap_db = *v;
       }},
      {"capacity",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "control.capacity", "a table ([control.capacity])");
         }
         CapacityTuning& a = c.control.capacity;
         const std::vector<Key> keys = {
             {"margin", number_key(a.margin, "control.capacity.margin", 0.01, 1.0, "")},
             {"queue_target_ms",
              number_key(a.queue_target_ms, "control.capacity.queue_target_ms", 0.0, 60.0, " ms")},
             {"increase_step",
              number_key(a.increase_step, "control.capacity.increase_step", 0.0, 1.0, "")},
             {"probe_gain", number_key(a.probe_gain, "control.capacity.probe_gain", 1.0, 4.0, "")},
             {"pacing_gain",
              number_key(a.pacing_gain, "control.capacity.pacing_gain", 0.0, 10.0, "")},
             {"quality_floor",
              number_key(a.quality_floor, "control.capacity.quality_floor", -1e9, 1e9, "")},
             {"loss_threshold",
              number_key(a.loss_threshold, "control.capacity.loss_threshold", 0.0, 1.0, "")},
             {"decrease_factor",
              number_key(a.decrease_factor, "control.capacity.decrease_factor", 0.5, 1.0, "")},
             {"compete_blocks",
              [&](const toml::node& v) { r.unsigned_into(v, a.compete_blocks, 1, 1000); }},
             {"compete_loss_high",
              number_key(a.compete_loss_high, "control.capacity.compete_loss_high", 0.0, 1.0, "")},
             {"compete_loss_low",
              number_key(a.compete_loss_low, "control.capacity.compete_loss_low", 0.0, 1.0, "")},
             {"compete_gain",
              number_key(a.compete_gain, "control.capacity.compete_gain", 1.0, 2.0, "")},
             {"missing_backoff",
              number_key(a.missing_backoff, "control.capacity.missing_backoff", 0.01, 1.0, "")},
         };
         r.section(*t, "control.capacity", keys);
       }},
      // Removed with the capacity policy's redesign (issue 21) or moved to [control.capacity]
      // (issue 25): say so instead of "unknown key".
      {"probe_step_ms",
       [&](const toml::node& n) {
         r.fail(n.source(), "control.probe_step_ms",
                "was removed: the capacity policy now probes by control.capacity.increase_step "
                "and control.capacity.probe_gain (configs/README.md)");
       },
       true},
      {"probe_max_ms",
       [&](const toml::node& n) {
         r.fail(n.source(), "control.probe_max_ms",
                "was removed: the capacity policy now probes by control.capacity.increase_step "
                "and control.capacity.probe_gain (configs/README.md)");
       },
       true},
      moved_key("margin"),
      moved_key("queue_target_ms"),
      moved_key("increase_step"),
      moved_key("probe_gain"),
      moved_key("pacing_gain"),
      moved_key("quality_floor"),
  };

  const std::vector<Key> discard_keys = {
      {"policy",
       [&](const toml::node& n) { r.enumeration(n, kDiscardPolicies, c.discard.policy); }},
      {"seed",
       [&](const toml::node& n) {
         r.unsigned_into(n, c.discard.seed, 0, std::numeric_limits<std::int64_t>::max());
       }},
  };

  const std::vector<Key> ddl_keys = {
      {"listen", [&](const toml::node& n) { r.endpoint_into(n, c.ddl.listen, true); }},
      {"workers", [&](const toml::node& n) { r.unsigned_into(n, c.ddl.workers, 1, 4096); }},
      {"stage_deadline_ms",
       [&](const toml::node& n) {
         if (const auto* s = n.as_string()) {
           if (s->get() != "adaptive") {
             return r.fail(n.source(), "ddl.stage_deadline_ms",
                           "must be a number of ms or \"adaptive\", got " +
                               core::text::quote_for_error(s->get()));
           }
           c.ddl.stage_deadline_ms.reset();
           return;
         }
         if (!n.is_integer()) {
           return r.fail_type(n, "ddl.stage_deadline_ms", "an integer (ms) or \"adaptive\"");
         }
         std::uint32_t v = 0;
         r.unsigned_into(n, v, 1, 600000);
         c.ddl.stage_deadline_ms = v;
       }},
      {"missing_chunk_fill",
       [&](const toml::node& n) { r.enumeration(n, kFills, c.ddl.missing_chunk_fill); }},
      {"chunk_bytes",
       [&](const toml::node& n) { r.unsigned_into(n, c.ddl.chunk_bytes, 64, 8192); }},
      {"max_tensor_elements",
       [&](const toml::node& n) { r.unsigned_into(n, c.ddl.max_tensor_elements, 1, 4294967295); }},
      {"worker_egress_discard",
       [&](const toml::node& n) {
         if (const auto b = r.boolean(n)) {
           c.ddl.worker_egress_discard = *b;
         }
       }},
      {"pacing", [&](const toml::node& n) { r.enumeration(n, kPacings, c.ddl.pacing); }},
  };

  const std::vector<Key> top_keys = {
      {"server",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "server", "a table ([server])");
         }
         r.section(*t, "server", server_keys);
       }},
      {"blocks",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "blocks", "a table ([blocks])");
         }
         if (!stream) {
           return r.fail(n.source(), "blocks", "only valid with server.mode = \"stream\"");
         }
         r.section(*t, "blocks", block_keys);
       }},
      {"control",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "control", "a table ([control])");
         }
         r.section(*t, "control", control_keys);
       }},
      {"discard",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "discard", "a table ([discard])");
         }
         r.section(*t, "discard", discard_keys);
       }},
      {"ddl",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "ddl", "a table ([ddl])");
         }
         if (stream) {
           return r.fail(n.source(), "ddl", "only valid with server.mode = \"ddl\"");
         }
         r.section(*t, "ddl", ddl_keys);
       }},
  };
  // Iterate the root like a section so that unknown top-level tables are caught too.
  for (const auto& entry : root) {
    const toml::key& k = entry.first;
    const toml::node& node = entry.second;
    if (r.failed()) {
      return;
    }
    const auto it = std::find_if(top_keys.begin(), top_keys.end(),
                                 [&](const Key& key) { return key.name == k.str(); });
    if (it == top_keys.end()) {
      std::string hint;
      for (const auto& key : top_keys) {
        if (edit_distance(k.str(), key.name) <= 2) {
          hint = " (did you mean [" + std::string(key.name) + "]?)";
        }
      }
      r.fail(k.source(), key_text(k.str()), "unknown section or key" + hint);
      return;
    }
    it->read(node);
  }
  if (r.failed()) {
    return;
  }
  // toml++ tables iterate in key order, so the exclusivity check comes after the whole section.
  if (has_bytes && has_duration) {
    const auto* bytes = find_node(root, "blocks.bytes");
    return r.fail(bytes ? bytes->source() : root.source(), "blocks.bytes",
                  "set either blocks.duration_ms or blocks.bytes, not both");
  }
  if (has_bytes) {
    c.blocks.duration_ms.reset();
  }
  // TOML tables are unordered maps; sort streams so that the order never depends on the parser.
  std::sort(c.server.streams.begin(), c.server.streams.end(),
            [](const StreamEntry& a, const StreamEntry& b) { return a.name < b.name; });
}

}  // namespace

// ---- public ---------------------------------------------------------------------------------

core::Result<std::uint32_t> parse_workers(std::string_view text) {
  const std::string wanted =
      "\"auto\" or an integer in [0, " + std::to_string(kMaxWorkers) + "] (0 = auto, one per core)";
  if (text == "auto") {
    return std::uint32_t{0};
  }
  std::uint32_t v = 0;
  if (text.empty() || text.size() > 3) {
    return core::make_error("must be " + wanted + ", got " + core::text::quote_for_error(text));
  }
  for (const char ch : text) {
    if (ch < '0' || ch > '9') {
      return core::make_error("must be " + wanted + ", got " + core::text::quote_for_error(text));
    }
    v = v * 10 + static_cast<std::uint32_t>(ch - '0');
  }
  if (v > kMaxWorkers) {
    return core::make_error("must be " + wanted + ", got " + std::string(text));
  }
  return v;
}

core::Result<Endpoint> parse_endpoint(std::string_view text, bool allow_port_zero) {
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return make_error("expected \"[ipv6]:port\", got " + core::text::quote_for_error(text));
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      return make_error("expected \"host:port\" (IPv6 in brackets), got " +
                        core::text::quote_for_error(text));
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty() || core::text::has_ctl(host) ||
      host.find_first_of(" /") != std::string_view::npos) {
    return make_error("invalid host in " + core::text::quote_for_error(text));
  }
  const auto p = core::text::parse_uint<std::uint16_t>(port);
  if (!p || (*p == 0 && !allow_port_zero)) {
    return make_error(std::string("port must be in [") + (allow_port_zero ? "0" : "1") +
                      ", 65535], got " + core::text::quote_for_error(port));
  }
  return Endpoint{std::string(host), *p};
}

std::string to_string(const Endpoint& e) {
  if (e.host.find(':') != std::string::npos) {
    return "[" + e.host + "]:" + std::to_string(e.port);
  }
  return e.host + ":" + std::to_string(e.port);
}

core::Result<ThresholdSetting> parse_performance_threshold(std::string_view text) {
  auto t = core::text::trim(text);
  bool relative = false;
  if (t.ends_with('%')) {
    relative = true;
    t.remove_suffix(1);
  } else if (t.size() >= 2 && core::text::iequals(t.substr(t.size() - 2), "dB")) {
    t.remove_suffix(2);
  }
  const auto v = core::text::parse_double(core::text::trim(t));
  if (!v || *v < 0.0) {
    return make_error("expected a non-negative number, \"<n>dB\" or \"<n>%\", got " +
                      core::text::quote_for_error(text));
  }
  return ThresholdSetting{relative ? *v / 100.0 : *v, relative};
}

core::Result<ThresholdSetting> parse_delay_threshold(std::string_view text) {
  auto t = core::text::trim(text);
  double scale = 0.0;  // µs per unit; 0 = relative
  bool relative = false;
  if (t.ends_with('%')) {
    relative = true;
    t.remove_suffix(1);
  } else if (t.ends_with("us")) {
    scale = 1.0;
    t.remove_suffix(2);
  } else if (t.ends_with("\xc2\xb5s")) {  // "µs"
    scale = 1.0;
    t.remove_suffix(3);
  } else if (t.ends_with("ms")) {
    scale = 1e3;
    t.remove_suffix(2);
  } else if (t.ends_with('s')) {
    scale = 1e6;
    t.remove_suffix(1);
  }
  const auto v = core::text::parse_double(core::text::trim(t));
  if (!v || *v < 0.0 || (!relative && scale == 0.0)) {
    return make_error(
        "expected \"<n>us\", \"<n>ms\", \"<n>s\" or \"<n>%\" (or a bare number of "
        "µs), got " +
        core::text::quote_for_error(text));
  }
  return ThresholdSetting{relative ? *v / 100.0 : *v * scale, relative};
}

core::Status validate_config(const ServerConfig& config) {
  if (const auto p = check_config(config)) {
    return make_error(p->key + ": " + p->message);
  }
  return core::Ok{};
}

core::Result<ServerConfig> parse_config(std::string_view toml_text, std::string_view source_name) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return make_error(std::string(source_name) + ":" + std::to_string(b.line) + ":" +
                      std::to_string(b.column) + ": TOML syntax: " + std::string(e.description()));
  }
  ServerConfig cfg;
  Reader reader(source_name);
  read_all(root, reader, cfg);
  if (reader.failed()) {
    return make_error(reader.error());
  }
  if (const auto p = check_config(cfg)) {
    const auto* node = find_node(root, p->key);
    std::string loc = std::string(source_name) + ": ";
    if (node) {
      loc = reader.location(node->source());
    }
    return make_error(loc + p->key + ": " + p->message);
  }
  return cfg;
}

std::vector<std::string> accepted_config_keys() {
  // Every section is read once per mode, empty: section() lists its keys whatever the table holds.
  std::vector<std::string> keys;
  for (const std::string_view text :
       {std::string_view("[server]\n[blocks]\n[control.adaptive]\n[control.capacity]\n[discard]\n"),
        std::string_view("[server]\nmode = \"ddl\"\n[ddl]\n")}) {
    const toml::table root = toml::parse(text, std::string_view("<keys>"));
    ServerConfig cfg;
    Reader reader("<keys>");
    reader.list_keys_into(&keys);
    read_all(root, reader, cfg);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

core::Result<ServerConfig> load_config_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return make_error(path.string() + ": cannot open the file");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > (1u << 20)) {
    return make_error(path.string() + ": larger than 1 MiB");
  }
  return parse_config(text.str(), path.string());
}

std::string_view to_string(ServerMode mode) {
  return name_of(kModes, mode);
}
std::string_view srtp_name(const std::optional<wire::SrtpSuite>& suite) {
  return name_of(kSuites, suite);
}
std::string_view to_string(Pacing pacing) {
  return name_of(kPacings, pacing);
}
std::string_view to_string(core::MissingReportAction action) {
  return name_of(kMissingActions, action);
}
std::string_view to_string(MissingChunkFill fill) {
  return name_of(kFills, fill);
}

namespace {
core::Threshold to_threshold(const ThresholdSetting& t) {
  return t.relative ? core::Threshold::fraction(t.value) : core::Threshold::absolute(t.value);
}
}  // namespace

core::Result<core::PolicyConfig> make_policy_config(const ControlConfig& control) {
  core::PolicyConfig p;
  p.policy = control.policy;
  p.rule.r0 = control.r0;
  p.rule.rp = control.rp;
  p.rule.rp1 = control.rp1;
  p.rule.rp2 = control.rp2;
  p.rule.rmax = control.rmax;
  p.rule.t1 = to_threshold(control.t1);
  p.rule.t2 = to_threshold(control.t2);
  p.rule.k = control.k;
  p.rule.missing = control.missing_report;
  p.fixed_rate = control.fixed_rate;
  p.adaptive.rmax = control.rmax;
  p.adaptive.rp1 = control.rp1;
  p.adaptive.rp2 = control.rp2;
  const AdaptiveTuning& a = control.adaptive;
  p.adaptive.loss_threshold = a.loss_threshold;
  p.adaptive.clean_loss = a.clean_loss;
  p.adaptive.margin = a.margin;
  p.adaptive.drain_margin = a.drain_margin;
  p.adaptive.queue_high_us = a.queue_high_ms * 1000.0;
  p.adaptive.queue_low_us = a.queue_low_ms * 1000.0;
  p.adaptive.stretch_min_us = a.stretch_min_ms * 1000.0;
  p.adaptive.base_window = a.base_window;
  p.adaptive.hold_stages = a.hold_stages;
  p.adaptive.max_hold_stages = a.max_hold_stages;
  p.adaptive.pulse_rate = a.pulse_rate;
  p.adaptive.creep_step = a.creep_step;
  p.adaptive.creep_queue_us = a.creep_queue_ms * 1000.0;
  p.adaptive.quality_floor = a.quality_floor;
  p.capacity.rmax = control.rmax;
  p.capacity.initial_rate = control.r0;
  const CapacityTuning& ct = control.capacity;
  p.capacity.margin = ct.margin;
  p.capacity.queue_ref_us = ct.queue_target_ms * 1000.0;
  // A larger target moves the clean and overuse thresholds with it.
  p.capacity.queue_low_us = std::fmax(p.capacity.queue_low_us, 1.5 * p.capacity.queue_ref_us);
  p.capacity.queue_high_us = std::fmax(p.capacity.queue_high_us, p.capacity.queue_low_us + 10'000);
  p.capacity.increase_step = ct.increase_step;
  p.capacity.probe_gain = ct.probe_gain;
  p.capacity.pacing_gain = ct.pacing_gain;
  p.capacity.quality_floor = ct.quality_floor;
  p.capacity.loss_threshold = ct.loss_threshold;
  p.capacity.decrease_factor = ct.decrease_factor;
  p.capacity.compete_blocks = ct.compete_blocks;
  p.capacity.compete_loss_high = ct.compete_loss_high;
  p.capacity.compete_loss_low = ct.compete_loss_low;
  p.capacity.compete_gain = ct.compete_gain;
  p.capacity.missing_backoff = ct.missing_backoff;
  // Validate by building one controller now, so a bad combination fails at start-up.
  auto probe = core::make_rate_controller(p);
  if (!probe) return probe.error();
  return p;
}

}  // namespace predrop::config

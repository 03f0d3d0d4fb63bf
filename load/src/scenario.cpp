#include "predrop/load/scenario.hpp"

#include <toml++/toml.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace predrop::load {

namespace {

// Errors carry the origin and the key: "scenario.toml: population.clients: must be >= 1".
struct Reader {
  std::string origin;
  std::string error;

  bool fail(const std::string& key, const std::string& why) {
    if (error.empty()) error = origin + ": " + key + ": " + why;
    return false;
  }

  bool check_keys(const toml::table& t, const std::string& prefix,
                  const std::set<std::string>& allowed) {
    for (const auto& [k, v] : t) {
      const std::string key(k.str());
      if (allowed.count(key) == 0) return fail(prefix + key, "unknown key");
    }
    return true;
  }

  template <typename T>
  bool number(const toml::table& t, const std::string& prefix, const char* key, T& out, double lo,
              double hi) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return true;
    double v = 0;
    if (auto i = n->value_exact<std::int64_t>()) {
      v = static_cast<double>(*i);
    } else if (auto d = n->value_exact<double>()) {
      v = *d;
    } else {
      return fail(prefix + key, "must be a number");
    }
    if (!(v >= lo && v <= hi)) {
      std::ostringstream os;
      os << "must be in [" << lo << ", " << hi << "]";
      return fail(prefix + key, os.str());
    }
    if constexpr (std::is_integral_v<T>) {
      if (std::floor(v) != v) return fail(prefix + key, "must be a whole number");
    }
    out = static_cast<T>(v);
    return true;
  }

  bool boolean(const toml::table& t, const std::string& prefix, const char* key, bool& out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return true;
    auto b = n->value_exact<bool>();
    if (!b) return fail(prefix + key, "must be true or false");
    out = *b;
    return true;
  }

  bool string(const toml::table& t, const std::string& prefix, const char* key, std::string& out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return true;
    auto s = n->value_exact<std::string>();
    if (!s) return fail(prefix + key, "must be a string");
    out = *s;
    return true;
  }

  const toml::table* table(const toml::table& root, const char* key) {
    const toml::node* n = root.get(key);
    if (n == nullptr) return nullptr;
    if (!n->is_table()) {
      fail(key, "must be a table");
      return nullptr;
    }
    return n->as_table();
  }
};

}  // namespace

core::Result<LoadScenario> parse_load_scenario(std::string_view text, std::string_view origin) {
  toml::table root;
  try {
    root = toml::parse(text, std::string(origin));
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << origin << ":" << e.source().begin.line << ": " << e.description();
    return core::make_error(os.str());
  }
  Reader r{std::string(origin), {}};
  LoadScenario s;
  r.check_keys(root, "", {"server", "population", "churn", "group", "full", "report"});
  constexpr double kBig = 1e9;
  if (const toml::table* t = r.table(root, "server")) {
    r.check_keys(*t, "server.", {"url", "pid", "metrics", "metrics_poll_s"});
    r.string(*t, "server.", "url", s.url);
    r.number(*t, "server.", "pid", s.server_pid, 0, 4194304);
    r.string(*t, "server.", "metrics", s.metrics);
    r.number(*t, "server.", "metrics_poll_s", s.metrics_poll_s, 0.05, 60);
  }
  if (const toml::table* t = r.table(root, "population")) {
    r.check_keys(*t, "population.",
                 {"clients", "ramp_s", "hold_s", "drain_s", "max_joins", "threads"});
    r.number(*t, "population.", "clients", s.clients, 1, 20000);
    r.number(*t, "population.", "ramp_s", s.ramp_s, 0, 3600);
    r.number(*t, "population.", "hold_s", s.hold_s, 0, 86400);
    r.number(*t, "population.", "drain_s", s.drain_s, 0, 60);
    r.number(*t, "population.", "max_joins", s.max_joins, 1, 1e7);
    r.number(*t, "population.", "threads", s.threads, 1, 64);
  }
  if (const toml::table* t = r.table(root, "churn")) {
    r.check_keys(*t, "churn.", {"join_per_s", "leave_per_s", "band"});
    r.number(*t, "churn.", "join_per_s", s.join_per_s, 0, 10000);
    r.number(*t, "churn.", "leave_per_s", s.leave_per_s, 0, 10000);
    r.number(*t, "churn.", "band", s.churn_band, 0, 20000);
  }
  if (const toml::node* g = root.get("group")) {
    const toml::array* arr = g->as_array();
    if (arr == nullptr || !arr->is_array_of_tables()) {
      r.fail("group", "must be an array of tables ([[group]])");
    } else {
      std::size_t i = 0;
      for (const auto& node : *arr) {
        const toml::table& t = *node.as_table();
        const std::string prefix = "group[" + std::to_string(i++) + "].";
        LoadGroup lg;
        lg.name = "group" + std::to_string(i - 1);
        r.check_keys(t, prefix, {"name", "weight", "feedback", "srtp_verify_every", "video_only"});
        r.string(t, prefix, "name", lg.name);
        r.number(t, prefix, "weight", lg.weight, 0, kBig);
        r.boolean(t, prefix, "feedback", lg.feedback);
        r.number(t, prefix, "srtp_verify_every", lg.srtp_verify_every, 1, 1e6);
        r.boolean(t, prefix, "video_only", lg.video_only);
        s.groups.push_back(lg);
      }
    }
  }
  if (s.groups.empty()) s.groups.push_back(LoadGroup{});
  double weights = 0;
  for (const auto& g : s.groups) {
    weights += g.weight;
  }
  if (!(weights > 0)) r.fail("group", "weights must not all be 0");
  if (const toml::table* t = r.table(root, "full")) {
    r.check_keys(*t, "full.", {"clients", "reference"});
    r.number(*t, "full.", "clients", s.full_clients, 0, 64);
    r.string(*t, "full.", "reference", s.reference);
  }
  if (const toml::table* t = r.table(root, "report")) {
    r.check_keys(*t, "report.",
                 {"progress_s", "csv", "summary_csv", "label", "request_timeout_s", "psnr_cap_db",
                  "concealed_db", "seed"});
    r.number(*t, "report.", "progress_s", s.progress_s, 0.05, 60);
    r.string(*t, "report.", "csv", s.csv);
    r.string(*t, "report.", "summary_csv", s.summary_csv);
    r.string(*t, "report.", "label", s.label);
    r.number(*t, "report.", "request_timeout_s", s.request_timeout_s, 0.1, 600);
    r.number(*t, "report.", "psnr_cap_db", s.psnr_cap_db, 1, 200);
    r.number(*t, "report.", "concealed_db", s.concealed_db, 0, 200);
    r.number(*t, "report.", "seed", s.seed, 0, 9e15);
  }
  if (r.error.empty() && s.url.empty()) r.fail("server.url", "missing");
  if (r.error.empty() && s.full_clients > s.clients) {
    r.fail("full.clients", "more than population.clients");
  }
  if (r.error.empty() && s.full_clients > 0 && s.reference.empty()) {
    r.fail("full.reference", "needed when full.clients > 0");
  }
  if (r.error.empty() && s.concealed_db >= s.psnr_cap_db) {
    r.fail("report.concealed_db", "must be below report.psnr_cap_db");
  }
  if (!r.error.empty()) return core::make_error(r.error);
  return s;
}

core::Result<LoadScenario> load_scenario_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return core::make_error("cannot read " + path);
  std::ostringstream text;
  text << f.rdbuf();
  return parse_load_scenario(text.str(), path);
}

}  // namespace predrop::load

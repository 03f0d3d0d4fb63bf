#include "predrop/server/control_api.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

namespace predrop::server {

namespace {

using nlohmann::json;

HttpReply json_reply(int status, const json& body) {
  HttpReply r;
  r.status = status;
  // Invalid UTF-8 from anywhere (a stream name) is replaced, never thrown.
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  return r;
}

HttpReply error_reply(int status, std::string_view message) {
  return json_reply(status, json{{"error", message}});
}

HttpReply not_allowed(std::string allow) {
  HttpReply r = error_reply(405, "method not allowed; this path takes " + allow);
  r.allow = std::move(allow);
  return r;
}

// A finite number, or null (NaN: not measured).
json number_or_null(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

// Session numbers as written in paths: 1 to 19 decimal digits, nothing else.
std::optional<std::uint64_t> parse_number(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return std::nullopt;
  }
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || n == 0) return std::nullopt;
  return n;
}

std::string iso8601(std::uint64_t unix_us) {
  const auto t = static_cast<std::time_t>(unix_us / 1'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[32];
  std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return out;
}

json block_json(const BlockRecord& b) {
  return json{{"stage", b.stage},
              {"block", b.block},
              {"rate", b.rate},
              {"packets", b.packets},
              {"discarded", b.discarded},
              {"sent", b.sent},
              {"reported", b.reported},
              {"reception_period_ms", b.reported ? json(b.reception_period_us / 1000.0) : json()},
              {"performance", b.reported ? json(b.performance) : json()},
              {"received", b.packets_received},
              {"loss", b.network_loss},
              {"queue_ms", number_or_null(b.queue_delay_us / 1000.0)},
              {"decision", std::string(core::to_string(b.decision))},
              {"next_rate", b.next_rate},
              {"capacity_kbps", number_or_null(b.capacity_estimate * 8000.0)}};
}

json session_json(const SessionMetrics& m, std::uint32_t worker, const ControlBackend& backend) {
  json j{{"number", m.number},
         {"worker", worker},
         {"stream", m.stream},
         {"client", m.client},
         {"transport", m.transport},
         {"policy", m.policy},
         {"rate", m.rate},
         {"playing", m.playing},
         {"since_s", static_cast<double>(m.age_us) / 1e6},
         {"bytes_sent", m.bytes_sent},
         {"packets_sent", m.transmitter.packets_sent},
         {"packets_discarded", m.transmitter.packets_discarded},
         {"stages", m.transmitter.stages},
         {"late_blocks", m.transmitter.late_stages},
         {"reports", m.stats.reports},
         {"reports_missing", m.stats.reports_missing},
         {"rtt_ms", m.stats.last_rtt_us >= 0 ? json(m.stats.last_rtt_us / 1000.0) : json()}};
  if (backend.wall_now_us) {
    const std::uint64_t now = backend.wall_now_us();
    j["since"] = iso8601(now >= m.age_us ? now - m.age_us : 0);
  }
  // L and P of the last report; loss and queue of the last block reported (an RR-fed session:
  // the RR's fraction lost).
  const bool reported = m.stats.reports > 0;
  j["last_reception_period_ms"] =
      reported ? json(m.stats.last_reception_period_us / 1000.0) : json();
  j["last_performance"] =
      reported && m.last_block && m.last_block->reported ? json(m.stats.last_performance) : json();
  if (m.last_block && m.last_block->reported) {
    j["loss"] = m.last_block->network_loss;
    j["queue_ms"] = number_or_null(m.last_block->queue_delay_us / 1000.0);
    j["last_block"] = block_json(*m.last_block);
  } else {
    j["loss"] = m.stats.receiver_reports > 0 ? json(m.stats.last_fraction_lost / 256.0) : json();
    j["queue_ms"] = nullptr;
    j["last_block"] = nullptr;
  }
  return j;
}

// The sessions of every worker, by number.
std::optional<std::vector<ServerSnapshot>> gather(const ControlBackend& b) {
  if (!b.snapshots) return std::nullopt;
  return b.snapshots();
}

// Constant-time comparison of the token (no early exit on the first differing byte).
bool token_matches(std::string_view given, std::string_view token) {
  unsigned diff = given.size() == token.size() ? 0U : 1U;
  for (std::size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i]) ^
            static_cast<unsigned char>(token.empty() ? 0 : token[i % token.size()]);
  }
  return diff == 0;
}

// Nullopt: allowed; else the refusal.
std::optional<HttpReply> refuse_unless_authorized(const HttpRequest& q, const ControlBackend& b) {
  if (b.token.empty()) {
    return error_reply(403, "the control API is read-only: no server.api_token is configured");
  }
  std::string_view auth = q.authorization;
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() < kBearer.size() ||
      !std::equal(kBearer.begin(), kBearer.end(), auth.begin(), [](char a, char c) {
        return std::tolower(static_cast<unsigned char>(a)) ==
               std::tolower(static_cast<unsigned char>(c));
      })) {
    HttpReply r = error_reply(401, "needs Authorization: Bearer <server.api_token>");
    return r;
  }
  auth.remove_prefix(kBearer.size());
  while (!auth.empty() && auth.front() == ' ') {
    auth.remove_prefix(1);
  }
  while (!auth.empty() && (auth.back() == ' ' || auth.back() == '\t')) {
    auth.remove_suffix(1);
  }
  if (!token_matches(auth, b.token)) return error_reply(401, "wrong token");
  return std::nullopt;
}

HttpReply list_streams(const ControlBackend& b) {
  json streams = json::array();
  const auto snaps = gather(b);
  for (const StreamInfo& s : b.streams) {
    std::size_t live = 0;
    if (snaps) {
      for (const ServerSnapshot& w : *snaps) {
        for (const SessionMetrics& m : w.session_rows) {
          live += m.stream == s.name ? 1 : 0;
        }
      }
    }
    streams.push_back(json{{"name", s.name}, {"path", s.path}, {"sessions", live}});
  }
  return json_reply(200, json{{"streams", streams}});
}

HttpReply list_sessions(const ControlBackend& b, std::optional<std::uint64_t> only) {
  const auto snaps = gather(b);
  if (!snaps) return error_reply(503, "no sessions to show: the server is not streaming");
  json sessions = json::array();
  for (const ServerSnapshot& w : *snaps) {
    for (const SessionMetrics& m : w.session_rows) {
      if (only && m.number != *only) continue;
      if (only) return json_reply(200, session_json(m, w.worker, b));
      sessions.push_back(session_json(m, w.worker, b));
    }
  }
  if (only) return error_reply(404, "no session " + std::to_string(*only));
  return json_reply(200, json{{"sessions", sessions}});
}

HttpReply session_history(const ControlBackend& b, std::uint64_t n) {
  if (!b.history) return error_reply(503, "no history available");
  const auto h = b.history(n);
  if (!h) return error_reply(404, "no session " + std::to_string(n));
  json blocks = json::array();
  for (const BlockRecord& r : *h) {
    blocks.push_back(block_json(r));
  }
  return json_reply(200,
                    json{{"number", n}, {"capacity", BlockHistory::kCapacity}, {"blocks", blocks}});
}

HttpReply route(const HttpRequest& q, const ControlBackend& b) {
  std::string_view path = q.target;
  if (const std::size_t query = path.find('?'); query != std::string_view::npos) {
    path = path.substr(0, query);
  }
  while (path.size() > 1 && path.back() == '/') {
    path.remove_suffix(1);
  }
  const bool get = q.method == "GET" || q.method == "HEAD";
  if (path == "/api/v1/streams") return get ? list_streams(b) : not_allowed("GET, HEAD");
  if (path == "/api/v1/sessions") return get ? list_sessions(b, {}) : not_allowed("GET, HEAD");
  if (path == "/api/v1/reload") {
    if (q.method != "POST") return not_allowed("POST");
    if (auto refused = refuse_unless_authorized(q, b)) return *refused;
    if (!b.reload) return error_reply(501, "reload is not available in this process");
    auto done = b.reload();
    if (!done) return error_reply(422, done.error().message);
    return json_reply(200, json{{"reloaded", true}, {"message", done.value()}});
  }
  constexpr std::string_view kSession = "/api/v1/sessions/";
  if (path.starts_with(kSession)) {
    std::string_view rest = path.substr(kSession.size());
    bool history = false;
    if (const std::size_t slash = rest.find('/'); slash != std::string_view::npos) {
      if (rest.substr(slash) != "/history") return error_reply(404, "no such path");
      history = true;
      rest = rest.substr(0, slash);
    }
    const auto n = parse_number(rest);
    if (!n) return error_reply(404, "a session is named by its number (1, 2, ...)");
    if (history) return get ? session_history(b, *n) : not_allowed("GET, HEAD");
    if (get) return list_sessions(b, n);
    if (q.method != "DELETE") return not_allowed("GET, HEAD, DELETE");
    if (auto refused = refuse_unless_authorized(q, b)) return *refused;
    if (!b.end_session) return error_reply(503, "sessions cannot be ended here");
    if (!b.end_session(*n)) return error_reply(404, "no session " + std::to_string(*n));
    return json_reply(200, json{{"ended", *n}});
  }
  return error_reply(404, "no such path; see /api/v1/streams and /api/v1/sessions");
}

}  // namespace

HttpReply handle_control(const HttpRequest& request, const ControlBackend& backend) {
  // A backend that throws (a worker stopping) is caught at the endpoint's callback boundary,
  // which answers 500.
  return route(request, backend);
}

}  // namespace predrop::server

// [server]: listening addresses, streams, limits, SRTP, metrics, API token, log level. The
// stream-only keys are refused in DDL mode.
#include <algorithm>

#include "config_reader.hpp"

namespace predrop::config::detail {

void read_server(Reader& r, const toml::table& t, ServerSettings& server, bool stream) {
  const auto only_stream = [&](const toml::node& n) {
    r.fail(n.source(), r.current(), "only valid with server.mode = \"stream\"");
  };
  const std::vector<Key> keys = {
      {"mode", [](const toml::node&) {}},  // read above
      {"rtsp_listen",
       [&](const toml::node& n) {
         if (!stream) {
           return only_stream(n);
         }
         r.endpoint_into(n, server.rtsp_listen, true);
       }},
      {"streams",
       [&](const toml::node& n) {
         if (!stream) {
           return only_stream(n);
         }
         read_streams(r, n, server.streams);
       }},
      {"max_sessions",
       [&](const toml::node& n) { r.unsigned_into(n, server.max_sessions, 1, 10000); }},
      {"max_sessions_per_address",
       [&](const toml::node& n) {
         if (!stream) {
           return only_stream(n);
         }
         r.unsigned_into(n, server.max_sessions_per_address, 1, 10000);
       }},
      {"max_rtsp_connections",
       [&](const toml::node& n) {
         if (!stream) {
           return only_stream(n);
         }
         r.unsigned_into(n, server.max_rtsp_connections, 1, 10000);
       }},
      {"session_timeout_s",
       [&](const toml::node& n) { r.unsigned_into(n, server.session_timeout_s, 2, 3600); }},
      {"interleaved_queue_bytes",
       [&](const toml::node& n) {
         if (!stream) {
           return only_stream(n);
         }
         r.unsigned_into(n, server.interleaved_queue_bytes, 0, kMaxInterleavedQueueBytes);
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
           server.workers = *w;
           return;
         }
         if (!n.is_integer()) {
           return r.fail_type(n, r.current(), "an integer or \"auto\"");
         }
         r.unsigned_into(n, server.workers, 0, kMaxWorkers);
       }},
      {"rtsp_idle_timeout_s",
       [&](const toml::node& n) {
         if (!stream) {
           return only_stream(n);
         }
         r.unsigned_into(n, server.rtsp_idle_timeout_s, 1, 3600);
       }},
      {"srtp", [&](const toml::node& n) { r.enumeration(n, kSuites, server.srtp); }},
      {"metrics_listen",
       [&](const toml::node& n) {
         const auto s = r.string(n);
         if (!s) {
           return;
         }
         if (s->empty()) {
           server.metrics_listen.reset();
           return;
         }
         Endpoint e;
         r.endpoint_into(n, e, true);
         if (!r.failed()) {
           server.metrics_listen = e;
         }
       }},
      {"trace_csv",
       [&](const toml::node& n) {
         if (auto s = r.string(n)) {
           server.trace_csv = std::move(*s);
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
         server.api_token = std::move(*s);
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
         server.log_level = *s;
       }},
  };
  r.section(t, "server", keys);
}

void check_server(const ServerSettings& s, Problems& problems) {
  if (s.rtsp_listen.host.empty()) {
    problems.add(Problem{"server.rtsp_listen", "host is empty"});
  }
  if (s.mode == ServerMode::kStream && s.streams.empty()) {
    problems.add(
        Problem{"server.streams", "mode \"stream\" needs at least one stream (name = \"path\")"});
  }
  if (s.mode == ServerMode::kDdl && !s.streams.empty()) {
    problems.add(Problem{"server.streams", "streams are only served with mode = \"stream\""});
  }
  for (const auto& st : s.streams) {
    if (!is_stream_name(st.name)) {
      problems.add(Problem{"server.streams." + st.name,
                           "stream names use letters, digits, '.', '_' and '-' (1..64 bytes)"});
    }
    if (!st.publish && st.pull_url.empty() && st.path.empty()) {
      problems.add(Problem{"server.streams." + st.name, "path is empty"});
    }
  }
  problems.add(range_problem("server.max_sessions", s.max_sessions, 1, 10000));
  problems.add(
      range_problem("server.max_sessions_per_address", s.max_sessions_per_address, 1, 10000));
  problems.add(range_problem("server.max_rtsp_connections", s.max_rtsp_connections, 1, 10000));
  problems.add(range_problem("server.session_timeout_s", s.session_timeout_s, 2, 3600));
  problems.add(range_problem("server.rtsp_idle_timeout_s", s.rtsp_idle_timeout_s, 1, 3600));
  problems.add(range_problem("server.interleaved_queue_bytes", s.interleaved_queue_bytes, 0,
                             kMaxInterleavedQueueBytes));
  problems.add(range_problem("server.workers", s.workers, 0, kMaxWorkers));
  if (s.metrics_listen && s.metrics_listen->host.empty()) {
    problems.add(Problem{"server.metrics_listen", "host is empty"});
  }
  if (std::find(kLogLevels.begin(), kLogLevels.end(), s.log_level) == kLogLevels.end()) {
    problems.add(Problem{"server.log_level", "must be " + one_of(kLogLevels) + ", got " +
                                                 core::text::quote_for_error(s.log_level)});
  }
}

}  // namespace predrop::config::detail

#include "predrop/server/server_setup.hpp"

#include <algorithm>
#include <limits>
#include <thread>

#include <cstdio>

#include "predrop/core/log.hpp"
#include "predrop/media/media_file.hpp"

namespace predrop::server {

core::Status apply_overrides(config::ServerConfig& c, const CliOverrides& cli) {
  // The overrides are written back as TOML-equivalent values and validated like the file.
  if (!cli.mode.empty()) {
    if (cli.mode == "stream") {
      c.server.mode = config::ServerMode::kStream;
    } else if (cli.mode == "ddl") {
      c.server.mode = config::ServerMode::kDdl;
    } else {
      return core::make_error("--mode must be stream or ddl, not '" + cli.mode + "'");
    }
  }
  if (!cli.listen.empty()) {
    auto e = config::parse_endpoint(cli.listen, true);
    if (!e) return core::make_error("--listen: " + e.error().message);
    c.server.rtsp_listen = *e;
  }
  for (const auto& s : cli.streams) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
      return core::make_error("--stream wants NAME=PATH, got '" + s + "'");
    }
    std::string name = s.substr(0, eq);
    std::erase_if(c.server.streams, [&](const config::StreamEntry& e) { return e.name == name; });
    c.server.streams.push_back(config::StreamEntry{name, s.substr(eq + 1)});
  }
  if (!cli.policy.empty()) c.control.policy = cli.policy;
  if (cli.fixed_rate) c.control.fixed_rate = *cli.fixed_rate;
  if (!cli.player_adaptation.empty()) {
    if (cli.player_adaptation != "rr" && cli.player_adaptation != "fixed") {
      return core::make_error("--player-adaptation must be rr or fixed, not '" +
                              cli.player_adaptation + "'");
    }
    c.control.player_adaptation = cli.player_adaptation;
  }
  if (cli.interleaved_queue_bytes) {
    if (*cli.interleaved_queue_bytes > config::kMaxInterleavedQueueBytes) {
      return core::make_error("--interleaved-queue-bytes must be in [0, " +
                              std::to_string(config::kMaxInterleavedQueueBytes) + "], got " +
                              std::to_string(*cli.interleaved_queue_bytes));
    }
    c.server.interleaved_queue_bytes = static_cast<std::uint32_t>(*cli.interleaved_queue_bytes);
  }
  if (!cli.srtp.empty()) {
    bool found = false;
    if (cli.srtp == "none") {
      c.server.srtp.reset();
      found = true;
    } else if (auto s = wire::suite_from_name(cli.srtp)) {
      c.server.srtp = *s;
      found = true;
    }
    if (!found) return core::make_error("--srtp: unknown suite '" + cli.srtp + "'");
  }
  if (!cli.trace_csv.empty()) c.server.trace_csv = cli.trace_csv;
  if (!cli.metrics.empty()) {
    auto e = config::parse_endpoint(cli.metrics, true);
    if (!e) return core::make_error("--metrics: " + e.error().message);
    c.server.metrics_listen = *e;
  }
  if (!cli.log_level.empty()) c.server.log_level = cli.log_level;
  if (!cli.workers.empty()) {
    auto w = config::parse_workers(cli.workers);
    if (!w) return core::make_error("--workers " + w.error().message);
    c.server.workers = *w;
  }
  if (auto st = config::validate_config(c); !st) return st;
  if (c.server.mode == config::ServerMode::kStream && c.server.streams.empty()) {
    return core::make_error("no streams: add [server.streams] to the config or --stream NAME=PATH");
  }
  return core::Ok{};
}

std::size_t resolve_workers(std::uint32_t configured) {
  if (configured != 0) return configured;
  const unsigned cores = std::thread::hardware_concurrency();
  return std::clamp<std::size_t>(cores, 1, config::kMaxWorkers);
}

core::Result<StreamServerOptions> make_stream_options(const config::ServerConfig& c,
                                                      const CliOverrides& cli) {
  StreamServerOptions o;
  auto listen = net::SocketAddress::from_ip(c.server.rtsp_listen.host, c.server.rtsp_listen.port);
  if (!listen) {
    // Host names: only "localhost" is resolved here; the server binds addresses, not names.
    if (c.server.rtsp_listen.host == "localhost") {
      listen = net::SocketAddress::loopback_v4(c.server.rtsp_listen.port);
    } else {
      return core::make_error("server.rtsp_listen: " + listen.error().message);
    }
  }
  o.rtsp_listen = *listen;
  o.bind_ip = listen->is_v4() ? "0.0.0.0" : "::";
  if (cli.rtp_port) o.rtp_port = *cli.rtp_port;
  o.srtp = c.server.srtp;
  auto policy = config::make_policy_config(c.control);
  if (!policy) return core::make_error("control: " + policy.error().message);
  o.policy = *policy;
  o.player_rate = cli.player_rate.value_or(c.control.player_rate);
  if (!(o.player_rate >= 0.0 && o.player_rate <= 1.0)) {
    return core::make_error("--player-rate must be in [0, 1]");
  }
  o.interleaved_queue_bytes = c.server.interleaved_queue_bytes;
  o.player_adaptation = c.control.player_adaptation == "fixed" ? PlayerAdaptation::kFixed
                                                               : PlayerAdaptation::kReceiverReports;
  if (o.player_adaptation == PlayerAdaptation::kReceiverReports) {
    // Players send no picture score: the capacity policy (network signals only) with the
    // [control] capacity keys, starting at R = 0 and never probing on quality.
    core::PolicyConfig player = o.policy;
    player.policy = "capacity";
    player.capacity.initial_rate = 0.0;
    player.capacity.quality_floor = -std::numeric_limits<double>::infinity();
    o.player_policy = player;
  }
  o.discard = c.discard.policy;
  o.discard_seed = c.discard.seed;
  o.paced = c.blocks.pacing == config::Pacing::kPaced;
  o.pacing_quantum_us = c.blocks.pacing_quantum_ms * 1000;
  o.loop = cli.loop;
  o.gso = !cli.no_gso;
  o.max_stages = cli.max_stages.value_or(0);
  o.max_sessions = c.server.max_sessions;
  o.max_sessions_per_address = c.server.max_sessions_per_address;
  o.max_connections = c.server.max_rtsp_connections;
  o.session_timeout_s = c.server.session_timeout_s;
  o.rtsp_idle_timeout_s = c.server.rtsp_idle_timeout_s;
  const std::uint64_t block_us =
      c.blocks.duration_ms ? static_cast<std::uint64_t>(*c.blocks.duration_ms) * 1000 : 1'000'000;
  o.report_timeout_us = block_us * std::max<std::uint32_t>(1, c.control.report_timeout_stages);

  media::PacketizeOptions po;
  po.max_payload = c.blocks.rtp_payload_bytes;
  o.max_payload_size = po.max_payload;
  if (c.blocks.bytes) {
    po.block = media::BlockSize{media::BlockSize::Unit::kBytes, *c.blocks.bytes};
    o.block_attribute = "bytes=" + std::to_string(*c.blocks.bytes);
  } else {
    po.block = media::BlockSize{media::BlockSize::Unit::kDuration, block_us};
    o.block_attribute = "duration_us=" + std::to_string(block_us);
  }
  o.block_attribute += ";payload=" + std::to_string(po.max_payload);
  for (const auto& s : c.server.streams) {
    auto m = media::MediaFile::open(s.path, po);
    if (!m) return core::make_error("stream '" + s.name + "': " + m.error().message);
    if ((*m)->warning_count() > 0) {
      core::log(core::LogLevel::kWarn, "media", "%s: %zu problems skipped (first: %s)",
                s.path.c_str(), (*m)->warning_count(),
                (*m)->warnings().empty() ? "" : (*m)->warnings()[0].c_str());
    }
    if ((*m)->blocks().empty()) return core::make_error("stream '" + s.name + "': no media");
    core::log(core::LogLevel::kInfo, "media", "%s: %zu blocks, %zu packets, %.1f s", s.path.c_str(),
              (*m)->blocks().size(), (*m)->packets().size(), (*m)->duration_us() / 1e6);
    o.streams.push_back(StreamDefinition{s.name, std::move(m.value())});
  }
  for (const auto& p : cli.pushes) {
    const auto a = p.find('@');
    const auto b = p.rfind('@');
    if (a == std::string::npos || a == b) {
      return core::make_error("--push wants STREAM@ADDR:PORT@FILE.sdp, got '" + p + "'");
    }
    auto dest = net::SocketAddress::parse(p.substr(a + 1, b - a - 1));
    if (!dest) return core::make_error("--push: " + dest.error().message);
    o.pushes.push_back(PushTarget{p.substr(0, a), *dest, p.substr(b + 1)});
  }
  return o;
}

std::string render_metrics(const StreamServer& server, const MetricsSources& more) {
  const ServerSnapshot one = snapshot_of(server);
  return render_metrics(std::span<const ServerSnapshot>(&one, 1), more);
}

std::string render_metrics(std::span<const ServerSnapshot> workers, const MetricsSources& more) {
  std::string out;
  char line[1024];
  ServerStats s;
  std::size_t session_count = 0;
  for (const ServerSnapshot& w : workers) {
    add_stats(s, w.stats);
    session_count += w.sessions;
  }
  auto counter = [&](const char* name, const char* help, std::uint64_t v) {
    std::snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name,
                  name, static_cast<unsigned long long>(v));
    out += line;
  };
  counter("predrop_connections_accepted_total", "RTSP connections accepted.",
          s.connections_accepted);
  counter("predrop_connections_refused_total", "RTSP connections refused (limit).",
          s.connections_refused);
  counter("predrop_rtsp_requests_total", "RTSP requests handled.", s.requests);
  counter("predrop_rtsp_bad_requests_total", "Malformed RTSP requests.", s.bad_requests);
  counter("predrop_sessions_created_total", "Sessions set up.", s.sessions_created);
  counter("predrop_sessions_refused_total", "Sessions refused (limit).", s.sessions_refused);
  counter("predrop_sessions_timed_out_total", "Sessions expired.", s.sessions_timed_out);
  counter("predrop_rtsp_foreign_session_requests_total",
          "Requests naming a session set up from another address (answered 454).",
          s.session_requests_foreign);
  counter("predrop_sessions_refused_per_address_total",
          "Sessions refused (per-address limit, answered 453).", s.sessions_refused_per_address);
  counter("predrop_connections_closed_backlog_total",
          "RTSP connections closed because the client did not read its replies.",
          s.connections_closed_backlog);
  counter("predrop_connections_timed_out_total",
          "RTSP connections closed idle or with a request not complete in time.",
          s.connections_timed_out);
  counter("predrop_rtcp_datagrams_total", "RTCP datagrams received.", s.rtcp_datagrams);
  counter("predrop_rtcp_unknown_source_total", "RTCP from no known session.",
          s.rtcp_unknown_source);
  counter("predrop_interleaved_sessions_total", "Sessions set up with RTP/AVP/TCP (interleaved).",
          s.interleaved_sessions);
  counter("predrop_interleaved_frames_sent_total",
          "RTP/RTCP frames queued on RTSP connections (interleaved).", s.interleaved_frames_sent);
  counter("predrop_interleaved_frames_dropped_total",
          "Interleaved frames dropped: the connection's bounded queue was full.",
          s.interleaved_frames_dropped);
  counter("predrop_interleaved_frames_received_total", "Interleaved frames from clients.",
          s.interleaved_frames_received);
  counter("predrop_interleaved_unknown_channel_total",
          "Interleaved frames from clients on no RTCP channel of theirs (dropped).",
          s.interleaved_unknown_channel);
  counter("predrop_interleaved_bad_length_total",
          "Interleaved frames longer than an RTCP compound (skipped; closed connections).",
          s.interleaved_bad_length);
  counter("predrop_interleaved_truncated_total",
          "Connections that ended inside an interleaved frame.", s.interleaved_truncated);
  if (more.trace != nullptr) {
    const TraceStats& t = more.trace->stats();
    counter("predrop_trace_write_errors_total",
            "Failed writes of the block trace CSV (disk full, I/O error).", t.write_errors);
    counter("predrop_trace_rows_lost_total", "Block trace rows lost to failed writes.",
            t.rows_lost);
  }
  if (more.endpoint != nullptr) {
    const MetricsEndpointStats& m = more.endpoint->stats();
    counter("predrop_metrics_connections_refused_total",
            "Metrics connections closed at accept (connection limit).", m.refused);
    counter("predrop_metrics_requests_timed_out_total",
            "Metrics connections whose request was not complete by the deadline.", m.timed_out);
  }
  std::uint64_t late_blocks = s.late_blocks_of_ended_sessions;
  for (const ServerSnapshot& w : workers) {
    for (const SessionMetrics& m : w.session_rows)
      late_blocks += m.transmitter.late_stages;
  }
  counter("predrop_late_blocks_total",
          "Blocks with a packet sent past its due time, over every session since start.",
          late_blocks);
  counter("predrop_pacing_runs_cut_total",
          "Pacer runs that stopped at their time budget with sessions still due (overload).",
          s.pacing_runs_cut);
  counter("predrop_sessions_closed_by_exception_total",
          "Sessions ended because their pacing or RTCP handler threw.",
          s.sessions_closed_by_exception);
  counter("predrop_connections_closed_by_exception_total",
          "RTSP connections closed because a handler threw while serving them.",
          s.connections_closed_by_exception);
  out +=
      "# HELP predrop_callback_exceptions_total Exceptions caught at a loop callback boundary "
      "(only the offending connection or session was closed).\n"
      "# TYPE predrop_callback_exceptions_total counter\n";
  for (const CallbackKind kind : kServerCallbackKinds) {
    std::uint64_t n = 0;
    for (const ServerSnapshot& w : workers) {
      n += w.callback_exceptions[static_cast<std::size_t>(kind)];
    }
    if (more.endpoint != nullptr) n += more.endpoint->callback_guard().count(kind);
    const std::string_view name = to_string(kind);
    std::snprintf(line, sizeof line, "predrop_callback_exceptions_total{kind=\"%.*s\"} %llu\n",
                  static_cast<int>(name.size()), name.data(), static_cast<unsigned long long>(n));
    out += line;
  }
  std::snprintf(line, sizeof line, "# TYPE predrop_sessions gauge\npredrop_sessions %zu\n",
                session_count);
  out += line;
  counter("predrop_rtsp_other_worker_session_requests_total",
          "Requests naming a session of another worker (answered 454; a session is bound to "
          "the worker of the connection that set it up).",
          s.session_requests_other_worker);
  std::snprintf(line, sizeof line,
                "# HELP predrop_workers Worker loops answering this scrape.\n"
                "# TYPE predrop_workers gauge\npredrop_workers %zu\n"
                "# HELP predrop_worker_sessions Live sessions per worker loop.\n"
                "# TYPE predrop_worker_sessions gauge\n",
                workers.size());
  out += line;
  for (const ServerSnapshot& w : workers) {
    std::snprintf(line, sizeof line, "predrop_worker_sessions{worker=\"%u\"} %zu\n", w.worker,
                  w.sessions);
    out += line;
  }
  out +=
      "# HELP predrop_session_rate Discard rate R for the next block.\n"
      "# TYPE predrop_session_rate gauge\n"
      "# HELP predrop_session_reception_period_seconds Last reported L.\n"
      "# TYPE predrop_session_reception_period_seconds gauge\n"
      "# HELP predrop_session_performance Last reported P (PSNR dB).\n"
      "# TYPE predrop_session_performance gauge\n"
      "# TYPE predrop_session_packets_sent_total counter\n"
      "# TYPE predrop_session_packets_discarded_total counter\n"
      "# TYPE predrop_session_reports_total counter\n"
      "# TYPE predrop_session_reports_missing_total counter\n"
      "# HELP predrop_session_late_blocks_total Blocks with a packet sent past its due time.\n"
      "# TYPE predrop_session_late_blocks_total counter\n"
      "# HELP predrop_session_receiver_reports_total RTCP RRs from the client.\n"
      "# TYPE predrop_session_receiver_reports_total counter\n"
      "# HELP predrop_session_rtcp_errors_total RTCP from the client that failed SRTCP or "
      "parsing.\n"
      "# TYPE predrop_session_rtcp_errors_total counter\n"
      "# HELP predrop_session_rr_rejected_total RR report blocks refused (forged or stale).\n"
      "# TYPE predrop_session_rr_rejected_total counter\n"
      "# HELP predrop_session_rr_rtt_seconds RTT from the client's last RR (LSR/DLSR); -1 none.\n"
      "# TYPE predrop_session_rr_rtt_seconds gauge\n";
  std::vector<const SessionMetrics*> rows;
  for (const ServerSnapshot& w : workers) {
    for (const SessionMetrics& m : w.session_rows) {
      rows.push_back(&m);
    }
  }
  // By number, as a single server lists them (its sessions are ordered by id, not number).
  std::sort(rows.begin(), rows.end(),
            [](const SessionMetrics* x, const SessionMetrics* y) { return x->number < y->number; });
  for (const SessionMetrics* ss : rows) {
    // Labelled by the session's public number: the id is the credential that controls the
    // session, and /metrics is often readable by more people than the RTSP port.
    const auto id = static_cast<unsigned long long>(ss->number);
    const auto& st = ss->stats;
    const auto& tx = ss->transmitter;
    std::snprintf(line, sizeof line,
                  "predrop_session_rate{session=\"%llu\",policy=\"%.*s\"} %.4f\n"
                  "predrop_session_reception_period_seconds{session=\"%llu\"} %.6f\n"
                  "predrop_session_performance{session=\"%llu\"} %.3f\n"
                  "predrop_session_packets_sent_total{session=\"%llu\"} %llu\n"
                  "predrop_session_packets_discarded_total{session=\"%llu\"} %llu\n"
                  "predrop_session_reports_total{session=\"%llu\"} %llu\n"
                  "predrop_session_reports_missing_total{session=\"%llu\"} %llu\n"
                  "predrop_session_late_blocks_total{session=\"%llu\"} %llu\n",
                  id, static_cast<int>(ss->policy.size()), ss->policy.data(), ss->rate, id,
                  st.last_reception_period_us / 1e6, id, st.last_performance, id,
                  static_cast<unsigned long long>(tx.packets_sent), id,
                  static_cast<unsigned long long>(tx.packets_discarded), id,
                  static_cast<unsigned long long>(st.reports), id,
                  static_cast<unsigned long long>(st.reports_missing), id,
                  static_cast<unsigned long long>(tx.late_stages));
    out += line;
    std::snprintf(line, sizeof line,
                  "predrop_session_receiver_reports_total{session=\"%llu\"} %llu\n"
                  "predrop_session_rtcp_errors_total{session=\"%llu\"} %llu\n"
                  "predrop_session_rr_rejected_total{session=\"%llu\"} %llu\n"
                  "predrop_session_rr_rtt_seconds{session=\"%llu\"} %.6f\n",
                  id, static_cast<unsigned long long>(st.receiver_reports), id,
                  static_cast<unsigned long long>(st.rtcp_errors), id,
                  static_cast<unsigned long long>(st.rr_rejected), id,
                  st.last_rtt_us < 0 ? -1.0 : st.last_rtt_us / 1e6);
    out += line;
  }
  return out;
}

}  // namespace predrop::server

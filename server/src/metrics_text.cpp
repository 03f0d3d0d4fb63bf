#include "predrop/server/metrics_text.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace predrop::server {

ServerSnapshot snapshot_of(const StreamServer& server) {
  ServerSnapshot s;
  s.worker = server.worker();
  s.stats = server.stats();
  for (std::size_t k = 0; k < kCallbackKinds; ++k) {
    s.callback_exceptions[k] = server.callback_guard().count(static_cast<CallbackKind>(k));
  }
  s.sessions = server.session_count();
  s.connections = server.connection_count();
  const std::uint64_t now = server.now_us();
  for (const SessionView& v : server.session_views()) {
    const StreamSession* ss = v.session;
    SessionMetrics m{ss->config().number, std::string(ss->controller().name()),
                     ss->controller().rate(), ss->stats(), ss->transmitter_stats()};
    m.stream = v.stream;
    m.client = v.client;
    m.transport = v.transport;
    m.playing = ss->playing() && !ss->finished();
    m.bytes_sent = ss->bytes_sent();
    m.age_us = now >= v.setup_us ? now - v.setup_us : 0;
    if (const BlockRecord* last = v.history->last()) m.last_block = *last;
    m.rmax = ss->config().rmax;
    s.session_rows.push_back(std::move(m));
  }
  return s;
}

void add_stats(ServerStats& a, const ServerStats& b) {
  // Every field of ServerStats (stream_server.hpp); a new counter must be added here too.
  a.connections_accepted += b.connections_accepted;
  a.connections_refused += b.connections_refused;
  a.requests += b.requests;
  a.bad_requests += b.bad_requests;
  a.sessions_created += b.sessions_created;
  a.sessions_refused += b.sessions_refused;
  a.sessions_refused_per_address += b.sessions_refused_per_address;
  a.connections_closed_backlog += b.connections_closed_backlog;
  a.connections_paused += b.connections_paused;
  a.sessions_timed_out += b.sessions_timed_out;
  a.connections_timed_out += b.connections_timed_out;
  a.rtsp_bytes_received += b.rtsp_bytes_received;
  a.session_requests_foreign += b.session_requests_foreign;
  a.session_requests_other_worker += b.session_requests_other_worker;
  a.rtcp_datagrams += b.rtcp_datagrams;
  a.rtcp_unknown_source += b.rtcp_unknown_source;
  a.rtp_port_datagrams += b.rtp_port_datagrams;
  a.rtcp_byes_sent += b.rtcp_byes_sent;
  a.connections_closed_by_exception += b.connections_closed_by_exception;
  a.sessions_closed_by_exception += b.sessions_closed_by_exception;
  a.interleaved_sessions += b.interleaved_sessions;
  a.interleaved_frames_received += b.interleaved_frames_received;
  a.interleaved_unknown_channel += b.interleaved_unknown_channel;
  a.interleaved_bad_length += b.interleaved_bad_length;
  a.interleaved_truncated += b.interleaved_truncated;
  a.interleaved_frames_sent += b.interleaved_frames_sent;
  a.interleaved_frames_dropped += b.interleaved_frames_dropped;
  a.pacing_wakeups += b.pacing_wakeups;
  a.session_pumps += b.session_pumps;
  a.pacing_runs_cut += b.pacing_runs_cut;
  a.late_blocks_of_ended_sessions += b.late_blocks_of_ended_sessions;
  a.sessions_ended_by_api += b.sessions_ended_by_api;
  a.publishes += b.publishes;
  a.publishes_refused += b.publishes_refused;
  a.publishers_replaced += b.publishers_replaced;
  a.publish_packets += b.publish_packets;
  a.publish_dropped += b.publish_dropped;
  a.webrtc_offers += b.webrtc_offers;
  a.webrtc_offers_refused += b.webrtc_offers_refused;
  a.webrtc_stun_requests += b.webrtc_stun_requests;
  a.webrtc_stun_refused += b.webrtc_stun_refused;
  a.webrtc_dtls_strangers += b.webrtc_dtls_strangers;
  a.webrtc_dtls_connected += b.webrtc_dtls_connected;
  a.webrtc_dtls_failed += b.webrtc_dtls_failed;
  a.webrtc_dtls_queue_full += b.webrtc_dtls_queue_full;
  a.webrtc_consent_lost += b.webrtc_consent_lost;
  a.webrtc_twcc_feedback += b.webrtc_twcc_feedback;
  a.webrtc_twcc_reports += b.webrtc_twcc_reports;
  a.alerts += b.alerts;
  a.alerts_taken += b.alerts_taken;
  a.webrtc_nacks += b.webrtc_nacks;
  a.webrtc_nacked_packets += b.webrtc_nacked_packets;
  a.webrtc_rtx_packets += b.webrtc_rtx_packets;
  a.webrtc_rtx_bytes += b.webrtc_rtx_bytes;
  a.webrtc_rtx_unknown += b.webrtc_rtx_unknown;
  a.webrtc_rtx_capped += b.webrtc_rtx_capped;
  a.webrtc_key_frame_requests += b.webrtc_key_frame_requests;
  a.webrtc_page_reports += b.webrtc_page_reports;
  a.webrtc_page_quality_blocks += b.webrtc_page_quality_blocks;
  a.redirects += b.redirects;
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
  counter("predrop_sessions_ended_by_api_total", "Sessions ended through the control API.",
          s.sessions_ended_by_api);
  counter("predrop_publishes_total", "Publishers accepted (ANNOUNCE, docs/live.md).", s.publishes);
  counter("predrop_publishes_refused_total",
          "Publishers refused: wrong secret, stream busy, unusable SDP.", s.publishes_refused);
  counter("predrop_publishers_replaced_total", "Publishers closed: another one took the stream.",
          s.publishers_replaced);
  counter("predrop_publish_packets_total", "RTP packets received from publishers.",
          s.publish_packets);
  counter("predrop_publish_dropped_total",
          "Publisher frames dropped (RTCP, tracks not served, malformed, not recording).",
          s.publish_dropped);
  counter("predrop_webrtc_offers_total", "WHEP offers answered (docs/webrtc.md).", s.webrtc_offers);
  counter("predrop_webrtc_offers_refused_total",
          "WHEP offers refused: unusable SDP, unknown stream, session limits.",
          s.webrtc_offers_refused);
  counter("predrop_webrtc_stun_requests_total", "STUN datagrams on the RTP port.",
          s.webrtc_stun_requests);
  counter("predrop_webrtc_stun_refused_total",
          "STUN refused unanswered: malformed, unknown ufrag, MESSAGE-INTEGRITY wrong.",
          s.webrtc_stun_refused);
  counter("predrop_webrtc_dtls_strangers_total",
          "DTLS datagrams from an address no valid ICE check came from.", s.webrtc_dtls_strangers);
  counter("predrop_webrtc_dtls_connected_total", "DTLS-SRTP handshakes completed.",
          s.webrtc_dtls_connected);
  counter("predrop_webrtc_dtls_failed_total",
          "DTLS handshakes failed (a wrong certificate fingerprint among them).",
          s.webrtc_dtls_failed);
  counter("predrop_webrtc_dtls_queue_full_total",
          "DTLS datagrams dropped: the handshake thread's queue was full (the peer retransmits).",
          s.webrtc_dtls_queue_full);
  counter("predrop_webrtc_consent_lost_total", "WHEP sessions ended: no ICE consent for 30 s.",
          s.webrtc_consent_lost);
  counter("predrop_webrtc_twcc_feedback_total",
          "Transport-cc feedback messages read from WebRTC peers (docs/webrtc.md).",
          s.webrtc_twcc_feedback);
  counter("predrop_webrtc_twcc_reports_total",
          "Block reports (L, rate, loss, queue) made from transport-cc feedback for the "
          "controller.",
          s.webrtc_twcc_reports);
  counter("predrop_alerts_total",
          "Interim alerts about a stage in flight: PDAL from measuring receivers, and the "
          "server's own from browsers' transport-cc (docs/design.md §2.9).",
          s.alerts);
  counter("predrop_alerts_taken_total",
          "Interim alerts the policy acted on: the rest of the stage in flight was re-planned.",
          s.alerts_taken);
  counter("predrop_webrtc_nacks_total", "Generic NACKs read from WebRTC peers (docs/webrtc.md).",
          s.webrtc_nacks);
  counter("predrop_webrtc_nacked_packets_total", "Sequence numbers the NACKs named.",
          s.webrtc_nacked_packets);
  counter("predrop_webrtc_rtx_packets_total", "RTX retransmissions sent for NACKs.",
          s.webrtc_rtx_packets);
  counter("predrop_webrtc_rtx_bytes_total", "Bytes of RTX retransmissions (SRTP included).",
          s.webrtc_rtx_bytes);
  counter("predrop_webrtc_rtx_unknown_total",
          "NACKed packets not in the history: never sent (pre-discarded), too old or forged.",
          s.webrtc_rtx_unknown);
  counter("predrop_webrtc_rtx_capped_total",
          "NACKed packets not resent: over the retransmission byte cap or resent twice already.",
          s.webrtc_rtx_capped);
  counter("predrop_webrtc_key_frame_requests_total", "PLIs and FIRs read from WebRTC peers.",
          s.webrtc_key_frame_requests);
  counter("predrop_webrtc_page_reports_total",
          "Quality reports (one per second of play) from WHEP player pages (docs/webrtc.md).",
          s.webrtc_page_reports);
  counter("predrop_webrtc_page_quality_blocks_total",
          "Browser block reports that reached the controller with the player page's P for the "
          "block (docs/webrtc.md \"Quality in the page\").",
          s.webrtc_page_quality_blocks);
  counter("predrop_redirects_total", "DESCRIBEs answered 302 to an edge (docs/edge.md).",
          s.redirects);
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
  if (!more.pulls.empty()) out += render_pull_metrics(more.pulls);
  if (more.endpoint != nullptr) {
    const MetricsEndpointStats& m = more.endpoint->stats();
    counter("predrop_metrics_connections_refused_total",
            "Metrics connections closed at accept (connection limit).", m.refused);
    counter("predrop_metrics_requests_timed_out_total",
            "Metrics connections whose request was not complete by the deadline.", m.timed_out);
  }
  std::uint64_t late_blocks = s.late_blocks_of_ended_sessions;
  for (const ServerSnapshot& w : workers) {
    for (const SessionMetrics& m : w.session_rows) {
      late_blocks += m.transmitter.late_stages;
    }
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
      "# HELP predrop_session_rmax The most the session's policy may discard (control.rmax; a "
      "fixed policy's rate).\n"
      "# TYPE predrop_session_rmax gauge\n"
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
      "# TYPE predrop_session_rr_rtt_seconds gauge\n"
      "# HELP predrop_session_page_quality Last P a WHEP player page reported (share of the "
      "pictures decoded x share of the second not frozen; docs/webrtc.md).\n"
      "# TYPE predrop_session_page_quality gauge\n"
      "# HELP predrop_session_page_freeze_seconds_total Freeze time the player page reported.\n"
      "# TYPE predrop_session_page_freeze_seconds_total counter\n";
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
                  "predrop_session_rmax{session=\"%llu\",policy=\"%.*s\"} %.4f\n", id,
                  static_cast<int>(ss->policy.size()), ss->policy.data(), ss->rmax);
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
    if (st.page_reports > 0) {
      std::snprintf(line, sizeof line,
                    "predrop_session_page_quality{session=\"%llu\"} %.3f\n"
                    "predrop_session_page_freeze_seconds_total{session=\"%llu\"} %.3f\n",
                    id, st.last_page_quality, id, static_cast<double>(st.page_freeze_ms) / 1e3);
      out += line;
    }
  }
  return out;
}

}  // namespace predrop::server

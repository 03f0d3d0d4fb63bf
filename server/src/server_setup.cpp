#include "predrop/server/server_setup.hpp"

#include <algorithm>
#include <limits>
#include <thread>

#include "predrop/core/log.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/rtsp/client_session.hpp"
#include "predrop/server/coupling_groups.hpp"

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

core::Result<SessionControl> make_session_control(const config::ServerConfig& c,
                                                  const CliOverrides& cli) {
  SessionControl o;
  auto policy = config::make_policy_config(c.control);
  if (!policy) return core::make_error("control: " + policy.error().message);
  o.policy = *policy;
  o.player_rate = cli.player_rate.value_or(c.control.player_rate);
  if (!(o.player_rate >= 0.0 && o.player_rate <= 1.0)) {
    return core::make_error("--player-rate must be in [0, 1]");
  }
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
  o.browser_client_policy = c.control.browser_policy == "client";
  o.browser_alert_us = std::int64_t{c.control.browser_alert_ms} * 1000;
  o.browser_start_rate = c.control.browser_start_rate;
  o.browser_repaid_burst_bytes = c.control.browser_repaid_burst_bytes;
  o.discard = c.discard.policy;
  o.discard_seed = c.discard.seed;
  return o;
}

std::string restart_only_changes(const config::ServerConfig& a, const config::ServerConfig& b) {
  std::string out;
  auto note = [&out](bool changed, const char* key) {
    if (!changed) return;
    if (!out.empty()) out += ", ";
    out += key;
  };
  const config::ServerSettings& x = a.server;
  const config::ServerSettings& y = b.server;
  note(x.mode != y.mode, "server.mode");
  note(x.rtsp_listen != y.rtsp_listen, "server.rtsp_listen");
  note(x.streams != y.streams, "server.streams");
  note(x.max_sessions != y.max_sessions, "server.max_sessions");
  note(x.max_sessions_per_address != y.max_sessions_per_address, "server.max_sessions_per_address");
  note(x.max_rtsp_connections != y.max_rtsp_connections, "server.max_rtsp_connections");
  note(x.session_timeout_s != y.session_timeout_s, "server.session_timeout_s");
  note(x.rtsp_idle_timeout_s != y.rtsp_idle_timeout_s, "server.rtsp_idle_timeout_s");
  note(x.srtp != y.srtp, "server.srtp");
  note(x.metrics_listen != y.metrics_listen, "server.metrics_listen");
  note(x.trace_csv != y.trace_csv, "server.trace_csv");
  note(x.interleaved_queue_bytes != y.interleaved_queue_bytes, "server.interleaved_queue_bytes");
  note(x.workers != y.workers, "server.workers");
  note(a.control.couple_prefix_v4 != b.control.couple_prefix_v4 ||
           a.control.couple_prefix_v6 != b.control.couple_prefix_v6,
       "control.couple_prefix_v4/_v6");
  note(a.blocks.duration_ms != b.blocks.duration_ms || a.blocks.bytes != b.blocks.bytes ||
           a.blocks.pacing != b.blocks.pacing ||
           a.blocks.rtp_payload_bytes != b.blocks.rtp_payload_bytes ||
           a.blocks.pacing_quantum_ms != b.blocks.pacing_quantum_ms,
       "blocks");
  note(a.control.report_timeout_stages != b.control.report_timeout_stages,
       "control.report_timeout_stages");
  return out;
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
  auto control = make_session_control(c, cli);
  if (!control) return control.error();
  o.policy = control->policy;
  o.player_rate = control->player_rate;
  o.player_adaptation = control->player_adaptation;
  o.player_policy = control->player_policy;
  o.browser_client_policy = control->browser_client_policy;
  o.browser_alert_us = control->browser_alert_us;
  o.browser_start_rate = control->browser_start_rate;
  o.browser_repaid_burst_bytes = control->browser_repaid_burst_bytes;
  o.discard = control->discard;
  o.discard_seed = control->discard_seed;
  if (c.control.couple_prefix_v4 != 0 || c.control.couple_prefix_v6 != 0) {
    o.coupling =
        std::make_shared<CouplingGroups>(c.control.couple_prefix_v4, c.control.couple_prefix_v6);
  }
  o.interleaved_queue_bytes = c.server.interleaved_queue_bytes;
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
    if (!s.pull_url.empty()) {
      // A pulled stream (docs/live.md "Pull"): the same point a publisher would claim.
      if (auto where = rtsp::server_address_of(s.pull_url); !where) {
        return core::make_error("stream '" + s.name + "': source: " + where.error().message);
      }
      LivePointSettings live;
      live.replace = true;  // the puller's own new source (new upstream parameters) replaces
      live.source.max_payload = po.max_payload;
      live.source.block_us = static_cast<std::int64_t>(block_us);
      PullSettings pull;
      pull.url = s.pull_url;
      pull.always = s.pull_always;
      live.pull = pull;
      live.edges = s.edges;
      o.streams.push_back(StreamDefinition{s.name, std::make_shared<LivePoint>(std::move(live))});
      continue;
    }
    if (s.publish) {
      // A published stream (docs/live.md): blocks of the configured duration, cut at key frames.
      LivePointSettings live;
      live.secret = s.publish_secret;
      live.replace = s.replace;
      live.edges = s.edges;
      live.source.max_payload = po.max_payload;
      live.source.block_us = static_cast<std::int64_t>(block_us);
      o.streams.push_back(StreamDefinition{s.name, std::make_shared<LivePoint>(std::move(live))});
      continue;
    }
    auto m = media::MediaFile::open(s.path, po);
    if (!m) return core::make_error("stream '" + s.name + "': " + m.error().message);
    if ((*m)->warning_count() > 0) {
      core::log(core::LogLevel::kWarn, "media", "%s: %zu problems skipped (first: %s)",
                s.path.c_str(), (*m)->warning_count(),
                (*m)->warnings().empty() ? "" : (*m)->warnings()[0].c_str());
    }
    for (const auto& skipped : (*m)->skipped()) {
      core::log(core::LogLevel::kWarn, "media", "%s: stream skipped: %s", s.path.c_str(),
                skipped.c_str());
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

}  // namespace predrop::server

#include "session_start.hpp"

#include <cmath>
#include <functional>

#include "predrop/core/policy_factory.hpp"
#include "session_description.hpp"

namespace predrop::server::detail {

StreamSessionConfig session_config(const SessionEntry& entry, const StreamServerOptions& options) {
  StreamSessionConfig cfg;
  cfg.id = entry.id;
  cfg.number = entry.number;
  cfg.tracks = entry.tracks;
  cfg.extension_ids = kExtensionIds;
  // A browser with transport-cc gets the transport-wide sequence number only: it reads neither
  // the stage tag nor abs-send-time (not negotiated), and its feedback replaces both.
  if (entry.webrtc && entry.transport_cc_id != 0) {
    cfg.extension_ids = wire::RtpExtensionIds{0, 0, entry.transport_cc_id};
  }
  if (entry.webrtc && entry.rtx_payload_type != 0 && !entry.tracks.empty()) {
    chain::RetransmitConfig rtx;
    rtx.ssrc = entry.rtx_ssrc;
    rtx.payload_type = entry.rtx_payload_type;
    rtx.initial_sequence = entry.rtx_initial_sequence;
    cfg.retransmission = rtx;
  }
  cfg.rtcp_fb = entry.webrtc && entry.rtcp_fb;
  if (entry.webrtc && entry.transport_cc_id != 0) cfg.transport_alert_us = options.browser_alert_us;
  cfg.page_quality = entry.webrtc;
  cfg.whole_frames = entry.webrtc;
  // A WHEP session's keys come from its DTLS handshake, in the one profile it negotiates.
  cfg.srtp_suite =
      entry.webrtc ? std::optional(wire::SrtpSuite::AesCm128HmacSha1_80) : options.srtp;
  cfg.key = entry.key;
  cfg.discard = options.discard;
  cfg.discard_seed = options.discard_seed ^ std::hash<std::string>{}(entry.id);
  cfg.paced = options.paced;
  cfg.max_stages = options.max_stages;
  cfg.feedback = entry.feedback;
  cfg.rr_adaptation =
      !entry.feedback && options.player_adaptation == PlayerAdaptation::kReceiverReports;
  cfg.report_timeout_us = options.report_timeout_us;
  cfg.max_payload_size = options.max_payload_size;
  cfg.rmax = policy_rmax(session_policy(entry, options));
  return cfg;
}

std::unique_ptr<SessionTransport> session_transport(const SessionEntry& entry,
                                                    net::UdpEndpoint& rtp, net::UdpEndpoint& rtcp,
                                                    InterleavedOutput* interleaved) {
  if (entry.interleaved) {
    std::vector<InterleavedChannels> channels;
    for (const SessionTrack& t : entry.tracks) {
      channels.push_back(t.interleaved.value_or(InterleavedChannels{}));
    }
    return std::make_unique<InterleavedTransport>(rtp, *interleaved, std::move(channels));
  }
  std::vector<std::optional<net::SocketAddress>> rtcp_to;
  for (const SessionTrack& t : entry.tracks) {
    rtcp_to.push_back(t.rtcp_destination);
  }
  // rtcp-mux (RFC 5761): a browser takes RTCP only from the address its ICE pair names.
  return std::make_unique<UdpTransport>(rtp, entry.webrtc ? rtp : rtcp, std::move(rtcp_to));
}

core::PolicyConfig session_policy(const SessionEntry& entry, const StreamServerOptions& options) {
  core::PolicyConfig policy = options.policy;
  // A browser with transport-cc and its player page has L and P like a PDFB client.
  const bool browser_client =
      entry.webrtc && entry.transport_cc_id != 0 && options.browser_client_policy;
  if (!entry.feedback && !browser_client) {
    if (options.player_adaptation == PlayerAdaptation::kReceiverReports) {
      policy = options.player_policy;
    } else {
      policy.policy = "fixed";
      policy.fixed_rate = options.player_rate;
    }
  }
  // A browser starts below the stream (control.browser_start_rate; docs/webrtc.md, the bullet
  // "The start" under "Adaptation from transport-cc"): its frame rate then only rises, and its
  // freeze count reads a frame rate that falls as freezes.
  if (entry.webrtc && policy.policy == "capacity" && options.browser_start_rate > 0.0) {
    policy.capacity.start_rate = std::fmin(options.browser_start_rate, policy.capacity.rmax);
  }
  // A browser's leading burst is paid back (control.browser_repaid_burst_bytes): with the
  // server's interim alert taking the onsets, the burst's queue standing under a pace at the
  // bottleneck's rate is what is left of its steady queue (bench/README.md "The browser's burst
  // paid back").
  if (entry.webrtc && policy.policy == "capacity" && options.browser_repaid_burst_bytes > 0.0) {
    policy.capacity.repaid_burst_bytes = options.browser_repaid_burst_bytes;
  }
  return policy;
}

double policy_rmax(const core::PolicyConfig& policy) {
  // Each policy keeps its own copy of control.rmax (config::make_policy_config).
  if (policy.policy == "capacity") return policy.capacity.rmax;
  if (policy.policy == "adaptive") return policy.adaptive.rmax;
  if (policy.policy == "fixed") return policy.fixed_rate;
  return policy.rule.rmax;
}

std::unique_ptr<core::RateController> session_controller(const SessionEntry& entry,
                                                         const StreamServerOptions& options) {
  auto controller = core::make_rate_controller(session_policy(entry, options));
  return controller ? std::move(controller.value()) : nullptr;
}

}  // namespace predrop::server::detail

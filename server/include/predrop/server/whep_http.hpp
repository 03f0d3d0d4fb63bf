#pragma once
// WHEP over the metrics listener's HTTP (draft-ietf-wish-whep §4; docs/webrtc.md):
//
//   GET    /<stream>/               a player page (plain JS: RTCPeerConnection + fetch)
//   GET    /<stream>/player.js      its script
//   POST   /<stream>/whep           an SDP offer (application/sdp) -> 201 Created, the SDP
//                                   answer and Location: /<stream>/whep/<session>
//   DELETE /<stream>/whep/<session> ends the session (200; 404 if unknown)
//   POST   /<stream>/whep/<session>/quality
//                                   the page's quality of one second of play (text/plain,
//                                   parse_page_quality(); 204; 400 malformed, 404 unknown)
//
// Routing and text only, over the functions of a WhepBackend (main.cpp wires them to the
// workers), so that it is tested without sockets. The session's id in its Location is its only
// credential (128 random bits), as an RTSP session id is. Errors: every request gets a status.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/net/socket_address.hpp"
#include "predrop/server/metrics_endpoint.hpp"
#include "predrop/server/whep_outcome.hpp"

namespace predrop::server {

/// What the WHEP routes call.
struct WhepBackend {
  /// StreamWorkers::whep_offer(stream, offer, peer, candidate_ip).
  std::function<WhepOutcome(std::string_view, std::string_view, const net::SocketAddress&,
                            std::string_view)>
      offer;
  /// StreamWorkers::whep_delete(session).
  std::function<bool(std::string_view)> end;
  /// StreamWorkers::whep_quality(session, report).
  std::function<bool(std::string_view, const PageQuality&)> quality;
  /// The streams offered (the player page is served for these only).
  std::vector<std::string> streams;
};

/// Reads a page's report, "p=0.97&decoded=30&dropped=0&freezes=0&freeze_ms=0&rtp_from=T&rtp_to=T"
/// (any order; at most 256 bytes; p required, in [0, 1]; the counts optional, each below 10^6;
/// rtp_from and rtp_to 32-bit RTP timestamps, both or neither; unknown keys ignored); nullopt
/// when malformed.
std::optional<PageQuality> parse_page_quality(std::string_view body);

/// Answers one request for a WHEP path (is_whep_target()).
HttpReply handle_whep(const HttpRequest& request, const WhepBackend& backend);

}  // namespace predrop::server

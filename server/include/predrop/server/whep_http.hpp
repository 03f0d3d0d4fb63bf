#pragma once
// WHEP over the metrics listener's HTTP (draft-ietf-wish-whep §4; docs/webrtc.md):
//
//   GET    /<stream>/               a player page (plain JS: RTCPeerConnection + fetch)
//   GET    /<stream>/player.js      its script
//   POST   /<stream>/whep           an SDP offer (application/sdp) -> 201 Created, the SDP
//                                   answer and Location: /<stream>/whep/<session>
//   DELETE /<stream>/whep/<session> ends the session (200; 404 if unknown)
//
// Routing and text only, over the functions of a WhepBackend (main.cpp wires them to the
// workers), so that it is tested without sockets. The session's id in its Location is its only
// credential (128 random bits), as an RTSP session id is. Errors: every request gets a status.
#include <functional>
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
  /// The streams offered (the player page is served for these only).
  std::vector<std::string> streams;
};

/// Answers one request for a WHEP path (is_whep_target()).
HttpReply handle_whep(const HttpRequest& request, const WhepBackend& backend);

}  // namespace predrop::server

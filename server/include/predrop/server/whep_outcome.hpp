#pragma once
// What a WHEP offer came to (StreamServer::whep_offer(), docs/webrtc.md), apart from the server
// so that its units and the HTTP routing (whep_http.hpp) name it without the facade.
#include <cstdint>
#include <string>

namespace predrop::server {

/// The outcome of a WHEP offer (StreamServer::whep_offer(), docs/webrtc.md).
struct WhepOutcome {
  int status = 201;     ///< 201 with an answer; else 400 (offer), 404 (stream), 406 (codec), 503.
  std::string answer;   ///< The SDP answer (status 201).
  std::string session;  ///< The session's id: the last segment of its Location.
  std::string error;    ///< Why, when status is not 201.
};

/// One second of play as the player page saw it (docs/webrtc.md "Quality in the page"), posted
/// to /<stream>/whep/<session>/quality.
struct PageQuality {
  double p = 0;  ///< Share of the file's pictures decoded x share of the second not frozen.
  std::uint32_t frames_decoded = 0;
  std::uint32_t frames_dropped = 0;
  std::uint32_t freezes = 0;
  std::uint32_t freeze_ms = 0;
  /// The media the second played (docs/webrtc.md "Quality in the page"): the RTP timestamps of
  /// the last video frame presented when it began and when it ended. Both or neither; without
  /// them the report is shown but names no block.
  bool has_rtp = false;
  std::uint32_t rtp_from = 0;
  std::uint32_t rtp_to = 0;
};

}  // namespace predrop::server

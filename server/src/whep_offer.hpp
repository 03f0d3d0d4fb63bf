#pragma once
// What a WHEP offer sets up (docs/webrtc.md): the session entry — admitted by the same
// SessionDirectory limits as an RTSP SETUP, one video track under the browser's payload type,
// random SSRC, sequence and timestamp offset, and an Opus audio track beside it when the file
// has one and the browser offers Opus (docs/webrtc.md "Audio") — and the SDP answer. Pure apart
// from the directory's count; the facade adds the entry and the peer's ICE/DTLS state.
//
// Threading: the server's loop thread. Errors: an outcome with a status, never a throw.
#include <memory>
#include <string>
#include <string_view>

#include "predrop/server/server_options.hpp"
#include "predrop/server/whep_outcome.hpp"
#include "predrop/webrtc/ice_lite.hpp"
#include "session_table.hpp"

namespace predrop::server::detail {

/// A prepared WHEP session, or why there is none (entry null).
struct WhepSetup {
  WhepOutcome outcome;
  std::unique_ptr<SessionEntry> entry;
  webrtc::IceCredentials local;
  std::string remote_ufrag;
  std::string remote_fingerprint;
};

/// Where the browser's ICE should send: what the RTP socket is bound to, or `hint` (the address
/// the HTTP request came in on) when it is bound to every interface.
struct WhepEndpoint {
  std::string bind_ip;
  std::string hint;
  std::uint16_t port = 0;
  std::string fingerprint;  ///< This worker's DTLS certificate's.
};

/// Prepares the session for `offer` on `stream` from `peer`.
WhepSetup prepare_whep_session(const StreamServerOptions& options, const SessionTable& sessions,
                               std::string_view stream, std::string_view offer,
                               const net::SocketAddress& peer, const WhepEndpoint& endpoint);

}  // namespace predrop::server::detail

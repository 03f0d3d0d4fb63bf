#pragma once
// What a set-up session is started with at its first PLAY (or at start-up for a push): the
// StreamSession's configuration from its entry and the server's options; its rate controller —
// the configured policy for a client that sends PDFB; for a player without PDFB, the player
// policy fed by its Receiver Reports, or the fixed player rate (docs/rtsp.md "Adaptation from
// Receiver Reports"); and its transport (session_transport.hpp): UDP from the server's port pair,
// or interleaved on the RTSP connection it was set up on.
//
// Threading: the server's loop thread.
#include <memory>

#include "predrop/core/rate_controller.hpp"
#include "predrop/server/server_options.hpp"
#include "predrop/server/session_transport.hpp"
#include "predrop/server/stream_session.hpp"
#include "session_table.hpp"

namespace predrop::server::detail {

/// The session's configuration.
StreamSessionConfig session_config(const SessionEntry& entry, const StreamServerOptions& options);

/// The session's way out: interleaved into `interleaved` (its connection's queue; must be given
/// for an interleaved session), else UDP on the server's `rtp` and `rtcp` sockets.
std::unique_ptr<SessionTransport> session_transport(const SessionEntry& entry,
                                                    net::UdpEndpoint& rtp, net::UdpEndpoint& rtcp,
                                                    InterleavedOutput* interleaved);

/// The policy the session is controlled by: the configured one for a client that sends PDFB,
/// else the player policy (RR adaptation) or "fixed" at the player rate.
core::PolicyConfig session_policy(const SessionEntry& entry, const StreamServerOptions& options);

/// The most `policy` may discard: its rmax; for "fixed", the rate it keeps.
double policy_rmax(const core::PolicyConfig& policy);

/// The session's controller (of session_policy()); nullptr if the policy cannot be made.
std::unique_ptr<core::RateController> session_controller(const SessionEntry& entry,
                                                         const StreamServerOptions& options);

}  // namespace predrop::server::detail

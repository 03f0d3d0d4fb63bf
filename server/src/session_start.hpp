#pragma once
// What a set-up session is started with at its first PLAY (or at start-up for a push): the
// StreamSession's configuration from its entry and the server's options, and its rate
// controller — the configured policy for a client that sends PDFB; for a player without PDFB,
// the player policy fed by its Receiver Reports, or the fixed player rate (docs/rtsp.md
// "Adaptation from Receiver Reports").
//
// Threading: the server's loop thread.
#include <memory>

#include "predrop/core/rate_controller.hpp"
#include "predrop/server/server_options.hpp"
#include "predrop/server/stream_session.hpp"
#include "session_table.hpp"

namespace predrop::server::detail {

/// The session's configuration (without its interleaved output, which the facade sets).
StreamSessionConfig session_config(const SessionEntry& entry, const StreamServerOptions& options);

/// The session's controller; nullptr if the policy cannot be made.
std::unique_ptr<core::RateController> session_controller(const SessionEntry& entry,
                                                         const StreamServerOptions& options);

}  // namespace predrop::server::detail

#pragma once
// Sessions started without RTSP (StreamServerOptions::pushes, `--push`): each stream is sent to
// a fixed destination (video at its port, each further track 2 higher, RTCP at +1) and described
// by an SDP file that any player can open (`ffplay -protocol_whitelist file,udp,rtp,srtp,crypto
// -i f.sdp`). Nobody controls them: no owner, no connection, no expiry.
//
// Threading: the server's loop thread, at start-up. Errors: throws std::runtime_error (unknown
// stream, SDP file not writable).
#include <memory>
#include <vector>

#include "predrop/server/server_options.hpp"
#include "session_table.hpp"

namespace predrop::server::detail {

/// One entry per push target, its SDP file written; ids unique in `sessions`.
std::vector<std::unique_ptr<SessionEntry>> make_push_sessions(const StreamServerOptions& options,
                                                              const SessionTable& sessions);

}  // namespace predrop::server::detail

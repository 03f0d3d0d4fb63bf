#pragma once
// The server's loop callbacks run through net::CallbackGuard, the project's one exception
// boundary (predrop/net/callback_guard.hpp): an exception is caught, counted per kind, logged,
// and the caller closes only the offending connection or session. These are the kinds the
// server counts, the labels of predrop_callback_exceptions_total{kind=...}.
#include <array>

#include "predrop/net/callback_guard.hpp"

namespace predrop::server {

using net::CallbackGuard;
using net::CallbackKind;
using net::kCallbackKinds;

/// The kinds of loop callback the server runs: an RTSP connection's data, close or accept; a
/// datagram on the RTCP port; the pacing and housekeeping timers (and the program's own timers
/// and signals); a metrics request.
inline constexpr std::array kServerCallbackKinds{CallbackKind::kRtsp, CallbackKind::kRtcp,
                                                 CallbackKind::kTimer, CallbackKind::kMetrics};

}  // namespace predrop::server

#pragma once
// What one RTCP datagram, as the session's intake read it (chain::Intake), adds to the session's
// counters (SessionStats) and to the counts of that datagram the server totals (RtcpCounts).
// The session keeps what acts on it: the controller and the ledger, retransmissions, key frames,
// the client's last sign of life. Pure; no allocation, no logging.
#include "predrop/chain/feedback_intake.hpp"
#include "predrop/server/stream_session.hpp"

namespace predrop::server::detail {

/// Counts what `in` read. False when the datagram failed (counted as an RTCP error): nothing
/// more of it counts, and the session does nothing with it.
bool count_rtcp(const chain::Intake& in, SessionStats& stats, RtcpCounts& counts);

}  // namespace predrop::server::detail

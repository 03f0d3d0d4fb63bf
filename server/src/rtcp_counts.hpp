#pragma once
// What one RTCP datagram, as the session's intake read it (chain::Intake), adds to the session's
// counters (SessionStats) and to the counts of that datagram the server totals (RtcpCounts).
// The session keeps what acts on it: the controller and the ledger, retransmissions, key frames,
// the client's last sign of life. Pure; no allocation, no logging.
#include <cstdint>

#include "predrop/chain/feedback_intake.hpp"
#include "predrop/chain/retransmission.hpp"
#include "predrop/server/stream_session.hpp"

namespace predrop::server::detail {

/// Counts what `in` read. False when the datagram failed (counted as an RTCP error): nothing
/// more of it counts, and the session does nothing with it.
bool count_rtcp(const chain::Intake& in, SessionStats& stats, RtcpCounts& counts);

/// What answering one datagram's NACKs added to `counts`: the retransmission counters
/// `before` and `after` the transmitter's retransmit() call, and the NACKed numbers the intake
/// cut off (`truncated`, refused like the capped and repeated ones).
void count_retransmits(const chain::RetransmitStats& before, const chain::RetransmitStats& after,
                       std::uint64_t truncated, RtcpCounts& counts);

/// The session's counters as shown: `stats` with the transmitter's retransmission totals `rtx`
/// (the repeated ones added to those the intake cut off, which count_rtcp() counted).
SessionStats with_retransmits(SessionStats stats, const chain::RetransmitStats& rtx);

}  // namespace predrop::server::detail

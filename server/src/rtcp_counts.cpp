// The counters of one RTCP datagram; see rtcp_counts.hpp.
#include "rtcp_counts.hpp"

namespace predrop::server::detail {

bool count_rtcp(const chain::Intake& in, SessionStats& stats, RtcpCounts& counts) {
  stats.rr_rejected += in.rr_blocks_refused;
  stats.rr_reports += in.rr_intervals;
  if (in.rtt_us) stats.last_rtt_us = *in.rtt_us;
  if (in.jitter_us) stats.last_jitter_us = *in.jitter_us;
  if (in.unprotected_rr) {
    ++stats.receiver_reports;
    ++stats.rr_unprotected;
  } else if (in.error) {
    ++stats.rtcp_errors;
    return false;
  } else if (in.receiver_report) {
    ++stats.receiver_reports;
    stats.last_fraction_lost = in.fraction_lost;
    stats.last_jitter = in.jitter;
  }
  stats.reports_rejected += in.unknown_stages;
  stats.alerts_refused += in.alerts_refused;
  if (in.transport_cc != 0) {
    counts.twcc_feedback = in.transport_cc;
    counts.twcc_reports = in.reports.size();
    stats.twcc_feedback += counts.twcc_feedback;
    stats.twcc_reports += counts.twcc_reports;
  }
  if (in.nacks != 0) {
    counts.nacks = in.nacks;
    counts.nacked_packets = in.nacked.size() + in.nacked_truncated;
    stats.nacks += counts.nacks;
    stats.nacked_packets += counts.nacked_packets;
    stats.rtx_repeated += in.nacked_truncated;
  }
  counts.key_frame_requests = in.plis + in.firs;
  stats.key_frame_requests += counts.key_frame_requests;
  return true;
}

void count_retransmits(const chain::RetransmitStats& before, const chain::RetransmitStats& after,
                       std::uint64_t truncated, RtcpCounts& counts) {
  counts.rtx_packets = after.sent - before.sent;
  counts.rtx_bytes = after.bytes - before.bytes;
  counts.rtx_unknown = after.unknown - before.unknown;
  counts.rtx_refused =
      truncated + (after.capped - before.capped) + (after.repeated - before.repeated);
}

SessionStats with_retransmits(SessionStats stats, const chain::RetransmitStats& rtx) {
  stats.rtx_packets = rtx.sent;
  stats.rtx_bytes = rtx.bytes;
  stats.rtx_unknown = rtx.unknown;
  stats.rtx_capped = rtx.capped;
  stats.rtx_repeated += rtx.repeated;
  return stats;
}

}  // namespace predrop::server::detail

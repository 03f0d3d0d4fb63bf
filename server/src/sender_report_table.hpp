#pragma once
// What a session's SRs say (RFC 3550 §6.4.1), one entry per sending SSRC: each track's SSRC,
// RTP timestamp offset, clock rate and counts so far, and, once it sent a retransmission, the
// RTX stream's (RFC 4588). Built from the transmitter's counters at every SR and BYE;
// SenderReports (sender_reports.hpp) sends it.
//
// Pure: no socket, no clock; nothing is allocated.
#include <array>
#include <cstddef>
#include <optional>
#include <span>

#include "predrop/chain/retransmission.hpp"
#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/media/block_source.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/server/stream_session.hpp"
#include "sender_reports.hpp"

namespace predrop::server::detail {

/// The SR entries of one session at one instant.
struct SenderReportTable {
  /// One entry per track, and one more for the RTX stream.
  std::array<SenderReports::Track, media::kMaxSourceStreams + 1> entries{};
  std::size_t count = 0;
  /// The first video track, whose SR carries the publisher's capture time (PDCT); none without
  /// video.
  std::optional<std::size_t> video;

  /// The entries in use, for SenderReports::send.
  std::span<const SenderReports::Track> tracks() const { return {entries.data(), count}; }
};

/// The entries for `tracks` (at most media::kMaxSourceStreams) of a source with `streams`,
/// with `sent` the transmitter's counters of each track. With `retransmission` set for one of
/// them and `rtx` showing a retransmission sent, the RTX stream follows: its own SSRC and
/// counts, the repaired track's timestamps (an RTX packet keeps the original's) and its RTCP way
/// (rtcp-mux: the same 5-tuple).
SenderReportTable sender_report_table(std::span<const SessionTrack> tracks,
                                      std::span<const media::StreamInfo> streams,
                                      std::span<const chain::TrackCounters> sent,
                                      const std::optional<chain::RetransmitConfig>& retransmission,
                                      const chain::RetransmitStats& rtx);

}  // namespace predrop::server::detail

// A session's SR entries (sender_report_table.hpp).
#include "sender_report_table.hpp"

#include <algorithm>

namespace predrop::server::detail {

SenderReportTable sender_report_table(std::span<const SessionTrack> tracks,
                                      std::span<const media::StreamInfo> streams,
                                      std::span<const chain::TrackCounters> sent,
                                      const std::optional<chain::RetransmitConfig>& retransmission,
                                      const chain::RetransmitStats& rtx) {
  SenderReportTable table;
  const std::size_t n = std::min({media::kMaxSourceStreams, tracks.size(), sent.size()});
  for (std::size_t t = 0; t < n; ++t) {
    const SessionTrack& track = tracks[t];
    const media::StreamInfo& stream = streams[track.media_stream];
    if (!table.video && stream.kind == media::MediaKind::kVideo) table.video = t;
    table.entries[t] = {track.ssrc, track.timestamp_offset, stream.clock_rate, sent[t].packets,
                        sent[t].octets};
  }
  table.count = n;
  // The RTX stream is an RTP stream of its own SSRC: once it sent a retransmission it is a
  // sender, and its SR carries its own counts. It goes the way of the repaired track's RTCP;
  // BYE names it too.
  if (retransmission && retransmission->track < n && rtx.sent > 0) {
    const std::size_t repaired = retransmission->track;
    table.entries[table.count++] = {retransmission->ssrc,
                                    table.entries[repaired].timestamp_offset,
                                    table.entries[repaired].clock_rate,
                                    rtx.sent,
                                    rtx.octets,
                                    repaired};
  }
  return table;
}

}  // namespace predrop::server::detail

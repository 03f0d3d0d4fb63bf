// The chain settings of a stream session (session_chain.hpp).
#include "session_chain.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "predrop/core/stage_report.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/wire/rtp.hpp"

namespace predrop::server::detail {

SessionChain session_chain(const StreamSessionConfig& config,
                           std::span<const media::StreamInfo> streams) {
  if (config.tracks.size() > media::kMaxSourceStreams) throw std::runtime_error("too many tracks");
  SessionChain c;
  c.track_of_stream.assign(streams.size(), -1);
  chain::TransmitterConfig& tc = c.transmitter;
  tc.extension_ids = config.extension_ids;
  tc.max_payload_size = config.max_payload_size;
  // Not the session id: that is a credential, and the CNAME travels in every SR (in clear
  // text when SRTP is off).
  tc.cname = "predrop-" + std::to_string(config.number);
  bool video_seen = false;
  for (std::size_t t = 0; t < config.tracks.size(); ++t) {
    const SessionTrack& st = config.tracks[t];
    if (st.media_stream >= streams.size()) throw std::runtime_error("track for unknown stream");
    const media::StreamInfo& stream = streams[st.media_stream];
    if (!video_seen && stream.kind == media::MediaKind::kVideo) {
      video_seen = true;
      c.page_track = t;
    }
    c.track_of_stream[st.media_stream] = static_cast<int>(t);
    tc.tracks.push_back(chain::TrackConfig{
        st.ssrc, st.payload_type.value_or(stream.payload_type), st.initial_sequence,
        st.timestamp_offset, st.rtp_destination, st.rtcp_destination,
        stream.codec == media::Codec::kVp8   ? chain::PictureIdField::kVp8
        : stream.codec == media::Codec::kVp9 ? chain::PictureIdField::kVp9
                                             : chain::PictureIdField::kNone});
  }
  chain::IntakeConfig& intake = c.intake;
  intake.suite = config.srtp_suite;
  intake.key = config.key;
  intake.pdfb = config.feedback;
  intake.rr_reports = !config.feedback && config.rr_adaptation;
  intake.rtcp_fb = config.rtcp_fb;
  for (const SessionTrack& st : config.tracks) {
    intake.tracks.push_back(chain::IntakeTrack{st.ssrc, st.initial_sequence,
                                               streams[st.media_stream].clock_rate, st.client_suite,
                                               st.client_key});
  }
  c.filter_streams =
      std::any_of(c.track_of_stream.begin(), c.track_of_stream.end(), [](int t) { return t < 0; });
  c.packet_overhead = wire::rtp_header_size(config.extension_ids) + core::kLinkOverheadBytes +
                      (config.srtp_suite ? net::srtp_rtp_tag_size(*config.srtp_suite) : 0);
  return c;
}

}  // namespace predrop::server::detail

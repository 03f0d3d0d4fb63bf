#pragma once
// A publisher on one RTSP connection (docs/live.md): RTSP ANNOUNCE (RFC 2326 §10.3) with an SDP
// that has an H.264 video stream, SETUP of its tracks with mode=record, RECORD, then RTP
// interleaved on the connection (§10.12) or over UDP to the server's RTP port (from the
// client_port it set up) into the stream's media::LiveSource. What the ANNOUNCE
// and its URL mean (the tracks, the video's parameter sets, the secret) and the RTP of each
// frame are read here; what a request answers is rtsp_methods.cpp's, and publish_routes.hpp
// hands each "$" frame of a publishing connection to on_frame() and each datagram on the RTP
// port from a publisher's address to on_datagram().
//
// Hostile input: an SDP without usable H.264 is refused (415), a frame on a channel of no track,
// RTCP, a track other than the video, or a frame that is no RTP is counted and dropped; the
// LiveSource counts what its depacketizer cannot use. Nothing allocates per packet.
//
// Threading: the loop thread of the connection's worker.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/media/live_source.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "predrop/server/live_point.hpp"

namespace predrop::server::detail {

/// One m= section of a publisher's SDP.
struct PublishedTrack {
  std::string control;  ///< Its a=control ("streamid=0", "stream=0", "trackID=1").
  bool video = false;   ///< The H.264 stream the source is made of (exactly one track).
  int payload_type = -1;
  bool set_up = false;
  std::optional<std::uint8_t> rtp_channel;  ///< Interleaved channel of its RTP.
  /// Over UDP: the address its RTP comes from (the publisher's IP, its client_port).
  std::optional<net::SocketAddress> udp_from;
  bool audio = false;  ///< The AAC or Opus track passed through (at most one).
  std::optional<std::uint8_t> rtcp_channel;  ///< Interleaved channel of its RTCP (its SRs).
};

/// What an ANNOUNCE's SDP says.
struct Announced {
  std::vector<PublishedTrack> tracks;
  media::LiveVideoSpec video;
  /// The first AAC (mpeg4-generic, AAC-hbr or AAC-lbr; MP4A-LATM with cpresent=0, repacked
  /// into AAC-hbr) or Opus audio section, if any.
  std::optional<media::LiveAudioSpec> audio;
  /// Without `audio`: the first audio section's rtpmap and why it is not served (for the log),
  /// "" if there was no audio section.
  std::string audio_unserved;
};

/// Reads an ANNOUNCE body: every m= section becomes a track; the first H.264 video section
/// (packetization-mode 0 or 1) is the one served, with the first AAC or Opus audio section. An
/// error says why (no H.264, malformed).
core::Result<Announced> read_announce(std::string_view sdp);
/// The same rules for an SDP already parsed (a pulled upstream's DESCRIBE answer,
/// predrop/server/live_pull.hpp): what a pulled stream may carry is what a publisher may send.
core::Result<Announced> read_live_sdp(const rtsp::SdpSession& sdp);

/// The value of `secret=` in the URL's query, if any. FFmpeg sends its SETUP for
/// "rtsp://h/live?secret=s" as "rtsp://h/live?secret=s/streamid=0": the value ends at '&', '/'
/// or '#'.
std::optional<std::string_view> url_secret(std::string_view url);
/// Compares in time independent of where they differ (the secret is a credential).
bool secret_matches(std::string_view given, std::string_view expected);
/// The last path segment of a SETUP URL (its track's control), after the last '/', without a
/// query that follows it ("stream=0" of GStreamer's ".../live/stream=0?secret=s").
std::string_view url_control(std::string_view url);
/// Whether a SETUP URL names `stream` (the publisher's), directly ("rtsp://h/live?secret=s/
/// streamid=0", FFmpeg's) or with one of the announced `tracks`' controls as its last path
/// segment ("rtsp://h/live/stream=0?secret=s", GStreamer's rtspclientsink).
bool names_published_stream(std::string_view url, std::string_view stream,
                            std::span<const PublishedTrack> tracks);

/// The RTP fields a LiveSource needs, read without allocating; nullopt if it is no RTP packet.
struct RtpFields {
  std::uint16_t sequence = 0;
  std::uint32_t timestamp = 0;
  std::uint8_t payload_type = 0;
  bool marker = false;
  std::span<const std::uint8_t> payload;
};
std::optional<RtpFields> read_rtp(std::span<const std::uint8_t> packet);

/// The sender report of an RTCP compound (its first packet), if any, into `source` as stream
/// `stream`'s (0 video, 1 audio); false if there was none.
bool feed_sender_reports(media::LiveSource& source, std::size_t stream,
                         std::span<const std::uint8_t> rtcp);

/// A connection's publisher.
struct Publisher {
  std::string stream;
  std::shared_ptr<LivePoint> point;
  std::shared_ptr<media::LiveSource> source;
  std::uint64_t token = 0;
  std::string session_id;
  std::vector<PublishedTrack> tracks;
  bool recording = false;
  bool released = false;

  /// Outcome of one interleaved frame.
  enum class Frame : std::uint8_t { kTaken, kDropped, kReplaced };
  /// A "$" frame on `channel` at `now_us`: RTP of the video or audio track into the source,
  /// their RTCP sender reports too; anything else dropped; kReplaced once another publisher
  /// took the stream (close the connection).
  Frame on_frame(std::uint8_t channel, std::span<const std::uint8_t> payload, std::uint64_t now_us);
  /// The same for a datagram from `from` on the server's RTP port.
  Frame on_datagram(const net::SocketAddress& from, std::span<const std::uint8_t> payload,
                    std::uint64_t now_us);
  /// A datagram from `from` on the server's RTCP port: a track's RTCP (from its RTP port + 1).
  Frame on_rtcp_datagram(const net::SocketAddress& from, std::span<const std::uint8_t> payload);
  /// The publisher stops (TEARDOWN, connection closed): the stream ends for its viewers.
  void release(std::uint64_t now_us);

 private:
  Frame take(const PublishedTrack& track, std::span<const std::uint8_t> packet,
             std::uint64_t now_us);
  // A track's RTCP: its sender reports go to the source (they put audio on video's timeline).
  Frame take_rtcp(const PublishedTrack& track, std::span<const std::uint8_t> packet);
};

}  // namespace predrop::server::detail

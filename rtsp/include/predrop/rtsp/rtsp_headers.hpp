#pragma once
// Values of RTSP 1.0 header fields other than Transport (RFC 2326 §12.37 Session, §12.33 RTP-Info,
// §12.29 / §3.6 Range with NPT) and rtsp:// URLs (§3.2). Pure functions over strings.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"

namespace predrop::rtsp {

/// A Session header value (§12.37): "<id>[;timeout=<s>]".
struct SessionHeader {
  std::string id;                          ///< 1*(ALPHA / DIGIT / "$-_.+"), at most 64 bytes here.
  std::optional<std::uint32_t> timeout_s;  ///< Announced timeout; RFC default is 60 s.
};

/// Parses a Session header value; unknown parameters are ignored.
core::Result<SessionHeader> parse_session(std::string_view value);
/// Formats "<id>" or "<id>;timeout=<s>".
std::string format_session(const SessionHeader& session);
/// True when `id` is a valid session identifier (§3.4 safe characters, 1..64 bytes).
bool is_valid_session_id(std::string_view id);

/// One stream of an RTP-Info header (§12.33).
struct RtpInfoEntry {
  std::string url;
  std::optional<std::uint16_t> seq;      ///< First sequence number after PLAY.
  std::optional<std::uint32_t> rtptime;  ///< RTP timestamp matching the Range start.
};

/// Formats "url=<u>;seq=<n>;rtptime=<t>[,url=...]".
std::string format_rtp_info(const std::vector<RtpInfoEntry>& entries);
/// Parses an RTP-Info value. A comma inside a URL is not supported (FFmpeg and live555 do not
/// produce one either).
core::Result<std::vector<RtpInfoEntry>> parse_rtp_info(std::string_view value);

/// A Range in normal play time (§3.6): "npt=<start>-[<end>]"; "now" reads as 0.
struct NptRange {
  double start_s = 0.0;
  std::optional<double> end_s;
};

/// Parses "npt=0.000-", "npt=10-20.5", "npt=now-". Other formats (smpte, clock) are errors (457).
core::Result<NptRange> parse_npt_range(std::string_view value);
/// Formats "npt=<start>-[<end>]" with millisecond precision.
std::string format_npt_range(const NptRange& range);

/// An rtsp:// URL split into what a server needs to route a request.
struct RtspUrl {
  std::string host;                    ///< Without brackets for IPv6 literals.
  std::uint16_t port = 554;            ///< RFC 2326 §3.2 default.
  std::string path;                    ///< Absolute path as sent, "/" when empty; no query.
  std::string stream;                  ///< Path without slashes at either end and the track part.
  std::optional<std::uint32_t> track;  ///< N of a final "trackID=N" (or "streamid=N") segment.
};

/// Splits "rtsp://host[:port]/name[/trackID=N][?query]". User info is dropped; "rtsps" is refused.
core::Result<RtspUrl> parse_rtsp_url(std::string_view url);
/// The URL for an SDP control attribute (RFC 2326 C.1.1): absolute controls stay, "*" is the base,
/// a relative one is appended to the base with exactly one "/" between them.
std::string resolve_control_url(std::string_view base, std::string_view control);

}  // namespace predrop::rtsp

#pragma once
// SDP (RFC 4566) for RTSP DESCRIBE: a builder for what the server announces and a minimal parser
// for predrop's own clients. Understood attributes: rtpmap / fmtp of the first payload type,
// control (RFC 2326 C.1.1), crypto (RFC 4568 SDES), extmap (RFC 8285) and range (RFC 2326 C.1.5);
// everything else is kept verbatim as free-form attributes.
//
// Interop notes: FFmpeg reads SRTP keys only from a=crypto with AES_CM_128_HMAC_SHA1_80 or _32,
// and only on an RTP/SAVP m= line; it ignores a=extmap (players skip unknown RTP extensions).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"

namespace predrop::rtsp {

/// URI of predrop's per-packet stage extension (docs/design.md §4).
inline constexpr std::string_view kStageExtensionUri = "urn:predrop:stage";
/// URI of the abs-send-time extension (one-way delay growth within a block).
inline constexpr std::string_view kAbsSendTimeUri =
    "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time";

/// One a=extmap line (RFC 8285 §5): "<id>[/<direction>] <uri> [<attributes>]".
struct SdpExtmap {
  int id = 0;             ///< 1..14 for the one-byte header form, up to 255 for two-byte.
  std::string direction;  ///< "sendonly", "recvonly", ... or empty.
  std::string uri;
  std::string attributes;  ///< Extension attributes after the URI, or empty.
  bool operator==(const SdpExtmap&) const = default;
};

/// One a=crypto line (RFC 4568 §9.1): "<tag> <suite> <key-params> [<session-params>]".
struct SdpCrypto {
  std::uint32_t tag = 1;
  std::string suite;           ///< e.g. "AES_CM_128_HMAC_SHA1_80".
  std::string key_params;      ///< e.g. "inline:<base64 key||salt>[|lifetime][|MKI:len]".
  std::string session_params;  ///< Rest of the line, or empty.
  bool operator==(const SdpCrypto&) const = default;
  /// The base64 key of an "inline:" key-params up to the first '|'; empty if not inline.
  std::string_view inline_key() const;
};

/// One m= section.
struct SdpMedia {
  std::string kind = "video";              ///< m= media type: "audio", "video", "application".
  std::uint16_t port = 0;                  ///< 0 under RTSP: the port is negotiated by SETUP.
  std::string proto = "RTP/AVP";           ///< "RTP/AVP" or "RTP/SAVP" (then add crypto).
  int payload_type = 96;                   ///< First format of the m= line, 0..127.
  std::vector<std::string> extra_formats;  ///< Further formats of the m= line, rarely used.
  std::string rtpmap;   ///< After "a=rtpmap:<pt> ", e.g. "H264/90000"; empty = none.
  std::string fmtp;     ///< After "a=fmtp:<pt> ", e.g. "packetization-mode=1".
  std::string control;  ///< a=control value, e.g. "trackID=0".
  std::optional<std::uint32_t> bandwidth_kbps;  ///< b=AS.
  std::vector<SdpCrypto> crypto;
  std::vector<SdpExtmap> extmaps;
  /// Other attributes, without "a=", in order: "recvonly", "x-predrop-block:duration_us=1000000".
  std::vector<std::string> attributes;
  bool operator==(const SdpMedia&) const = default;

  /// The extmap with `uri`, if announced.
  const SdpExtmap* find_extmap(std::string_view uri) const;
  /// Value of the first free-form attribute called `name` ("" for a flag), if present.
  std::optional<std::string_view> attribute(std::string_view name) const;
};

/// A whole session description.
struct SdpSession {
  std::string origin_username = "-";
  std::string session_id = "0";                ///< o= sess-id, decimal digits (up to 20).
  std::string session_version = "0";           ///< o= sess-version, decimal digits (up to 20).
  std::string origin_address = "127.0.0.1";    ///< IP4 unless it contains ':'.
  std::string name = "predrop";                ///< s=; never empty on the wire ("-" if it is).
  std::string connection_address = "0.0.0.0";  ///< Session c=; empty = none.
  std::string tool;                            ///< a=tool; empty = none.
  std::string control;                         ///< Session a=control (usually "*"); empty = none.
  std::string range;                    ///< After "a=range:", e.g. "npt=0-12.000"; empty = none.
  std::vector<std::string> attributes;  ///< Other session attributes, without "a=".
  std::vector<SdpMedia> media;
  bool operator==(const SdpSession&) const = default;
};

/// Writes the session with CRLF line ends in RFC 4566 §5 order. Fails (naming the field) when a
/// field would break the format: CR/LF/NUL anywhere, a space in a token, a payload type outside
/// 0..127 or an extmap id outside 1..255.
core::Result<std::string> build_sdp(const SdpSession& session);

/// Limits of the parser; larger input is an error.
struct SdpLimits {
  std::size_t max_bytes = std::size_t{64} * 1024;
  std::size_t max_media = 32;
  std::size_t max_attributes = 256;  ///< Per section.
};

/// Parses an SDP text (CRLF or LF). Lines of unknown type are skipped (§5 asks parsers to ignore
/// them); a missing v=0, a malformed o=, c= or m= line, a malformed crypto or extmap attribute, a
/// control byte inside a line, or input beyond the limits is an error. The first non-empty
/// rtpmap / fmtp for the first payload type (and the first control, tool, range) fill the fields;
/// repeats and other payload types' lines stay in `attributes`, so
/// parse_sdp(build_sdp(s)) == s for every s that parse_sdp returns.
core::Result<SdpSession> parse_sdp(std::string_view text, SdpLimits limits = {});

}  // namespace predrop::rtsp

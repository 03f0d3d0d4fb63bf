#pragma once
// The RTSP Transport header (RFC 2326 §12.39):
//   transport-spec = transport-protocol "/" profile ["/" lower-transport] *(";" parameter)
// e.g. "RTP/AVP;unicast;client_port=5000-5001" or FFmpeg's "RTP/AVP/UDP;unicast;client_port=..".
// A request may offer several specs separated by commas, in order of preference; the server takes
// the first it can serve. predrop serves unicast RTP over UDP and, when the policy allows it, RTP
// interleaved on the RTSP connection (RTP/AVP/TCP;interleaved=a-b, §10.12); multicast is
// recognised so the server can answer 461 Unsupported Transport.
//
// Note: FFmpeg 5.1 asks for "RTP/AVP/UDP" even when the SDP's m= line says RTP/SAVP (captured in
// tests/server/fixtures); a server that offers SRTP must accept the AVP spelling for it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"

namespace predrop::rtsp {

/// RTP profile of a transport spec.
enum class RtpProfile : std::uint8_t {
  kAvp,    ///< RTP/AVP (RFC 3551)
  kSavp,   ///< RTP/SAVP (RFC 3711)
  kAvpf,   ///< RTP/AVPF (RFC 4585)
  kSavpf,  ///< RTP/SAVPF (RFC 5124)
  kOther,  ///< Anything else ("RAW/RAW/UDP", ...); never acceptable but not a syntax error.
};

/// Lower transport (UDP when not written).
enum class LowerTransport : std::uint8_t { kUdp, kTcp };

/// A pair of ports: RTP and RTCP ("a-b"; "a" alone means a and a+1).
struct PortPair {
  std::uint16_t rtp = 0;
  std::uint16_t rtcp = 0;
  bool operator==(const PortPair&) const = default;
};

/// A pair of interleaved channel numbers ("0-1").
struct ChannelPair {
  std::uint8_t rtp = 0;
  std::uint8_t rtcp = 0;
  bool operator==(const ChannelPair&) const = default;
};

/// One transport spec.
struct TransportSpec {
  RtpProfile profile = RtpProfile::kAvp;
  LowerTransport lower = LowerTransport::kUdp;
  /// transport/profile[/lower] as written ("RTP/AVP/UDP"); replies echo the client's spelling.
  std::string protocol = "RTP/AVP";
  bool multicast = false;  ///< "multicast" given (unicast is the default).
  std::optional<PortPair> client_port;
  std::optional<PortPair> server_port;
  std::optional<ChannelPair> interleaved;
  std::optional<std::uint32_t> ssrc;       ///< 8 hex digits (§12.39).
  std::optional<std::string> mode;         ///< "PLAY" / "RECORD" as written, without quotes.
  std::optional<std::string> destination;  ///< Never honoured by predrop (no third-party sends).
  std::optional<std::string> source;
  std::optional<std::uint8_t> ttl;
  bool operator==(const TransportSpec&) const = default;
};

/// Parses one spec (no commas). Unknown parameters are ignored; malformed known ones are errors.
core::Result<TransportSpec> parse_transport_spec(std::string_view spec);
/// Parses a whole Transport value: every comma-separated alternative, in order (at most 16).
core::Result<std::vector<TransportSpec>> parse_transport(std::string_view value);

/// What a server is willing to serve.
struct TransportPolicy {
  bool allow_avp = true;   ///< Plain RTP/AVP (also when the session is SRTP-protected, see above).
  bool allow_savp = true;  ///< RTP/SAVP.
  /// RTP/AVP/TCP unicast (interleaved= optional: the server picks channels when absent).
  bool allow_interleaved = false;
};

/// Index of the first alternative that `policy` accepts: unicast UDP with client_port (or, with
/// allow_interleaved, unicast TCP), a mode of PLAY (or none) and an allowed profile. nullopt means
/// answer 461 Unsupported Transport.
std::optional<std::size_t> select_transport(const std::vector<TransportSpec>& offers,
                                            const TransportPolicy& policy = {});

/// Wire form, e.g. "RTP/AVP;unicast;client_port=5000-5001;server_port=6000-6001;ssrc=1A2B3C4D".
/// Parameters are written in a fixed order; round-trips through parse_transport_spec.
std::string format_transport(const TransportSpec& spec);

}  // namespace predrop::rtsp

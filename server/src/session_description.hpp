#pragma once
// The SDP a stream is described with (RFC 4566): what a DESCRIBE answers and what a push
// session's SDP file holds. Per track: rtpmap/fmtp from the source, a=control:trackID=N, the
// session's key as SDES a=crypto (RFC 4568, what ffmpeg reads) and again as MIKEY a=key-mgmt
// (RFC 4567/3830, what GStreamer reads), the stage and abs-send-time extensions (RFC 8285);
// a=x-predrop-block with the block size (docs/design.md §4.5).
//
// Threading: any; pure apart from the random MIKEY fields and the wall clock of MIKEY's T.
#include <optional>
#include <string>
#include <string_view>

#include "predrop/net/socket_address.hpp"
#include "predrop/server/server_options.hpp"
#include "predrop/wire/rtp.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::server::detail {

/// RFC 8285 ids of predrop's two header extensions, in every SDP and every session.
inline constexpr wire::RtpExtensionIds kExtensionIds{1, 2};

/// What the description depends on besides the stream.
struct SdpSettings {
  std::optional<wire::SrtpSuite> srtp;  ///< Empty: plain RTP/AVP, no keys.
  std::string block_attribute;          ///< a=x-predrop-block value; empty: none.
};

/// The SDP of `stream` with `key` in its key lines (when SRTP is on and `key` is given), for a
/// client that reached the server at `host`; an npt range when its source has a duration (a
/// file that does not loop).
std::string describe_stream(const StreamDefinition& stream, const wire::SrtpKeyMaterial* key,
                            std::string_view host, const SdpSettings& settings);
/// The same for `source`, one the stream had (a published stream's current source).
std::string describe_stream(const StreamDefinition& stream, const media::BlockSource& source,
                            const wire::SrtpKeyMaterial* key, std::string_view host,
                            const SdpSettings& settings);

/// The same description turned into an SDP file for a push to `destination`: the m= lines name
/// the destination ports (video at its port, each further track 2 higher) and c= its address,
/// as ffmpeg's own -sdp_file does.
std::string push_sdp(const std::string& description, const net::SocketAddress& destination);

}  // namespace predrop::server::detail

#pragma once
// The SDP of a WHEP exchange (draft-ietf-wish-whep §4.2): what the browser's offer says, and
// the server's answer for one video stream. The answer is ICE-lite (RFC 8445 §2.5) with one host
// candidate, a=setup:passive (RFC 5763 §5: the browser is the DTLS client), BUNDLE (RFC 8843)
// over the one accepted m-section, rtcp-mux (RFC 5761), sendonly, and the stream's codec under
// the payload type the browser offered for it (RFC 3264 §6.1). An audio m-section that offers
// opus/48000/2 is accepted too when the stream has an Opus track (same transport, its own SSRC);
// other m-sections (audio without Opus, or for an AAC file, a second video) are rejected with
// port 0 and left out of the BUNDLE group: predrop does not transcode, and browsers decode no
// AAC (docs/webrtc.md).
//
// Pure functions over text; no allocation limits beyond the offer's size, which the HTTP layer
// bounds. Errors as values.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/webrtc/ice_lite.hpp"

namespace predrop::webrtc {

/// One a=rtpmap of an offered m-section, with its a=fmtp.
struct OfferedCodec {
  std::uint8_t payload_type = 0;
  std::string name;  ///< Encoding name as offered ("VP8", "H264", "rtx", ...).
  std::uint32_t clock_rate = 0;
  std::string fmtp;           ///< Empty when the offer has none.
  bool transport_cc = false;  ///< a=rtcp-fb:<pt> transport-cc (or a=rtcp-fb:* transport-cc).
  bool nack = false;          ///< a=rtcp-fb:<pt> nack (RFC 4585 §4.2).
  bool nack_pli = false;      ///< a=rtcp-fb:<pt> nack pli.
  bool ccm_fir = false;       ///< a=rtcp-fb:<pt> ccm fir (RFC 5104 §7.1).
};

/// One m-section of the offer.
struct OfferedMedia {
  std::string kind;  ///< "video", "audio", "application".
  std::string mid;
  std::vector<OfferedCodec> codecs;
  bool can_receive = true;  ///< Not sendonly/inactive.
  /// The a=extmap id of the transport-wide sequence number (wire::kTransportSequenceUri) if
  /// offered with an id the one-byte form takes (1..14); 0 otherwise.
  std::uint8_t transport_cc_id = 0;
};

/// What the answer needs from an offer.
struct WhepOffer {
  std::string ice_ufrag;
  std::string ice_pwd;
  std::string fingerprint_sha256;  ///< The a=fingerprint:sha-256 value.
  std::string setup;               ///< a=setup: "actpass", "active" or "passive".
  std::vector<OfferedMedia> media;
};

/// Reads an offer; an error names what is missing (ICE credentials, a sha-256 fingerprint, a
/// setup that lets the server be passive).
core::Result<WhepOffer> parse_whep_offer(std::string_view sdp);

/// What the server puts into its answer.
struct AnswerParams {
  IceCredentials local;
  std::string fingerprint_sha256;  ///< DtlsCertificate::fingerprint_sha256().
  std::string candidate_ip;        ///< The host candidate: the worker's UDP address.
  std::uint16_t candidate_port = 0;
  std::uint32_t ssrc = 0;
  std::string cname;
  /// The SSRC of the RTX stream (RFC 4588) if the offer lets it be used; 0: never offer RTX.
  std::uint32_t rtx_ssrc = 0;
  /// The SSRC of the Opus audio stream, when the stream has one to offer (answer_whep_offer's
  /// `audio`); distinct from `ssrc` and `rtx_ssrc`.
  std::uint32_t audio_ssrc = 0;
};

/// The answer and what the session must send to match it.
struct WhepAnswer {
  std::string sdp;
  std::uint8_t payload_type = 0;  ///< The browser's payload type for the stream's codec.
  std::string codec;              ///< What was chosen, e.g. "VP8" or "H264 (42e01f)".
  /// Transport-wide congestion control negotiated (the offer had the extension and transport-cc
  /// feedback for the chosen codec): the extension id every packet carries; 0 = not negotiated.
  std::uint8_t transport_cc_id = 0;
  /// NACK with RTX retransmission negotiated: the offer had a=rtcp-fb:<pt> nack and an rtx
  /// payload type with apt=<pt>, and params.rtx_ssrc was set. 0 = not negotiated.
  std::uint8_t rtx_payload_type = 0;
  bool pli = false;  ///< a=rtcp-fb:<pt> nack pli taken.
  bool fir = false;  ///< a=rtcp-fb:<pt> ccm fir taken.
  /// The browser's payload type for Opus when an audio m-section was accepted; 0 = no audio.
  std::uint8_t audio_payload_type = 0;
  /// Why an offered audio m-section was rejected (empty when accepted or none offered).
  std::string audio_rejected;
};

/// Answers `offer` for a stream whose video is `video`; an error when the offer has no video
/// m-section that can receive the stream's codec (H.264 needs packetization-mode=1). When the
/// chosen section offers the transport-wide sequence number and transport-cc feedback for the
/// chosen codec, the answer takes both (a=extmap with the browser's id, a=rtcp-fb transport-cc):
/// docs/webrtc.md "Adaptation from transport-cc". Generic NACK is taken only together with RTX
/// (a=rtcp-fb nack, a=rtpmap rtx/90000 + a=fmtp apt, a=ssrc-group:FID; retransmissions never
/// reuse the stream's own sequence numbers), `nack pli` and `ccm fir` when offered:
/// docs/webrtc.md "NACK and RTX", "PLI and FIR". `a=framerate` carries video.frame_rate when
/// known (the player page's quality measure, docs/webrtc.md "Quality in the page").
/// `audio`: the stream's audio track, or nullptr. The first audio m-section that can receive
/// opus/48000/2 is accepted when `audio` is Opus and params.audio_ssrc is set, and (under
/// BUNDLE one extension map serves every section) when it offers the transport-wide sequence
/// number under the video's id if the video took it; it gets the transport-cc feedback then.
/// Every other audio m-section is rejected with port 0, the reason in `audio_rejected`.
core::Result<WhepAnswer> answer_whep_offer(const WhepOffer& offer, const media::StreamInfo& video,
                                           const AnswerParams& params,
                                           const media::StreamInfo* audio = nullptr);

}  // namespace predrop::webrtc

#pragma once
// MIKEY (RFC 3830) key transport for SRTP in SDP (RFC 4567 `a=key-mgmt:mikey <base64>`), the
// form GStreamer's rtspsrc and live555-based players read instead of SDES `a=crypto`.
//
// What predrop sends, per media, is the message gst-rtsp-server sends: a pre-shared-key
// initiation (data type PSK_INIT) over the RTSP channel, not encrypted and not MAC'd (KEMAC with
// NULL encryption and NULL MAC: RFC 3830 §6.2 allows it where the channel is protected, and
// players accept it), made of
//   common header (version 1, PRF MIKEY-1, a random CSB ID, CS ID map type SRTP-ID, no CS
//   entries: the server's SSRC is not known before SETUP and every player keys all SSRCs of the
//   media alike),
//   T (NTP-UTC timestamp), RAND (16 random bytes),
//   SP (security policy 0, protocol SRTP: encryption algorithm and key length, authentication
//   algorithm and "auth key length", SRTP and SRTCP encryption on, SRTP authentication on),
//   KEMAC { KEY_DATA (type TEK, key data = master key || master salt) }.
// Interop note: GStreamer reads the SP "authentication key length" parameter as the tag length
// (4 -> HMAC-SHA1-32, 10 -> HMAC-SHA1-80) and ignores the tag-length parameter, so that is what
// predrop writes there; for AEAD_AES_128_GCM the encryption algorithm is AES-GCM (6, RFC 7714)
// and authentication NULL.
//
// parse_mikey() reads any such message back (players' own KeyMgmt, tests, fuzzing): bounds-
// checked, no allocation beyond the result, errors as values.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::wire {

/// The values of a MIKEY message that the builder does not derive from the key.
struct MikeyFields {
  std::uint32_t csb_id = 0;             ///< Random per message (RFC 3830 §3.1).
  std::uint64_t ntp_utc = 0;            ///< NTP-UTC timestamp (64-bit, RFC 3830 §6.6).
  std::array<std::uint8_t, 16> rand{};  ///< RAND payload bytes.
};

/// Builds the PSK_INIT message described above for `suite` and `key` (key || salt).
/// Precondition: key.size == key_salt_size(suite).
std::vector<std::uint8_t> build_mikey(SrtpSuite suite, const SrtpKeyMaterial& key,
                                      const MikeyFields& fields);

/// "a=key-mgmt:mikey <base64 of build_mikey()>" without the line break.
std::string format_key_mgmt_attribute(SrtpSuite suite, const SrtpKeyMaterial& key,
                                      const MikeyFields& fields);

/// What a MIKEY message carries for SRTP.
struct MikeyKey {
  SrtpSuite suite = SrtpSuite::AesCm128HmacSha1_80;
  SrtpKeyMaterial key;
  std::uint32_t csb_id = 0;
  std::vector<std::uint32_t> ssrcs;  ///< CS ID map entries (SRTP-ID), if any.
};

/// Parses a MIKEY message (binary). Accepts PSK_INIT with an unencrypted, un-MAC'd KEMAC whose
/// first sub-payload is KEY_DATA (TEK or TGK, optionally with a separate salt) and an optional
/// SP payload; anything else (other data types, encrypted KEMAC, unknown payload types,
/// truncation, lengths that do not add up, a key of the wrong size for the policy) is an error.
core::Result<MikeyKey> parse_mikey(std::span<const std::uint8_t> message);

/// Parses the value of an RTSP `KeyMgmt` header or of `a=key-mgmt`: "mikey <base64>"
/// (RFC 4567 §3; `prot=mikey; data="<base64>"` for the header form). Errors as parse_mikey().
core::Result<MikeyKey> parse_key_mgmt(std::string_view value);

}  // namespace predrop::wire

#pragma once
// SDES key transport for SRTP in SDP (RFC 4568): the a=crypto attribute (§9.1 grammar), the
// "inline:" key method (§9.2, key||salt in base64, optional |lifetime and |MKI:length), and the
// suites of §6.2 (AES_CM_128_HMAC_SHA1_80/_32: 16-byte key + 14-byte salt) and RFC 7714 §12
// (AEAD_AES_128_GCM: 16-byte key + 12-byte salt). Base64 is RFC 4648 §4, strict.
//
// This runs at session setup, not per packet: formatting returns std::string, and errors carry
// text for the RTSP/SDP layer to report. What we accept, and why:
//   - one key-params only, no MKI: predrop uses one master key per direction, and libsrtp's MKI
//     support would need every peer to agree on an MKI length; a clear error beats a silent
//     misconfiguration;
//   - the lifetime is validated for syntax and ignored (libsrtp's default limits apply);
//   - session parameters (KDR, UNENCRYPTED_SRTP, ...) are rejected, since each changes how the
//     stream is protected and none is supported.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"

namespace predrop::wire {

/// SRTP protection profiles predrop can key through SDES.
enum class SrtpSuite : std::uint8_t {
  AesCm128HmacSha1_80,  ///< RFC 4568 §6.2.1, the default (ffmpeg reads it).
  AesCm128HmacSha1_32,  ///< RFC 4568 §6.2.2.
  AeadAes128Gcm,        ///< RFC 7714 §12 (ffmpeg cannot read it).
};

/// Largest key||salt of the supported suites (AES-CM: 16 + 14).
inline constexpr std::size_t kMaxSrtpKeySaltSize = 30;
/// Master key size of every supported suite.
inline constexpr std::size_t kSrtpMasterKeySize = 16;

/// SDP name of a suite, e.g. "AES_CM_128_HMAC_SHA1_80".
std::string_view suite_name(SrtpSuite suite);
/// The suite with this SDP name (case-sensitive, as RFC 4568 §9.1 registers them).
std::optional<SrtpSuite> suite_from_name(std::string_view name);
/// Master salt size: 14 bytes for AES-CM, 12 for AES-GCM.
std::size_t master_salt_size(SrtpSuite suite);
/// Key plus salt size: 30 bytes for AES-CM, 28 for AES-GCM.
std::size_t key_salt_size(SrtpSuite suite);

/// A master key followed by its master salt, stored inline.
struct SrtpKeyMaterial {
  std::array<std::uint8_t, kMaxSrtpKeySaltSize> bytes{};
  std::size_t size = 0;  ///< key_salt_size() of the suite it was made for.

  /// key||salt.
  std::span<const std::uint8_t> span() const { return {bytes.data(), size}; }
  /// The 16-byte master key.
  std::span<const std::uint8_t> key() const { return span().first(kSrtpMasterKeySize); }
  /// The master salt (what follows the key).
  std::span<const std::uint8_t> salt() const { return span().subspan(kSrtpMasterKeySize); }

  friend bool operator==(const SrtpKeyMaterial& a, const SrtpKeyMaterial& b) {
    return a.size == b.size &&
           std::equal(a.bytes.begin(), a.bytes.begin() + a.size, b.bytes.begin());
  }
};

/// A parsed a=crypto line.
struct CryptoAttribute {
  std::uint32_t tag = 0;
  SrtpSuite suite = SrtpSuite::AesCm128HmacSha1_80;
  SrtpKeyMaterial key;

  friend bool operator==(const CryptoAttribute&, const CryptoAttribute&) = default;
};

/// Base64 (RFC 4648 §4, standard alphabet, '=' padding) of bytes.
std::string base64_encode(std::span<const std::uint8_t> bytes);

/// Strict base64 decode into out; returns the byte count. Rejects: length not a multiple of 4,
/// characters outside the alphabet (whitespace included), '=' anywhere but the last one or two
/// places, and non-zero bits after the last byte (RFC 4648 §3.5), so that every accepted text is
/// the canonical encoding of its bytes.
core::Result<std::size_t> base64_decode(std::string_view text, std::span<std::uint8_t> out);

/// base64_decode() into a new vector.
core::Result<std::vector<std::uint8_t>> base64_decode(std::string_view text);

/// "a=crypto:<tag> <suite> inline:<base64 key||salt>". Precondition: key.size equals
/// key_salt_size(suite) and tag has at most 9 digits (RFC 4568 §9.1).
std::string format_crypto_attribute(std::uint32_t tag, SrtpSuite suite, const SrtpKeyMaterial& key);

/// Parses "a=crypto:..." or "crypto:..." (trailing CR/LF/blanks ignored) per RFC 4568 §9.1/§9.2,
/// with the restrictions listed at the top of this header.
core::Result<CryptoAttribute> parse_crypto_attribute(std::string_view line);

}  // namespace predrop::wire

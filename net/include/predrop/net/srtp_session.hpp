#pragma once
// SRTP/SRTCP protection for one direction of one session, wrapping libsrtp 2.x (RFC 3711; AES-GCM
// per RFC 7714). Modelled on mediasoup's DepLibSRTP (process-wide init guard) + RTC::SrtpSession.
//
// Error contract: construction is setup and throws std::runtime_error with libsrtp's reason;
// the per-packet calls never throw, never allocate in steady state and return an SrtpResult.
// (libsrtp allocates once per new SSRC: an outbound session on the first packet of each SSRC, an
// inbound one on the first packet of each SSRC that authenticates.)
// Threading: one session must not be used from two threads at once; distinct sessions may be
// used on distinct threads. <srtp2/srtp.h> stays out of this header.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "predrop/wire/sdes_key.hpp"

struct srtp_ctx_t_;

namespace predrop::net {

/// Bytes protect_rtp()/protect_rtcp() may append after the packet: libsrtp's
/// SRTP_MAX_TRAILER_LEN (16-byte tag + 128-byte MKI) plus the 4-byte SRTCP index. Buffers passed
/// to the protect calls must have at least this much room after `len`.
inline constexpr std::size_t kSrtpMaxTrailer = 16 + 128 + 4;

/// Which way a session's packets travel.
enum class SrtpDirection : std::uint8_t {
  Outbound,  ///< protect_*: we encrypt what we send (libsrtp ssrc_any_outbound).
  Inbound,   ///< unprotect_*: we verify and decrypt what we receive (ssrc_any_inbound).
};

/// Why a per-packet call failed.
enum class SrtpError : std::uint8_t {
  None,            ///< Success.
  AuthFailed,      ///< Authentication tag mismatch: wrong key, tampering or corruption.
  Replay,          ///< Packet index already seen or older than the replay window.
  BadLength,       ///< Too short for a header plus tag, or no room for the trailer.
  WrongDirection,  ///< protect on an inbound session or unprotect on an outbound one.
  Other,           ///< Any other libsrtp failure (see SrtpResult::library_status).
};

/// Short, stable text for an SrtpError ("auth failed", "replay", ...), for logs and counters.
std::string_view to_string(SrtpError error);

/// Outcome of one protect/unprotect call: the new packet length, or why it failed.
struct [[nodiscard]] SrtpResult {
  std::size_t length = 0;             ///< New length when ok().
  SrtpError error = SrtpError::None;  ///< Reason when !ok().
  int library_status = 0;             ///< libsrtp's srtp_err_status_t value (0 on success).

  bool ok() const { return error == SrtpError::None; }
  explicit operator bool() const { return ok(); }
};

/// Text of a libsrtp status code, e.g. "authentication failure (srtp_err_status_auth_fail)".
std::string_view srtp_status_text(int library_status);

/// Size in bytes of the key||salt a suite needs (30 for AES-CM, 28 for AES-GCM); the same as
/// wire::key_salt_size() of sdes_key.hpp, kept here so SRTP users need not know the SDES header.
std::size_t srtp_key_salt_size(wire::SrtpSuite suite);

/// Size in bytes of the SRTP authentication tag the suite appends to RTP (10, 4 or 16).
std::size_t srtp_rtp_tag_size(wire::SrtpSuite suite);

/// Size in bytes SRTCP appends to RTCP: the 4-byte index plus the tag (14 for AES-CM, 20 for GCM;
/// AES_CM_128_HMAC_SHA1_32 still uses an 80-bit tag for SRTCP, RFC 4568 §6.2.2).
std::size_t srtcp_trailer_size(wire::SrtpSuite suite);

/// Keeps libsrtp initialised while it lives. Sessions take a reference of their own, so this is
/// optional, but srtp_init() runs libsrtp's cipher self-tests (tens of ms): hold one in main() so
/// that the first session after an idle period does not stall the loop thread. Throws
/// std::runtime_error if srtp_init() fails.
class SrtpLibraryGuard {
 public:
  SrtpLibraryGuard();
  ~SrtpLibraryGuard();
  SrtpLibraryGuard(const SrtpLibraryGuard&) = delete;
  SrtpLibraryGuard& operator=(const SrtpLibraryGuard&) = delete;
  SrtpLibraryGuard(SrtpLibraryGuard&&) = delete;
  SrtpLibraryGuard& operator=(SrtpLibraryGuard&&) = delete;
};

/// True once the first SrtpLibraryGuard or session of the process has initialised libsrtp's
/// crypto backend (NSS, in Debian's build) for speed rather than space: without it libsrtp's
/// own NSS initialisation sizes NSS's tables for memory and protect() slows down as sessions
/// are added. False with a non-NSS libsrtp, or if something else initialised NSS first.
bool srtp_crypto_tables_for_speed();

/// What libsrtp's ciphers run on. libsrtp always does SRTP itself (key derivation, index, replay
/// window, what is encrypted and authenticated); this chooses the primitives under it.
enum class SrtpCrypto : std::uint8_t {
  /// OpenSSL's libcrypto for AES-128-ICM, HMAC-SHA1 and AES-128-GCM, installed through
  /// libsrtp's crypto kernel after libsrtp's own test vectors pass (the default: Debian's NSS
  /// backend builds a PKCS#11 context per packet, docs/net-transport.md "SRTP crypto").
  OpenSsl,
  /// The crypto libsrtp was built with (NSS on Debian).
  Libsrtp,
};

/// Chooses the crypto for this process: applies at once if libsrtp is initialised, else at its
/// next initialisation. Call at start-up, before other threads make or use SRTP sessions
/// (sessions made before keep the crypto they were made with).
void set_srtp_crypto(SrtpCrypto crypto);

/// The crypto libsrtp's sessions are made with now. Libsrtp before the first initialisation, and
/// when the OpenSSL types were refused (then srtp_crypto_fallback_reason() says why).
SrtpCrypto srtp_crypto_in_use();

/// Why OpenSSL was asked for but libsrtp's own crypto is in use; empty otherwise.
std::string srtp_crypto_fallback_reason();

/// "openssl" / "libsrtp", the spelling of the `srtp_crypto` settings.
std::string_view to_string(SrtpCrypto crypto);

/// Parses "openssl" or "libsrtp"; nullopt for anything else.
std::optional<SrtpCrypto> parse_srtp_crypto(std::string_view text);

/// One libsrtp session for one direction. Movable (the moved-from session fails every call with
/// SrtpError::Other), not copyable.
class SrtpSession {
 public:
  /// Replay window in packets (RFC 3711 §3.3.2 asks for at least 64; libsrtp allows up to 32768).
  static constexpr unsigned long kReplayWindow = 1024;

  /// Creates the session from key||salt (srtp_key_salt_size(suite) bytes). Throws
  /// std::runtime_error on a wrong key size or if libsrtp refuses the policy.
  SrtpSession(SrtpDirection direction, wire::SrtpSuite suite,
              std::span<const std::uint8_t> key_salt);
  /// Same, from key material parsed out of an a=crypto line.
  SrtpSession(SrtpDirection direction, wire::SrtpSuite suite, const wire::SrtpKeyMaterial& key)
      : SrtpSession(direction, suite, key.span()) {}
  ~SrtpSession();
  SrtpSession(SrtpSession&& other) noexcept;
  SrtpSession& operator=(SrtpSession&& other) noexcept;
  SrtpSession(const SrtpSession&) = delete;
  SrtpSession& operator=(const SrtpSession&) = delete;

  /// Encrypts the RTP packet in buffer[0, len) in place and appends the tag. `buffer` must have
  /// kSrtpMaxTrailer bytes of room after `len`.
  SrtpResult protect_rtp(std::span<std::uint8_t> buffer, std::size_t len);
  /// Verifies and decrypts the SRTP packet in buffer[0, len) in place; the result is shorter.
  SrtpResult unprotect_rtp(std::span<std::uint8_t> buffer, std::size_t len);
  /// Encrypts a (compound) RTCP packet in place, appending index and tag; same room rule.
  SrtpResult protect_rtcp(std::span<std::uint8_t> buffer, std::size_t len);
  /// Verifies and decrypts an SRTCP packet in place.
  SrtpResult unprotect_rtcp(std::span<std::uint8_t> buffer, std::size_t len);

  /// Starts loading the libsrtp context (a hint for a caller that protects with it next).
  void prefetch() const { __builtin_prefetch(ctx_); }

  SrtpDirection direction() const { return direction_; }
  wire::SrtpSuite suite() const { return suite_; }

 private:
  srtp_ctx_t_* ctx_ = nullptr;
  SrtpDirection direction_;
  wire::SrtpSuite suite_;
};

}  // namespace predrop::net

#include "predrop/net/srtp_session.hpp"

#include <srtp2/srtp.h>

#include "srtp_openssl.hpp"
#if PREDROP_SRTP_NSS
#include <nss.h>
#endif

#include <array>
#include <climits>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace predrop::net {

static_assert(kSrtpMaxTrailer == SRTP_MAX_TRAILER_LEN + 4,
              "kSrtpMaxTrailer must cover srtp_protect_rtcp's SRTP_MAX_TRAILER_LEN + 4");
static_assert(std::is_same_v<srtp_t, srtp_ctx_t_*>, "srtp_t is expected to be srtp_ctx_t_*");

namespace {

// RFC 3550 §5.1: the fixed RTP header is 12 bytes; §6.4.1: the shortest RTCP packet (an RR with
// no report blocks) is 8 bytes. RFC 3711 §3.4: SRTCP adds a 4-byte E flag + index.
constexpr std::size_t kRtpHeaderSize = 12;
constexpr std::size_t kRtcpHeaderSize = 8;
constexpr std::size_t kSrtcpIndexSize = 4;

/// Process-wide libsrtp init guard (mediasoup's DepLibSRTP): srtp_init() when the first session
/// appears, srtp_shutdown() when the last one goes.
class SrtpLibrary {
 public:
  static void acquire() {
    std::lock_guard lock(mutex_);
    init_nss_for_speed();
    if (refs_ == 0) {
      const srtp_err_status_t rc = srtp_init();
      if (rc != srtp_err_status_ok) {
        throw std::runtime_error("srtp_init failed: " + std::string(srtp_status_text(rc)));
      }
      apply_crypto();
    }
    ++refs_;
  }
  static void release() {
    std::lock_guard lock(mutex_);
    if (refs_ > 0 && --refs_ == 0) {
      srtp_shutdown();
      in_use_ = SrtpCrypto::Libsrtp;
    }
  }

  static void set_crypto(SrtpCrypto crypto) {
    std::lock_guard lock(mutex_);
    wanted_ = crypto;
    if (refs_ > 0) {
      apply_crypto();
    }
  }
  static SrtpCrypto crypto_in_use() {
    std::lock_guard lock(mutex_);
    return in_use_;
  }
  static std::string crypto_fallback_reason() {
    std::lock_guard lock(mutex_);
    return fallback_reason_;
  }

 private:
  // Called with mutex_ held and libsrtp initialised. srtp_init loads libsrtp's own types, so this
  // runs again after every re-initialisation.
  static void apply_crypto() {
    if (wanted_ == SrtpCrypto::OpenSsl) {
      fallback_reason_ = detail::install_openssl_srtp_crypto();
      in_use_ = fallback_reason_.empty() ? SrtpCrypto::OpenSsl : SrtpCrypto::Libsrtp;
    } else {
      detail::uninstall_openssl_srtp_crypto();
      fallback_reason_.clear();
      in_use_ = SrtpCrypto::Libsrtp;
    }
  }

  // Debian's libsrtp uses NSS for its ciphers and initialises it with NSS_INIT_OPTIMIZESPACE,
  // which sizes NSS's internal hash tables for memory (32 buckets): protect() then slows down
  // as sessions are added (7 -> 17 us per packet at 1000 sessions, bench/perf/README.md).
  // NSS keeps the flags of its first initialisation, so initialising it once here, first and
  // without that flag, gives every later libsrtp context the tables sized for speed. The
  // context lives for the process (NSS tables are not torn down with the last session). With
  // the OpenSSL types installed NSS still serves what predrop does not replace (libsrtp's
  // key-derivation self-tests run on its own types at srtp_init, and SrtpCrypto::Libsrtp).
  static void init_nss_for_speed() {
#if PREDROP_SRTP_NSS
    if (nss_ != nullptr || NSS_IsInitialized()) {
      return;
    }
    nss_ = NSS_InitContext("", "", "", "", nullptr,
                           NSS_INIT_READONLY | NSS_INIT_NOCERTDB | NSS_INIT_NOMODDB |
                               NSS_INIT_FORCEOPEN | NSS_INIT_NOROOTINIT);
    nss_tables_for_speed_ = nss_ != nullptr;
#endif
  }

 public:
  static bool nss_tables_for_speed() {
    std::lock_guard lock(mutex_);
    return nss_tables_for_speed_;
  }

 private:
  static inline std::mutex mutex_;
  static inline std::size_t refs_ = 0;
#if PREDROP_SRTP_NSS
  static inline NSSInitContext* nss_ = nullptr;
#endif
  static inline bool nss_tables_for_speed_ = false;
  static inline SrtpCrypto wanted_ = SrtpCrypto::OpenSsl;
  static inline SrtpCrypto in_use_ = SrtpCrypto::Libsrtp;
  static inline std::string fallback_reason_;
};

SrtpError map_status(srtp_err_status_t rc) {
  switch (rc) {
    case srtp_err_status_ok:
      return SrtpError::None;
    case srtp_err_status_auth_fail:
      return SrtpError::AuthFailed;
    case srtp_err_status_replay_fail:
    case srtp_err_status_replay_old:
      return SrtpError::Replay;
    case srtp_err_status_bad_param:  // libsrtp's answer to a header longer than the packet.
    case srtp_err_status_parse_err:
      return SrtpError::BadLength;
    default:
      return SrtpError::Other;
  }
}

SrtpResult fail(SrtpError error, int status = 0) {
  return SrtpResult{0, error, status};
}

}  // namespace

SrtpLibraryGuard::SrtpLibraryGuard() {
  SrtpLibrary::acquire();
}

SrtpLibraryGuard::~SrtpLibraryGuard() {
  SrtpLibrary::release();
}

bool srtp_crypto_tables_for_speed() {
  return SrtpLibrary::nss_tables_for_speed();
}

void set_srtp_crypto(SrtpCrypto crypto) {
  SrtpLibrary::set_crypto(crypto);
}

SrtpCrypto srtp_crypto_in_use() {
  return SrtpLibrary::crypto_in_use();
}

std::string srtp_crypto_fallback_reason() {
  return SrtpLibrary::crypto_fallback_reason();
}

std::string_view to_string(SrtpCrypto crypto) {
  return crypto == SrtpCrypto::OpenSsl ? "openssl" : "libsrtp";
}

std::optional<SrtpCrypto> parse_srtp_crypto(std::string_view text) {
  if (text == "openssl") return SrtpCrypto::OpenSsl;
  if (text == "libsrtp") return SrtpCrypto::Libsrtp;
  return std::nullopt;
}

std::string_view to_string(SrtpError error) {
  switch (error) {
    case SrtpError::None:
      return "ok";
    case SrtpError::AuthFailed:
      return "auth failed";
    case SrtpError::Replay:
      return "replay";
    case SrtpError::BadLength:
      return "bad length";
    case SrtpError::WrongDirection:
      return "wrong direction";
    case SrtpError::Other:
      return "srtp error";
  }
  return "srtp error";
}

std::string_view srtp_status_text(int library_status) {
  // libsrtp 2.x has no public strerror; the texts follow the comments in <srtp2/srtp.h>.
  static constexpr std::array<std::string_view, 28> kText = {
      "ok (srtp_err_status_ok)",
      "unspecified failure (srtp_err_status_fail)",
      "unsupported parameter (srtp_err_status_bad_param)",
      "couldn't allocate memory (srtp_err_status_alloc_fail)",
      "couldn't deallocate properly (srtp_err_status_dealloc_fail)",
      "couldn't initialize (srtp_err_status_init_fail)",
      "can't process as much data as requested (srtp_err_status_terminus)",
      "authentication failure (srtp_err_status_auth_fail)",
      "cipher failure (srtp_err_status_cipher_fail)",
      "replay check failed, bad index (srtp_err_status_replay_fail)",
      "replay check failed, index too old (srtp_err_status_replay_old)",
      "algorithm failed test routine (srtp_err_status_algo_fail)",
      "unsupported operation (srtp_err_status_no_such_op)",
      "no appropriate context found (srtp_err_status_no_ctx)",
      "unable to perform desired validation (srtp_err_status_cant_check)",
      "can't use key any more (srtp_err_status_key_expired)",
      "error in use of socket (srtp_err_status_socket_err)",
      "error in use of POSIX signals (srtp_err_status_signal_err)",
      "nonce check failed (srtp_err_status_nonce_bad)",
      "couldn't read data (srtp_err_status_read_fail)",
      "couldn't write data (srtp_err_status_write_fail)",
      "error parsing data (srtp_err_status_parse_err)",
      "error encoding data (srtp_err_status_encode_err)",
      "error while using semaphores (srtp_err_status_semaphore_err)",
      "error while using pfkey (srtp_err_status_pfkey_err)",
      "MKI present in packet is invalid (srtp_err_status_bad_mki)",
      "packet index is too old to consider (srtp_err_status_pkt_idx_old)",
      "packet index advanced, reset needed (srtp_err_status_pkt_idx_adv)",
  };
  if (library_status < 0 || static_cast<std::size_t>(library_status) >= kText.size()) {
    return "unknown libsrtp status";
  }
  return kText[static_cast<std::size_t>(library_status)];
}

std::size_t srtp_key_salt_size(wire::SrtpSuite suite) {
  return wire::key_salt_size(suite);
}

std::size_t srtp_rtp_tag_size(wire::SrtpSuite suite) {
  switch (suite) {
    case wire::SrtpSuite::AesCm128HmacSha1_80:
      return 10;
    case wire::SrtpSuite::AesCm128HmacSha1_32:
      return 4;
    case wire::SrtpSuite::AeadAes128Gcm:
      return 16;
  }
  return 16;
}

std::size_t srtcp_trailer_size(wire::SrtpSuite suite) {
  return kSrtcpIndexSize + (suite == wire::SrtpSuite::AeadAes128Gcm ? 16 : 10);
}

SrtpSession::SrtpSession(SrtpDirection direction, wire::SrtpSuite suite,
                         std::span<const std::uint8_t> key_salt)
    : direction_(direction), suite_(suite) {
  if (key_salt.size() != srtp_key_salt_size(suite)) {
    throw std::runtime_error("SRTP " + std::string(wire::suite_name(suite)) + " needs " +
                             std::to_string(srtp_key_salt_size(suite)) +
                             " bytes of key||salt, got " + std::to_string(key_salt.size()));
  }
  srtp_policy_t policy;
  std::memset(&policy, 0, sizeof(policy));
  switch (suite) {
    case wire::SrtpSuite::AesCm128HmacSha1_80:
      srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy.rtp);
      srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy.rtcp);
      break;
    case wire::SrtpSuite::AesCm128HmacSha1_32:
      // RFC 4568 §6.2.2 / RFC 3711 §5.2: SRTCP keeps the 80-bit tag with this suite.
      srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32(&policy.rtp);
      srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy.rtcp);
      break;
    case wire::SrtpSuite::AeadAes128Gcm:
      srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp);
      srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp);
      break;
  }
  policy.ssrc.type = direction == SrtpDirection::Inbound ? ssrc_any_inbound : ssrc_any_outbound;
  policy.ssrc.value = 0;
  // libsrtp derives the session keys inside srtp_create and keeps no pointer to this buffer.
  policy.key = const_cast<unsigned char*>(key_salt.data());
  policy.window_size = kReplayWindow;
  policy.allow_repeat_tx = 0;
  policy.next = nullptr;

  SrtpLibrary::acquire();
  srtp_t session = nullptr;
  const srtp_err_status_t rc = srtp_create(&session, &policy);
  if (rc != srtp_err_status_ok) {
    SrtpLibrary::release();
    throw std::runtime_error("srtp_create(" + std::string(wire::suite_name(suite)) +
                             ") failed: " + std::string(srtp_status_text(rc)));
  }
  ctx_ = session;
}

SrtpSession::~SrtpSession() {
  if (ctx_ != nullptr) {
    srtp_dealloc(ctx_);
    SrtpLibrary::release();
  }
}

SrtpSession::SrtpSession(SrtpSession&& other) noexcept
    : ctx_(std::exchange(other.ctx_, nullptr)),
      direction_(other.direction_),
      suite_(other.suite_) {}

SrtpSession& SrtpSession::operator=(SrtpSession&& other) noexcept {
  if (this != &other) {
    if (ctx_ != nullptr) {
      srtp_dealloc(ctx_);
      SrtpLibrary::release();
    }
    ctx_ = std::exchange(other.ctx_, nullptr);
    direction_ = other.direction_;
    suite_ = other.suite_;
  }
  return *this;
}

namespace {

using SrtpFn = srtp_err_status_t (*)(srtp_t, void*, int*);

/// Shared checks and the libsrtp call for the four per-packet operations.
SrtpResult run(srtp_t ctx, SrtpFn fn, std::span<std::uint8_t> buffer, std::size_t len,
               std::size_t min_len, bool adds_trailer) {
  if (ctx == nullptr) {
    return fail(SrtpError::Other);
  }
  if (len > buffer.size() || len < min_len) {
    return fail(SrtpError::BadLength);
  }
  // libsrtp writes the trailer past `len` without knowing the buffer size, so check it here.
  if (adds_trailer && buffer.size() - len < kSrtpMaxTrailer) {
    return fail(SrtpError::BadLength);
  }
  if (len > static_cast<std::size_t>(INT_MAX) - kSrtpMaxTrailer) {
    return fail(SrtpError::BadLength);
  }
  int n = static_cast<int>(len);
  const srtp_err_status_t rc = fn(ctx, buffer.data(), &n);
  if (rc != srtp_err_status_ok) {
    return fail(map_status(rc), static_cast<int>(rc));
  }
  return SrtpResult{static_cast<std::size_t>(n), SrtpError::None, 0};
}

}  // namespace

SrtpResult SrtpSession::protect_rtp(std::span<std::uint8_t> buffer, std::size_t len) {
  if (direction_ != SrtpDirection::Outbound) {
    return fail(SrtpError::WrongDirection);
  }
  return run(ctx_, &srtp_protect, buffer, len, kRtpHeaderSize, true);
}

SrtpResult SrtpSession::unprotect_rtp(std::span<std::uint8_t> buffer, std::size_t len) {
  if (direction_ != SrtpDirection::Inbound) {
    return fail(SrtpError::WrongDirection);
  }
  return run(ctx_, &srtp_unprotect, buffer, len, kRtpHeaderSize + srtp_rtp_tag_size(suite_), false);
}

SrtpResult SrtpSession::protect_rtcp(std::span<std::uint8_t> buffer, std::size_t len) {
  if (direction_ != SrtpDirection::Outbound) {
    return fail(SrtpError::WrongDirection);
  }
  return run(ctx_, &srtp_protect_rtcp, buffer, len, kRtcpHeaderSize, true);
}

SrtpResult SrtpSession::unprotect_rtcp(std::span<std::uint8_t> buffer, std::size_t len) {
  if (direction_ != SrtpDirection::Inbound) {
    return fail(SrtpError::WrongDirection);
  }
  return run(ctx_, &srtp_unprotect_rtcp, buffer, len, kRtcpHeaderSize + srtcp_trailer_size(suite_),
             false);
}

}  // namespace predrop::net

// DTLS-SRTP over memory BIOs; see predrop/webrtc/dtls_transport.hpp.
#include "predrop/webrtc/dtls_transport.hpp"

#include <openssl/err.h>
#include <openssl/srtp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <utility>
#include <vector>

#include "openssl_util.hpp"

namespace predrop::webrtc {
namespace {

using detail::BioPtr;

// RFC 5764 §4.1.2 profile SRTP_AES128_CM_HMAC_SHA1_80: 16-byte keys, 14-byte salts.
constexpr std::size_t kKeySize = 16;
constexpr std::size_t kSaltSize = 14;
constexpr char kExporterLabel[] = "EXTRACTOR-dtls_srtp";  // RFC 5764 §4.2
// A flight must fit a path MTU with IP/UDP headers and the TURN margin browsers leave.
constexpr long kDtlsMtu = 1200;

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

// Accepts a self-signed peer certificate if, and only if, its fingerprint is the one the peer's
// SDP announced; chain certificates above the leaf are not looked at.
int verify_peer(int /*preverify_ok*/, X509_STORE_CTX* store) {
  if (X509_STORE_CTX_get_error_depth(store) != 0) return 1;
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* self = ssl != nullptr ? static_cast<DtlsTransport*>(SSL_get_app_data(ssl)) : nullptr;
  if (self == nullptr) return 0;
  return self->check_peer_fingerprint(
             detail::sha256_fingerprint(X509_STORE_CTX_get_current_cert(store)))
             ? 1
             : 0;
}

}  // namespace

const char* to_string(DtlsState state) {
  switch (state) {
    case DtlsState::Handshaking:
      return "handshaking";
    case DtlsState::Connected:
      return "connected";
    case DtlsState::Failed:
      return "failed";
    case DtlsState::Closed:
      return "closed";
  }
  return "unknown";
}

void DtlsTransport::SslFree::operator()(ssl_st* ssl) const {
  SSL_free(ssl);
}

core::Result<std::unique_ptr<DtlsTransport>> DtlsTransport::create(
    std::shared_ptr<const DtlsContext> context, DtlsRole role, std::string remote_fingerprint,
    SendFn send) {
  if (!context) return core::make_error("DTLS: no context");
  std::unique_ptr<DtlsTransport> t(
      new DtlsTransport(std::move(context), role, std::move(remote_fingerprint), std::move(send)));
  if (auto ok = t->init(); !ok) return ok.error();
  return t;
}

core::Result<std::unique_ptr<DtlsTransport>> DtlsTransport::create(
    std::shared_ptr<const DtlsCertificate> certificate, DtlsRole role,
    std::string remote_fingerprint, SendFn send) {
  auto context = DtlsContext::create(std::move(certificate));
  if (!context) return context.error();
  return create(std::move(context.value()), role, std::move(remote_fingerprint), std::move(send));
}

DtlsTransport::DtlsTransport(std::shared_ptr<const DtlsContext> context, DtlsRole role,
                             std::string remote_fingerprint, SendFn send)
    : context_(std::move(context)),
      role_(role),
      remote_fingerprint_(upper(std::move(remote_fingerprint))),
      send_(std::move(send)) {}

DtlsTransport::~DtlsTransport() = default;

core::Status DtlsTransport::init() {
  ssl_.reset(SSL_new(static_cast<SSL_CTX*>(context_->ssl_ctx_handle())));
  if (!ssl_) return core::make_error(detail::take_openssl_errors("SSL_new"));
  // Per association, not on the shared context: the callback checks this peer's fingerprint.
  SSL_set_verify(ssl_.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verify_peer);
  BioPtr in(BIO_new(BIO_s_mem()));
  BioPtr out(BIO_new(BIO_s_mem()));
  if (!in || !out) return core::make_error(detail::take_openssl_errors("BIO_new"));
  // An empty memory BIO means "try again", not end of file.
  BIO_set_mem_eof_return(in.get(), -1);
  BIO_set_mem_eof_return(out.get(), -1);
  SSL_set_bio(ssl_.get(), in.release(), out.release());
  SSL_set_app_data(ssl_.get(), this);
  SSL_set_options(ssl_.get(), SSL_OP_NO_QUERY_MTU);
  SSL_set_mtu(ssl_.get(), kDtlsMtu);
  if (role_ == DtlsRole::Server) {
    SSL_set_accept_state(ssl_.get());
  } else {
    SSL_set_connect_state(ssl_.get());
  }
  return core::Ok{};
}

void DtlsTransport::start() {
  if (role_ == DtlsRole::Client) advance();
}

void DtlsTransport::on_datagram(std::span<const std::uint8_t> data) {
  if (state_ == DtlsState::Failed || state_ == DtlsState::Closed || data.empty()) return;
  BIO_write(SSL_get_rbio(ssl_.get()), data.data(), static_cast<int>(data.size()));
  advance();
}

std::optional<std::uint64_t> DtlsTransport::retransmit_in_us() const {
  timeval tv{};
  if (state_ != DtlsState::Handshaking || DTLSv1_get_timeout(ssl_.get(), &tv) != 1) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(tv.tv_sec) * 1'000'000 + static_cast<std::uint64_t>(tv.tv_usec);
}

void DtlsTransport::on_timer() {
  if (state_ != DtlsState::Handshaking) return;
  if (DTLSv1_handle_timeout(ssl_.get()) < 0) {
    fail(detail::take_openssl_errors("DTLS retransmission"));
    return;
  }
  flush();
}

bool DtlsTransport::check_peer_fingerprint(const std::string& actual) {
  if (!actual.empty() && actual == remote_fingerprint_) return true;
  fingerprint_mismatch_ = true;
  return false;
}

void DtlsTransport::advance() {
  if (state_ == DtlsState::Handshaking) {
    const int r = SSL_do_handshake(ssl_.get());
    flush();
    if (r == 1) {
      finish_handshake();
    } else if (const int e = SSL_get_error(ssl_.get(), r); e != SSL_ERROR_WANT_READ) {
      fail(detail::take_openssl_errors(fingerprint_mismatch_ ? "peer certificate fingerprint"
                                                             : "DTLS handshake"));
    }
    return;
  }
  // Connected: drain records (WebRTC sends no application data; alerts end the association).
  std::array<std::uint8_t, 2048> sink{};
  for (;;) {
    const int r = SSL_read(ssl_.get(), sink.data(), static_cast<int>(sink.size()));
    if (r > 0) continue;
    const int e = SSL_get_error(ssl_.get(), r);
    if (e == SSL_ERROR_ZERO_RETURN) state_ = DtlsState::Closed;
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_ZERO_RETURN) {
      fail(detail::take_openssl_errors("DTLS read"));
    }
    break;
  }
  flush();
}

void DtlsTransport::finish_handshake() {
  const SRTP_PROTECTION_PROFILE* profile = SSL_get_selected_srtp_profile(ssl_.get());
  if (profile == nullptr || profile->id != SRTP_AES128_CM_SHA1_80) {
    fail("DTLS handshake: peer did not agree to use_srtp SRTP_AES128_CM_SHA1_80");
    return;
  }
  std::array<std::uint8_t, 2 * (kKeySize + kSaltSize)> km{};
  if (SSL_export_keying_material(ssl_.get(), km.data(), km.size(), kExporterLabel,
                                 sizeof kExporterLabel - 1, nullptr, 0, 0) != 1) {
    fail(detail::take_openssl_errors("SSL_export_keying_material"));
    return;
  }
  // RFC 5764 §4.2: client_write_key | server_write_key | client_salt | server_salt.
  auto key_salt = [&km](bool client) {
    wire::SrtpKeyMaterial m;
    m.size = kKeySize + kSaltSize;
    std::memcpy(m.bytes.data(), km.data() + (client ? 0 : kKeySize), kKeySize);
    std::memcpy(m.bytes.data() + kKeySize, km.data() + 2 * kKeySize + (client ? 0 : kSaltSize),
                kSaltSize);
    return m;
  };
  const bool we_are_client = role_ == DtlsRole::Client;
  keys_ = DtlsSrtpKeys{wire::SrtpSuite::AesCm128HmacSha1_80, key_salt(we_are_client),
                       key_salt(!we_are_client)};
  state_ = DtlsState::Connected;
}

void DtlsTransport::flush() {
  BIO* out = SSL_get_wbio(ssl_.get());
  const auto pending = BIO_ctrl_pending(out);
  if (pending == 0) return;
  // Everything OpenSSL wrote since the last flush goes out as one datagram: DTLS allows several
  // records per datagram, and a flight with a P-256 certificate stays under the MTU set above.
  std::vector<std::uint8_t> buf(pending);
  const int n = BIO_read(out, buf.data(), static_cast<int>(buf.size()));
  if (n > 0 && send_) send_(std::span<const std::uint8_t>(buf.data(), static_cast<std::size_t>(n)));
}

void DtlsTransport::fail(std::string why) {
  state_ = DtlsState::Failed;
  failure_ = std::move(why);
  detail::clear_openssl_errors();
}

}  // namespace predrop::webrtc

// The shared DTLS-SRTP context of one certificate; see predrop/webrtc/dtls_context.hpp.
#include "predrop/webrtc/dtls_context.hpp"

#include <openssl/srtp.h>

#include <utility>

#include "openssl_util.hpp"

namespace predrop::webrtc {

core::Result<std::shared_ptr<const DtlsContext>> DtlsContext::create(
    std::shared_ptr<const DtlsCertificate> certificate) {
  if (!certificate) return core::make_error("DTLS context: no certificate");
  detail::SslCtxPtr ctx(SSL_CTX_new(DTLS_method()));
  if (!ctx) return core::make_error(detail::take_openssl_errors("SSL_CTX_new"));
  SSL_CTX_set_min_proto_version(ctx.get(), DTLS1_2_VERSION);
  if (SSL_CTX_use_certificate(ctx.get(), static_cast<X509*>(certificate->cert_handle())) != 1 ||
      SSL_CTX_use_PrivateKey(ctx.get(), static_cast<EVP_PKEY*>(certificate->key_handle())) != 1) {
    return core::make_error(detail::take_openssl_errors("DTLS certificate"));
  }
  // SSL_CTX_set_tlsext_use_srtp returns 0 on success (unlike the rest of the API).
  if (SSL_CTX_set_tlsext_use_srtp(ctx.get(), "SRTP_AES128_CM_SHA1_80") != 0) {
    return core::make_error(detail::take_openssl_errors("use_srtp"));
  }
  SSL_CTX_set_read_ahead(ctx.get(), 1);
  // Every WebRTC call is a new association with fresh keys (RFC 8827 §6.5): a shared context's
  // server-side session cache would only grow and take a lock per handshake.
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  return std::shared_ptr<const DtlsContext>(new DtlsContext(std::move(certificate), ctx.release()));
}

DtlsContext::DtlsContext(std::shared_ptr<const DtlsCertificate> certificate, void* ctx)
    : certificate_(std::move(certificate)), ctx_(ctx) {}

DtlsContext::~DtlsContext() {
  SSL_CTX_free(static_cast<SSL_CTX*>(ctx_));
}

}  // namespace predrop::webrtc

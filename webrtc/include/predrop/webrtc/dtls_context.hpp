#pragma once
// What every DTLS association of one identity shares: the OpenSSL context with the certificate,
// the DTLS 1.2 floor and use_srtp. Made once per certificate (OpenSSL 3.0's SSL_CTX_new fetches
// every algorithm through its providers: ~0.26 ms a call on the bed's machine, about a tenth of
// a browser's whole join, bench/perf/README.md §5c), then read-only. OpenSSL stays out of this
// header.
#include <memory>

#include "predrop/core/result.hpp"
#include "predrop/webrtc/dtls_certificate.hpp"

namespace predrop::webrtc {

/// The shared context of the DtlsTransports of one certificate. Immutable after create(); safe
/// to share across threads (OpenSSL makes SSL objects from one SSL_CTX concurrently).
class DtlsContext {
 public:
  /// An error carries OpenSSL's reason.
  static core::Result<std::shared_ptr<const DtlsContext>> create(
      std::shared_ptr<const DtlsCertificate> certificate);

  ~DtlsContext();
  DtlsContext(const DtlsContext&) = delete;
  DtlsContext& operator=(const DtlsContext&) = delete;
  DtlsContext(DtlsContext&&) = delete;
  DtlsContext& operator=(DtlsContext&&) = delete;

  const DtlsCertificate& certificate() const { return *certificate_; }
  /// Opaque handle for webrtc/src (SSL_CTX*).
  void* ssl_ctx_handle() const { return ctx_; }

 private:
  DtlsContext(std::shared_ptr<const DtlsCertificate> certificate, void* ctx);

  std::shared_ptr<const DtlsCertificate> certificate_;
  void* ctx_;
};

}  // namespace predrop::webrtc

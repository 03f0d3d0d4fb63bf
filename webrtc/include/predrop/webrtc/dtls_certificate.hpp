#pragma once
// The server's DTLS identity: a self-signed ECDSA P-256 certificate made once per server start
// (RFC 8827 §6.5: browsers check only its fingerprint, carried in SDP, RFC 8122), shared
// read-only by every DtlsTransport of the process. OpenSSL stays out of this header.
#include <memory>
#include <string>

#include "predrop/core/result.hpp"

namespace predrop::webrtc {

/// A key pair and its self-signed certificate. Immutable after generate(); safe to share across
/// threads (OpenSSL's key and certificate objects are reference-counted and read-only here).
class DtlsCertificate {
 public:
  /// Generates a fresh P-256 key and a certificate valid from a day ago for 30 days. Start-up
  /// only (a few ms); an error carries OpenSSL's reason.
  static core::Result<std::shared_ptr<const DtlsCertificate>> generate();

  ~DtlsCertificate();
  DtlsCertificate(const DtlsCertificate&) = delete;
  DtlsCertificate& operator=(const DtlsCertificate&) = delete;
  DtlsCertificate(DtlsCertificate&&) = delete;
  DtlsCertificate& operator=(DtlsCertificate&&) = delete;

  /// The a=fingerprint value: "AB:CD:..." (SHA-256, 32 pairs).
  const std::string& fingerprint_sha256() const { return fingerprint_; }

  /// Opaque handles for webrtc/src (EVP_PKEY*, X509*).
  void* key_handle() const { return key_; }
  void* cert_handle() const { return cert_; }

 private:
  DtlsCertificate(void* key, void* cert, std::string fingerprint);

  void* key_;
  void* cert_;
  std::string fingerprint_;
};

}  // namespace predrop::webrtc

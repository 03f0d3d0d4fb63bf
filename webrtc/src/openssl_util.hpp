#pragma once
// The one place webrtc/ wraps OpenSSL's handles (docs/design.md §5 "C libraries"): one
// unique_ptr deleter per handle type, and OpenSSL's error queue turned into text. Private to
// webrtc/src.
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <string_view>

namespace predrop::webrtc::detail {

struct SslCtxDeleter {
  void operator()(SSL_CTX* p) const { SSL_CTX_free(p); }
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxDeleter>;

struct SslDeleter {
  void operator()(SSL* p) const { SSL_free(p); }
};
/// An SSL connection; it owns the BIOs handed to SSL_set_bio.
using SslPtr = std::unique_ptr<SSL, SslDeleter>;

struct BioDeleter {
  void operator()(BIO* p) const { BIO_free(p); }
};
/// A BIO not (yet) handed to an SSL.
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;

struct X509Deleter {
  void operator()(X509* p) const { X509_free(p); }
};
using X509Ptr = std::unique_ptr<X509, X509Deleter>;

/// Drains OpenSSL's thread-local error queue into one line ("what: reason; reason"); the queue
/// must be empty after every failed call, or the next call on this thread reports stale errors.
std::string take_openssl_errors(std::string_view what);

/// Clears OpenSSL's error queue without reading it (after an expected failure).
void clear_openssl_errors();

/// SHA-256 of a certificate's DER as SDP's a=fingerprint value: upper-case hex pairs joined by
/// ':' (RFC 8122 §5); empty on failure.
std::string sha256_fingerprint(X509* cert);

}  // namespace predrop::webrtc::detail

// Self-signed ECDSA certificate per server start; see predrop/webrtc/dtls_certificate.hpp.
#include "predrop/webrtc/dtls_certificate.hpp"

#include <openssl/x509v3.h>

#include <utility>

#include "openssl_util.hpp"
#include "predrop/net/os_random.hpp"

namespace predrop::webrtc {
namespace {

using detail::PkeyPtr;
using detail::X509Ptr;

constexpr long kOneDaySeconds = 24L * 3600;
constexpr long kValiditySeconds = 30 * kOneDaySeconds;

core::Result<X509Ptr> self_signed(EVP_PKEY* key) {
  X509Ptr cert(X509_new());
  if (!cert) return core::make_error(detail::take_openssl_errors("X509_new"));
  X509_set_version(cert.get(), 2);  // v3
  // A random positive serial: browsers cache nothing by it, but equal serials confuse tools.
  ASN1_INTEGER_set_int64(X509_get_serialNumber(cert.get()),
                         static_cast<std::int64_t>(net::random_u32()) + 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kOneDaySeconds);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), kValiditySeconds);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("predrop"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  if (X509_set_pubkey(cert.get(), key) != 1 || X509_sign(cert.get(), key, EVP_sha256()) == 0) {
    return core::make_error(detail::take_openssl_errors("signing the DTLS certificate"));
  }
  return cert;
}

}  // namespace

core::Result<std::shared_ptr<const DtlsCertificate>> DtlsCertificate::generate() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return core::make_error(detail::take_openssl_errors("EVP_EC_gen(P-256)"));
  auto cert = self_signed(key.get());
  if (!cert) return cert.error();
  std::string fingerprint = detail::sha256_fingerprint(cert.value().get());
  if (fingerprint.empty()) {
    return core::make_error(detail::take_openssl_errors("fingerprint of the DTLS certificate"));
  }
  return std::shared_ptr<const DtlsCertificate>(
      new DtlsCertificate(key.release(), cert.value().release(), std::move(fingerprint)));
}

DtlsCertificate::DtlsCertificate(void* key, void* cert, std::string fingerprint)
    : key_(key), cert_(cert), fingerprint_(std::move(fingerprint)) {}

DtlsCertificate::~DtlsCertificate() {
  EVP_PKEY_free(static_cast<EVP_PKEY*>(key_));
  X509_free(static_cast<X509*>(cert_));
}

}  // namespace predrop::webrtc

// OpenSSL error text and the certificate fingerprint; see openssl_util.hpp.
#include "openssl_util.hpp"

#include <openssl/err.h>

#include <array>

namespace predrop::webrtc::detail {

std::string take_openssl_errors(std::string_view what) {
  std::string text(what);
  char buf[256];
  bool first = true;
  while (const unsigned long e = ERR_get_error()) {
    ERR_error_string_n(e, buf, sizeof buf);
    text += first ? ": " : "; ";
    text += buf;
    first = false;
  }
  return text;
}

void clear_openssl_errors() {
  ERR_clear_error();
}

std::string sha256_fingerprint(X509* cert) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (cert == nullptr || X509_digest(cert, EVP_sha256(), md.data(), &len) != 1) return {};
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(std::size_t{len} * 3);
  for (unsigned int i = 0; i < len; ++i) {
    if (i != 0) out += ':';
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 0x0F];
  }
  return out;
}

}  // namespace predrop::webrtc::detail

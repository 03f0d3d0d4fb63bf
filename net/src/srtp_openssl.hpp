#pragma once
// Private to net/: libsrtp's ciphers backed by OpenSSL's libcrypto instead of the backend the
// library was built with (NSS on Debian). libsrtp still does all of SRTP (key derivation, packet
// index, replay window, which bytes are encrypted and authenticated); only the primitives it
// calls through its crypto kernel change: AES-128 counter mode, HMAC-SHA1 and AES-128-GCM.
//
// Why: Debian's NSS backend creates and destroys a PKCS#11 context in every AES-ICM set_iv, i.e.
// once per packet, with 8 mallocs; on this project's packet path that was 53 % of a core
// (bench/perf/README.md). The OpenSSL types keep one EVP context per cipher, re-key only the IV
// per packet and allocate nothing per packet.
//
// How: libsrtp's documented extension point srtp_replace_cipher_type / srtp_replace_auth_type
// (crypto_kernel.h, exported by libsrtp2.so.1 but not installed as a header). libsrtp runs its
// own self-test vectors (those of the type being replaced) on every replacement and refuses a
// type that fails them.
//
// Threading: install/uninstall only while no other thread creates or uses SRTP sessions (the
// caller, SrtpLibrary in srtp_session.cpp, does it right after srtp_init under its mutex).
#include <string>

namespace predrop::net::detail {

/// Replaces libsrtp's AES-ICM-128, HMAC-SHA1 and AES-GCM-128 types with the OpenSSL ones.
/// Returns an empty string on success, or why a type was refused (libsrtp then keeps the types
/// it had, all of them: a partial install is rolled back).
std::string install_openssl_srtp_crypto();

/// Puts libsrtp's own types back (those it had when install_openssl_srtp_crypto ran).
void uninstall_openssl_srtp_crypto();

}  // namespace predrop::net::detail

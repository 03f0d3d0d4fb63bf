#include "srtp_openssl.hpp"

// SHA1_Init/Update/Final are deprecated in OpenSSL 3 in favour of EVP, but EVP cannot restart an
// HMAC without allocating (EVP_MD_CTX_copy_ex and EVP_MAC_init duplicate the provider context on
// the heap), and the packet path allocates nothing. The low-level SHA-1 state is a plain struct
// that is copied per packet; it runs the same assembly (SHA-NI where the CPU has it).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <srtp2/auth.h>
#include <srtp2/cipher.h>
#include <srtp2/srtp.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

// libsrtp's crypto kernel (crypto/include/crypto_kernel.h): exported by libsrtp2.so.1 since 2.0,
// but the header is not installed. These are the library's own extension points for swapping a
// crypto implementation; each replacement is self-tested by libsrtp before it takes effect.
extern "C" {
srtp_err_status_t srtp_replace_cipher_type(const srtp_cipher_type_t* ct, srtp_cipher_type_id_t id);
srtp_err_status_t srtp_replace_auth_type(const srtp_auth_type_t* at, srtp_auth_type_id_t id);
const srtp_cipher_type_t* srtp_crypto_kernel_get_cipher_type(srtp_cipher_type_id_t id);
const srtp_auth_type_t* srtp_crypto_kernel_get_auth_type(srtp_auth_type_id_t id);
}

namespace predrop::net::detail {
namespace {

// RFC 3711 §4.1.1 / libsrtp crypto_types.h: AES-128 key + 14-byte salt for AES-ICM; RFC 7714
// §8.1: AES-128 key + 12-byte salt for AES-GCM; RFC 3711 §4.2.1: HMAC-SHA1, 160-bit key.
constexpr int kAes128KeyLen = 16;
constexpr int kIcmKeySaltLen = 30;
constexpr int kIcmSaltLen = 14;
constexpr int kGcmKeySaltLen = 28;
constexpr int kGcmIvLen = 12;
constexpr int kGcmTagLen = 16;
constexpr int kGcmTagLen8 = 8;
constexpr int kSha1DigestLen = SHA_DIGEST_LENGTH;
constexpr int kSha1BlockLen = SHA_CBLOCK;

// Each type allocates its srtp_cipher_t / srtp_auth_t and its state in one block and frees it in
// its own dealloc, so libsrtp's allocator is never involved.
template <class State, class Handle>
struct Block {
  Handle handle;
  State state;
};

// A cipher's srtp_cipher_t and its state (which holds one EVP context) in one block.
template <class State>
srtp_err_status_t alloc_cipher(srtp_cipher_pointer_t* cp, int key_len,
                               const srtp_cipher_type_t* type, int algorithm,
                               const State& initial) {
  auto* block = new (std::nothrow) Block<State, srtp_cipher_t>{{}, initial};
  if (block == nullptr) {
    return srtp_err_status_alloc_fail;
  }
  block->state.ctx = EVP_CIPHER_CTX_new();
  if (block->state.ctx == nullptr) {
    delete block;
    return srtp_err_status_alloc_fail;
  }
  block->handle.type = type;
  block->handle.state = &block->state;
  block->handle.key_len = key_len;
  block->handle.algorithm = algorithm;
  *cp = &block->handle;
  return srtp_err_status_ok;
}

template <class State>
srtp_err_status_t dealloc_cipher(srtp_cipher_pointer_t c) {
  auto* block = reinterpret_cast<Block<State, srtp_cipher_t>*>(c);
  EVP_CIPHER_CTX_free(block->state.ctx);
  OPENSSL_cleanse(&block->state, sizeof(block->state));
  delete block;
  return srtp_err_status_ok;
}

// ---- AES-128 in counter mode (RFC 3711 §4.1.1) ----

struct IcmState {
  EVP_CIPHER_CTX* ctx = nullptr;
  /// The salt, left-aligned in a 16-byte block with the last two bytes zero (the block counter).
  std::array<std::uint8_t, 16> offset{};
};

srtp_cipher_type_t icm_type{};  // Filled in by install (test_data comes from libsrtp's type).

srtp_err_status_t icm_alloc(srtp_cipher_pointer_t* cp, int key_len, int /*tag_len*/) {
  if (key_len != kIcmKeySaltLen) {
    return srtp_err_status_bad_param;
  }
  return alloc_cipher(cp, key_len, &icm_type, SRTP_AES_ICM_128, IcmState{});
}

srtp_err_status_t icm_dealloc(srtp_cipher_pointer_t c) {
  return dealloc_cipher<IcmState>(c);
}

srtp_err_status_t icm_init(void* state, const std::uint8_t* key) {
  auto* s = static_cast<IcmState*>(state);
  s->offset.fill(0);
  std::memcpy(s->offset.data(), key + kAes128KeyLen, kIcmSaltLen);
  if (EVP_EncryptInit_ex(s->ctx, EVP_aes_128_ctr(), nullptr, key, nullptr) != 1) {
    return srtp_err_status_init_fail;
  }
  return srtp_err_status_ok;
}

srtp_err_status_t icm_set_iv(void* state, std::uint8_t* iv, srtp_cipher_direction_t /*dir*/) {
  auto* s = static_cast<IcmState*>(state);
  std::array<std::uint8_t, 16> counter{};
  for (std::size_t i = 0; i < counter.size(); ++i) {
    counter[i] = static_cast<std::uint8_t>(iv[i] ^ s->offset[i]);
  }
  // Only the IV changes: the expanded key stays in the context (no per-packet allocation).
  if (EVP_EncryptInit_ex(s->ctx, nullptr, nullptr, nullptr, counter.data()) != 1) {
    return srtp_err_status_init_fail;
  }
  return srtp_err_status_ok;
}

srtp_err_status_t icm_crypt(void* state, std::uint8_t* buf, unsigned int* len) {
  auto* s = static_cast<IcmState*>(state);
  int out = 0;
  if (*len > static_cast<unsigned int>(INT32_MAX) ||
      EVP_EncryptUpdate(s->ctx, buf, &out, buf, static_cast<int>(*len)) != 1) {
    return srtp_err_status_cipher_fail;
  }
  return srtp_err_status_ok;
}

// ---- AES-128-GCM (RFC 7714) ----

struct GcmState {
  EVP_CIPHER_CTX* ctx = nullptr;
  int tag_len = kGcmTagLen;
  bool encrypting = true;
};

srtp_cipher_type_t gcm_type{};

srtp_err_status_t gcm_alloc(srtp_cipher_pointer_t* cp, int key_len, int tag_len) {
  if (key_len != kGcmKeySaltLen || (tag_len != kGcmTagLen && tag_len != kGcmTagLen8)) {
    return srtp_err_status_bad_param;
  }
  GcmState initial;
  initial.tag_len = tag_len;
  return alloc_cipher(cp, key_len, &gcm_type, SRTP_AES_GCM_128, initial);
}

srtp_err_status_t gcm_dealloc(srtp_cipher_pointer_t c) {
  return dealloc_cipher<GcmState>(c);
}

srtp_err_status_t gcm_init(void* state, const std::uint8_t* key) {
  auto* s = static_cast<GcmState*>(state);
  // The salt (key + 16) is not used here: libsrtp folds it into the 12-byte IV it passes.
  if (EVP_CipherInit_ex(s->ctx, EVP_aes_128_gcm(), nullptr, key, nullptr, 1) != 1 ||
      EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_GCM_SET_IVLEN, kGcmIvLen, nullptr) != 1) {
    return srtp_err_status_init_fail;
  }
  return srtp_err_status_ok;
}

srtp_err_status_t gcm_set_iv(void* state, std::uint8_t* iv, srtp_cipher_direction_t dir) {
  auto* s = static_cast<GcmState*>(state);
  if (dir != srtp_direction_encrypt && dir != srtp_direction_decrypt) {
    return srtp_err_status_bad_param;
  }
  s->encrypting = dir == srtp_direction_encrypt;
  if (EVP_CipherInit_ex(s->ctx, nullptr, nullptr, nullptr, iv, s->encrypting ? 1 : 0) != 1) {
    return srtp_err_status_init_fail;
  }
  return srtp_err_status_ok;
}

srtp_err_status_t gcm_set_aad(void* state, const std::uint8_t* aad, std::uint32_t aad_len) {
  auto* s = static_cast<GcmState*>(state);
  if (aad_len > static_cast<std::uint32_t>(INT32_MAX)) {
    return srtp_err_status_bad_param;
  }
  int out = 0;
  if (EVP_CipherUpdate(s->ctx, nullptr, &out, aad, static_cast<int>(aad_len)) != 1) {
    return srtp_err_status_algo_fail;
  }
  return srtp_err_status_ok;
}

srtp_err_status_t gcm_encrypt(void* state, std::uint8_t* buf, unsigned int* len) {
  auto* s = static_cast<GcmState*>(state);
  if (!s->encrypting || *len > static_cast<unsigned int>(INT32_MAX)) {
    return srtp_err_status_bad_param;
  }
  // libsrtp passes (NULL, 0) for SRTCP sent unencrypted: nothing to do, get_tag finishes.
  int out = 0;
  if (*len > 0 && EVP_CipherUpdate(s->ctx, buf, &out, buf, static_cast<int>(*len)) != 1) {
    return srtp_err_status_cipher_fail;
  }
  return srtp_err_status_ok;
}

srtp_err_status_t gcm_get_tag(void* state, std::uint8_t* tag, std::uint32_t* len) {
  auto* s = static_cast<GcmState*>(state);
  int out = 0;
  std::array<std::uint8_t, 16> none{};
  if (EVP_CipherFinal_ex(s->ctx, none.data(), &out) != 1 ||
      EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_GCM_GET_TAG, s->tag_len, tag) != 1) {
    return srtp_err_status_algo_fail;
  }
  *len = static_cast<std::uint32_t>(s->tag_len);
  return srtp_err_status_ok;
}

srtp_err_status_t gcm_decrypt(void* state, std::uint8_t* buf, unsigned int* len) {
  auto* s = static_cast<GcmState*>(state);
  const auto tag_len = static_cast<unsigned int>(s->tag_len);
  if (s->encrypting || *len < tag_len || *len > static_cast<unsigned int>(INT32_MAX)) {
    return srtp_err_status_bad_param;
  }
  const unsigned int body = *len - tag_len;
  int out = 0;
  if (EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_GCM_SET_TAG, s->tag_len, buf + body) != 1) {
    return srtp_err_status_auth_fail;
  }
  if (body > 0 && EVP_CipherUpdate(s->ctx, buf, &out, buf, static_cast<int>(body)) != 1) {
    return srtp_err_status_cipher_fail;
  }
  std::array<std::uint8_t, 16> none{};
  if (EVP_CipherFinal_ex(s->ctx, none.data(), &out) != 1) {
    return srtp_err_status_auth_fail;  // The tag did not match.
  }
  *len = body;
  return srtp_err_status_ok;
}

// ---- HMAC-SHA1 (RFC 2104, RFC 3711 §4.2.1) ----

struct HmacState {
  SHA_CTX inner_keyed{};  ///< SHA-1 state after (key ^ ipad), computed once per key.
  SHA_CTX outer_keyed{};  ///< SHA-1 state after (key ^ opad).
  SHA_CTX running{};      ///< The current message: a copy of inner_keyed plus what was added.
};

srtp_auth_type_t hmac_type{};

srtp_err_status_t hmac_alloc(srtp_auth_pointer_t* ap, int key_len, int out_len) {
  if (key_len < 0 || key_len > kSha1DigestLen || out_len < 0 || out_len > kSha1DigestLen) {
    return srtp_err_status_bad_param;
  }
  auto* block = new (std::nothrow) Block<HmacState, srtp_auth_t>{};
  if (block == nullptr) {
    return srtp_err_status_alloc_fail;
  }
  block->handle.type = &hmac_type;
  block->handle.state = &block->state;
  block->handle.out_len = out_len;
  block->handle.key_len = key_len;
  block->handle.prefix_len = 0;
  *ap = &block->handle;
  return srtp_err_status_ok;
}

srtp_err_status_t hmac_dealloc(srtp_auth_pointer_t a) {
  auto* block = reinterpret_cast<Block<HmacState, srtp_auth_t>*>(a);
  OPENSSL_cleanse(&block->state, sizeof(block->state));
  delete block;
  return srtp_err_status_ok;
}

srtp_err_status_t hmac_init(void* state, const std::uint8_t* key, int key_len) {
  auto* s = static_cast<HmacState*>(state);
  if (key_len < 0 || key_len > kSha1DigestLen) {
    return srtp_err_status_bad_param;
  }
  std::array<std::uint8_t, kSha1BlockLen> ipad{};
  std::array<std::uint8_t, kSha1BlockLen> opad{};
  ipad.fill(0x36);
  opad.fill(0x5c);
  for (int i = 0; i < key_len; ++i) {
    ipad[static_cast<std::size_t>(i)] ^= key[i];
    opad[static_cast<std::size_t>(i)] ^= key[i];
  }
  const bool ok = SHA1_Init(&s->inner_keyed) == 1 &&
                  SHA1_Update(&s->inner_keyed, ipad.data(), ipad.size()) == 1 &&
                  SHA1_Init(&s->outer_keyed) == 1 &&
                  SHA1_Update(&s->outer_keyed, opad.data(), opad.size()) == 1;
  OPENSSL_cleanse(ipad.data(), ipad.size());
  OPENSSL_cleanse(opad.data(), opad.size());
  s->running = s->inner_keyed;
  return ok ? srtp_err_status_ok : srtp_err_status_auth_fail;
}

srtp_err_status_t hmac_start(void* state) {
  auto* s = static_cast<HmacState*>(state);
  s->running = s->inner_keyed;
  return srtp_err_status_ok;
}

srtp_err_status_t hmac_update(void* state, const std::uint8_t* message, int octets) {
  auto* s = static_cast<HmacState*>(state);
  if (octets < 0 || SHA1_Update(&s->running, message, static_cast<std::size_t>(octets)) != 1) {
    return srtp_err_status_auth_fail;
  }
  return srtp_err_status_ok;
}

srtp_err_status_t hmac_compute(void* state, const std::uint8_t* message, int octets, int tag_len,
                               std::uint8_t* result) {
  auto* s = static_cast<HmacState*>(state);
  if (tag_len < 0 || tag_len > kSha1DigestLen || octets < 0) {
    return srtp_err_status_bad_param;
  }
  std::array<std::uint8_t, kSha1DigestLen> inner{};
  std::array<std::uint8_t, kSha1DigestLen> digest{};
  SHA_CTX outer = s->outer_keyed;
  const bool ok = SHA1_Update(&s->running, message, static_cast<std::size_t>(octets)) == 1 &&
                  SHA1_Final(inner.data(), &s->running) == 1 &&
                  SHA1_Update(&outer, inner.data(), inner.size()) == 1 &&
                  SHA1_Final(digest.data(), &outer) == 1;
  if (!ok) {
    return srtp_err_status_auth_fail;
  }
  std::memcpy(result, digest.data(), static_cast<std::size_t>(tag_len));
  return srtp_err_status_ok;
}

// ---- registration ----

struct Stock {
  const srtp_cipher_type_t* icm = nullptr;
  const srtp_cipher_type_t* gcm = nullptr;
  const srtp_auth_type_t* hmac = nullptr;
};
Stock stock;  // libsrtp's own types, to put back; guarded by the caller's mutex.

const char* name_of(srtp_err_status_t rc) {
  return rc == srtp_err_status_cant_check  ? "no test vectors"
         : rc == srtp_err_status_algo_fail ? "failed libsrtp's test vectors"
                                           : "refused by libsrtp";
}

}  // namespace

std::string install_openssl_srtp_crypto() {
  const Stock found{srtp_crypto_kernel_get_cipher_type(SRTP_AES_ICM_128),
                    srtp_crypto_kernel_get_cipher_type(SRTP_AES_GCM_128),
                    srtp_crypto_kernel_get_auth_type(SRTP_HMAC_SHA1)};
  if (found.icm == nullptr || found.gcm == nullptr || found.hmac == nullptr) {
    return "libsrtp has no AES-ICM-128, AES-GCM-128 or HMAC-SHA1 type to replace";
  }
  if (found.icm == &icm_type) {
    return {};  // Already installed in this libsrtp initialisation.
  }
  stock = found;
  // The replacement is checked against the vectors of the type it replaces (RFC 3711 B.2 for
  // AES-ICM, RFC 2202 for HMAC-SHA1, libsrtp's GCM vectors), so each type carries those.
  icm_type = {icm_alloc,
              icm_dealloc,
              icm_init,
              nullptr,
              icm_crypt,
              icm_crypt,
              icm_set_iv,
              nullptr,
              "AES-128 counter mode using OpenSSL (predrop)",
              stock.icm->test_data,
              SRTP_AES_ICM_128};
  gcm_type = {gcm_alloc,
              gcm_dealloc,
              gcm_init,
              gcm_set_aad,
              gcm_encrypt,
              gcm_decrypt,
              gcm_set_iv,
              gcm_get_tag,
              "AES-128 GCM using OpenSSL (predrop)",
              stock.gcm->test_data,
              SRTP_AES_GCM_128};
  hmac_type = {hmac_alloc,
               hmac_dealloc,
               hmac_init,
               hmac_compute,
               hmac_update,
               hmac_start,
               "HMAC-SHA1 using OpenSSL's SHA-1 (predrop)",
               stock.hmac->test_data,
               SRTP_HMAC_SHA1};

  srtp_err_status_t rc = srtp_replace_cipher_type(&icm_type, SRTP_AES_ICM_128);
  if (rc != srtp_err_status_ok) {
    return std::string("AES-ICM-128: ") + name_of(rc);
  }
  rc = srtp_replace_cipher_type(&gcm_type, SRTP_AES_GCM_128);
  if (rc != srtp_err_status_ok) {
    uninstall_openssl_srtp_crypto();
    return std::string("AES-GCM-128: ") + name_of(rc);
  }
  rc = srtp_replace_auth_type(&hmac_type, SRTP_HMAC_SHA1);
  if (rc != srtp_err_status_ok) {
    uninstall_openssl_srtp_crypto();
    return std::string("HMAC-SHA1: ") + name_of(rc);
  }
  return {};
}

void uninstall_openssl_srtp_crypto() {
  // Sessions made before keep working: each cipher and auth object points at its own type.
  if (stock.icm != nullptr && srtp_crypto_kernel_get_cipher_type(SRTP_AES_ICM_128) == &icm_type) {
    (void)srtp_replace_cipher_type(stock.icm, SRTP_AES_ICM_128);
  }
  if (stock.gcm != nullptr && srtp_crypto_kernel_get_cipher_type(SRTP_AES_GCM_128) == &gcm_type) {
    (void)srtp_replace_cipher_type(stock.gcm, SRTP_AES_GCM_128);
  }
  if (stock.hmac != nullptr && srtp_crypto_kernel_get_auth_type(SRTP_HMAC_SHA1) == &hmac_type) {
    (void)srtp_replace_auth_type(stock.hmac, SRTP_HMAC_SHA1);
  }
}

}  // namespace predrop::net::detail

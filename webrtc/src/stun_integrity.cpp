// MESSAGE-INTEGRITY (RFC 8489 §14.5): HMAC-SHA1 keyed with the short-term password (§9.1.1) over
// the message up to the attribute, with the header's length field counting up to and including
// MESSAGE-INTEGRITY (so a FINGERPRINT after it is not counted). OpenSSL's one-shot HMAC().
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <cstring>

#include "predrop/core/byte_io.hpp"
#include "predrop/webrtc/stun.hpp"

namespace predrop::webrtc {
namespace {

// ICE's requests are a few hundred bytes; a message whose covered part is larger is refused
// rather than copied to the heap (the check runs on every STUN datagram a peer sends).
constexpr std::size_t kMaxCovered = 2048;
constexpr std::size_t kAttrHeaderSize = 4;

// HMAC-SHA1 of `covered` with its length field set to cover MESSAGE-INTEGRITY too.
bool integrity_of(std::span<const std::uint8_t> covered, std::string_view key,
                  std::array<std::uint8_t, EVP_MAX_MD_SIZE>& mac) {
  if (covered.size() < kStunHeaderSize || covered.size() > kMaxCovered) return false;
  std::array<std::uint8_t, kMaxCovered> copy{};
  std::memcpy(copy.data(), covered.data(), covered.size());
  const std::size_t length =
      covered.size() - kStunHeaderSize + kAttrHeaderSize + kStunIntegritySize;
  core::store_u16_be(copy.data() + 2, static_cast<std::uint16_t>(length));
  unsigned int mac_len = 0;
  const auto* out = HMAC(EVP_sha1(), key.data(), static_cast<int>(key.size()), copy.data(),
                         covered.size(), mac.data(), &mac_len);
  return out != nullptr && mac_len == kStunIntegritySize;
}

}  // namespace

bool verify_stun_integrity(std::span<const std::uint8_t> data, const StunMessage& message,
                           std::string_view key) {
  const std::size_t at = message.integrity_offset;
  if (at < kStunHeaderSize || data.size() < at + kAttrHeaderSize + kStunIntegritySize) {
    return false;
  }
  std::array<std::uint8_t, EVP_MAX_MD_SIZE> mac{};
  if (!integrity_of(data.first(at), key, mac)) return false;
  return CRYPTO_memcmp(mac.data(), data.data() + at + kAttrHeaderSize, kStunIntegritySize) == 0;
}

void StunWriter::add_message_integrity(std::string_view key) {
  std::uint8_t* v = reserve(StunAttr::MessageIntegrity, kStunIntegritySize);
  if (v == nullptr) return;
  const std::size_t covered = size_ - kAttrHeaderSize - kStunIntegritySize;
  std::array<std::uint8_t, EVP_MAX_MD_SIZE> mac{};
  if (!integrity_of(out_.first(covered), key, mac)) {
    ok_ = false;
    return;
  }
  std::memcpy(v, mac.data(), kStunIntegritySize);
}

}  // namespace predrop::webrtc

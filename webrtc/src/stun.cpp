// STUN parser and writer (RFC 8489); layout and rules in predrop/webrtc/stun.hpp.
#include "predrop/webrtc/stun.hpp"

#include <algorithm>
#include <cstring>

#include "predrop/core/byte_io.hpp"

namespace predrop::webrtc {
namespace {

using core::load_u16_be;
using core::load_u32_be;
using core::load_u64_be;
using core::store_u16_be;
using core::store_u32_be;
using core::store_u64_be;

constexpr std::size_t kAttrHeaderSize = 4;
constexpr std::size_t padded(std::size_t n) {
  return (n + 3) & ~std::size_t{3};
}

// The message type interleaves method bits M11..M0 with class bits C1 C0 (§5, figure 3).
constexpr std::uint16_t type_of(StunClass cls, std::uint16_t method) {
  const auto c = static_cast<std::uint16_t>(cls);
  return static_cast<std::uint16_t>((method & 0x000F) | ((method & 0x0070) << 1) |
                                    ((method & 0x0F80) << 2) | ((c & 1) << 4) | ((c & 2) << 7));
}
constexpr std::uint16_t method_of(std::uint16_t type) {
  return static_cast<std::uint16_t>((type & 0x000F) | ((type & 0x00E0) >> 1) |
                                    ((type & 0x3E00) >> 2));
}
constexpr StunClass class_of(std::uint16_t type) {
  return static_cast<StunClass>(((type >> 4) & 1) | ((type >> 7) & 2));
}

constexpr std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) {
      c = (c & 1) != 0 ? 0xEDB88320U ^ (c >> 1) : c >> 1;
    }
    table[i] = c;
  }
  return table;
}
constexpr auto kCrcTable = make_crc_table();

// XOR-MAPPED-ADDRESS (§14.2): family, port ^ cookie>>16, address ^ (cookie || transaction id).
std::optional<net::SocketAddress> read_xor_address(const std::uint8_t* v, std::size_t len,
                                                   const std::uint8_t* header) {
  if (len < 8) return std::nullopt;
  const auto port = static_cast<std::uint16_t>(load_u16_be(v + 2) ^ (kStunMagicCookie >> 16));
  if (v[1] == 0x01 && len == 8) {
    std::array<std::uint8_t, 4> ip{};
    for (std::size_t i = 0; i < 4; ++i) {
      ip[i] = v[4 + i] ^ header[4 + i];
    }
    return net::SocketAddress::v4(ip, port);
  }
  if (v[1] == 0x02 && len == 20) {
    std::array<std::uint8_t, 16> ip{};
    for (std::size_t i = 0; i < 16; ++i) {
      ip[i] = v[4 + i] ^ header[4 + i];
    }
    return net::SocketAddress::v6(ip, port);
  }
  return std::nullopt;
}

// Reads one attribute's value into `m`; false if its length is impossible for its type.
bool read_attribute(StunMessage& m, StunAttr type, const std::uint8_t* v, std::size_t len,
                    const std::uint8_t* header) {
  switch (type) {
    case StunAttr::Username:
      if (len > 513) return false;  // §14.3: less than 513 bytes.
      m.username = std::string_view(reinterpret_cast<const char*>(v), len);
      return true;
    case StunAttr::Priority:
      if (len != 4) return false;
      m.priority = load_u32_be(v);
      return true;
    case StunAttr::UseCandidate:
      m.use_candidate = true;
      return len == 0;
    case StunAttr::IceControlling:
    case StunAttr::IceControlled:
      if (len != 8) return false;
      (type == StunAttr::IceControlling ? m.ice_controlling : m.ice_controlled) = load_u64_be(v);
      return true;
    case StunAttr::XorMappedAddress:
      m.xor_mapped = read_xor_address(v, len, header);
      return m.xor_mapped.has_value();
    case StunAttr::ErrorCode:
      if (len < 4) return false;
      m.error_code = static_cast<std::uint16_t>((v[2] & 0x07) * 100 + v[3]);
      return true;
    default:
      return true;  // Comprehension-optional or unknown: skipped.
  }
}

}  // namespace

std::string_view to_string(StunError error) {
  switch (error) {
    case StunError::None:
      return "none";
    case StunError::TooShort:
      return "too short";
    case StunError::NotStun:
      return "not stun";
    case StunError::BadLength:
      return "bad length";
    case StunError::BadAttribute:
      return "bad attribute";
    case StunError::BadFingerprint:
      return "bad fingerprint";
  }
  return "unknown";
}

std::uint32_t crc32(std::span<const std::uint8_t> data) {
  std::uint32_t c = 0xFFFFFFFFU;
  for (const std::uint8_t b : data) {
    c = kCrcTable[(c ^ b) & 0xFF] ^ (c >> 8);
  }
  return c ^ 0xFFFFFFFFU;
}

bool looks_like_stun(std::span<const std::uint8_t> data) {
  return data.size() >= kStunHeaderSize && (data[0] & 0xC0) == 0 &&
         load_u32_be(data.data() + 4) == kStunMagicCookie;
}

std::optional<StunMessage> parse_stun(std::span<const std::uint8_t> data, StunError* why) {
  auto fail = [why](StunError e) {
    if (why != nullptr) *why = e;
    return std::nullopt;
  };
  if (data.size() < kStunHeaderSize) return fail(StunError::TooShort);
  if (!looks_like_stun(data)) return fail(StunError::NotStun);
  const std::uint8_t* h = data.data();
  const std::size_t length = load_u16_be(h + 2);
  if (length % 4 != 0 || kStunHeaderSize + length != data.size()) {
    return fail(StunError::BadLength);
  }
  StunMessage m;
  const std::uint16_t type = load_u16_be(h);
  m.message_class = class_of(type);
  m.method = method_of(type);
  std::memcpy(m.transaction_id.data(), h + 8, m.transaction_id.size());
  m.size = data.size();

  std::size_t at = kStunHeaderSize;
  while (at < data.size()) {
    if (data.size() - at < kAttrHeaderSize) return fail(StunError::BadAttribute);
    const auto attr = static_cast<StunAttr>(load_u16_be(h + at));
    const std::size_t len = load_u16_be(h + at + 2);
    const std::size_t value_at = at + kAttrHeaderSize;
    if (data.size() - value_at < padded(len)) return fail(StunError::BadAttribute);
    const std::uint8_t* v = h + value_at;
    if (attr == StunAttr::Fingerprint) {
      // §14.7: the last attribute, CRC over everything before it, length field as is.
      if (len != 4 || value_at + 4 != data.size()) return fail(StunError::BadFingerprint);
      if ((crc32(data.first(at)) ^ kStunFingerprintXor) != load_u32_be(v)) {
        return fail(StunError::BadFingerprint);
      }
      m.has_fingerprint = true;
    } else if (m.integrity_offset != 0) {
      // §14.5: anything after MESSAGE-INTEGRITY but FINGERPRINT is ignored.
    } else if (attr == StunAttr::MessageIntegrity) {
      if (len != kStunIntegritySize) return fail(StunError::BadAttribute);
      m.integrity_offset = at;
    } else if (!read_attribute(m, attr, v, len, h)) {
      return fail(StunError::BadAttribute);
    }
    at = value_at + padded(len);
  }
  if (why != nullptr) *why = StunError::None;
  return m;
}

StunWriter::StunWriter(std::span<std::uint8_t> out, StunClass cls, std::uint16_t method,
                       const StunTransactionId& id)
    : out_(out) {
  if (out_.size() < kStunHeaderSize) {
    ok_ = false;
    return;
  }
  store_u16_be(out_.data(), type_of(cls, method));
  store_u16_be(out_.data() + 2, 0);
  store_u32_be(out_.data() + 4, kStunMagicCookie);
  std::memcpy(out_.data() + 8, id.data(), id.size());
  size_ = kStunHeaderSize;
}

std::uint8_t* StunWriter::reserve(StunAttr type, std::size_t value_size) {
  const std::size_t need = kAttrHeaderSize + padded(value_size);
  if (!ok_ || value_size > 0xFFFF || out_.size() - size_ < need) {
    ok_ = false;
    return nullptr;
  }
  std::uint8_t* p = out_.data() + size_;
  store_u16_be(p, static_cast<std::uint16_t>(type));
  store_u16_be(p + 2, static_cast<std::uint16_t>(value_size));
  std::fill(p + kAttrHeaderSize + value_size, p + need, std::uint8_t{0});
  size_ += need;
  store_u16_be(out_.data() + 2, static_cast<std::uint16_t>(size_ - kStunHeaderSize));
  return p + kAttrHeaderSize;
}

void StunWriter::add_text(StunAttr type, std::string_view text) {
  if (std::uint8_t* v = reserve(type, text.size())) std::memcpy(v, text.data(), text.size());
}

void StunWriter::add_u32(StunAttr type, std::uint32_t value) {
  if (std::uint8_t* v = reserve(type, 4)) store_u32_be(v, value);
}

void StunWriter::add_u64(StunAttr type, std::uint64_t value) {
  if (std::uint8_t* v = reserve(type, 8)) store_u64_be(v, value);
}

void StunWriter::add_flag(StunAttr type) {
  (void)reserve(type, 0);
}

void StunWriter::add_xor_mapped_address(const net::SocketAddress& address) {
  const std::size_t ip_size = address.ip_size();
  std::uint8_t* v = reserve(StunAttr::XorMappedAddress, 4 + ip_size);
  if (v == nullptr) return;
  v[0] = 0;
  v[1] = address.is_v4() ? 0x01 : 0x02;
  store_u16_be(v + 2, static_cast<std::uint16_t>(address.port() ^ (kStunMagicCookie >> 16)));
  for (std::size_t i = 0; i < ip_size; ++i) {
    v[4 + i] = address.ip_bytes()[i] ^ out_[4 + i];
  }
}

void StunWriter::add_error_code(std::uint16_t code, std::string_view reason) {
  std::uint8_t* v = reserve(StunAttr::ErrorCode, 4 + reason.size());
  if (v == nullptr) return;
  v[0] = 0;
  v[1] = 0;
  v[2] = static_cast<std::uint8_t>((code / 100) & 0x07);
  v[3] = static_cast<std::uint8_t>(code % 100);
  std::memcpy(v + 4, reason.data(), reason.size());
}

void StunWriter::add_fingerprint() {
  std::uint8_t* v = reserve(StunAttr::Fingerprint, 4);
  if (v == nullptr) return;
  const std::size_t covered = size_ - kAttrHeaderSize - 4;
  store_u32_be(v, crc32(out_.first(covered)) ^ kStunFingerprintXor);
}

}  // namespace predrop::webrtc

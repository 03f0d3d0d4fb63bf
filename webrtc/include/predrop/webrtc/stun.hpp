#pragma once
// STUN messages (RFC 8489) as ICE uses them (RFC 8445 §7.1): the parser and a writer.
//
//    0                   1                   2                   3
//    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |0 0|     STUN Message Type     |         Message Length        |   §5: type = method and
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+       class bits C1 C0
//   |                  Magic Cookie = 0x2112A442                    |       interleaved
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |                  Transaction ID (96 bits)                     |
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   | attributes: u16 type | u16 length | value, padded to 4 (§14)  |
//
// Attributes read: USERNAME (§14.3), MESSAGE-INTEGRITY (§14.5, HMAC-SHA1 over the message up to
// it, the length field counting it), FINGERPRINT (§14.7, CRC-32 of the message up to it XOR
// 0x5354554e, always last), XOR-MAPPED-ADDRESS (§14.2), ERROR-CODE (§14.8), and ICE's PRIORITY,
// USE-CANDIDATE, ICE-CONTROLLED, ICE-CONTROLLING (RFC 8445 §16.1). Attributes after
// MESSAGE-INTEGRITY other than FINGERPRINT are ignored (§14.5).
//
// Contract: parse_stun() and StunWriter are pure functions over caller memory; no allocation, no
// exception. A parsed message holds views into the caller's buffer. The integrity functions
// (stun_integrity.cpp) run OpenSSL's HMAC.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "predrop/net/socket_address.hpp"

namespace predrop::webrtc {

/// The fixed value of bytes 4..7 of every RFC 5389/8489 message (§5).
inline constexpr std::uint32_t kStunMagicCookie = 0x2112A442;
/// Size of the STUN header (§5).
inline constexpr std::size_t kStunHeaderSize = 20;
/// The Binding method (§18.2), the only one ICE uses.
inline constexpr std::uint16_t kStunBinding = 0x001;
/// XOR of the CRC-32 in FINGERPRINT (§14.7: "STUN" in ASCII).
inline constexpr std::uint32_t kStunFingerprintXor = 0x5354554e;
/// Size of an HMAC-SHA1 MESSAGE-INTEGRITY value (§14.5).
inline constexpr std::size_t kStunIntegritySize = 20;

/// Attribute types (RFC 8489 §18.3, RFC 8445 §16.1).
enum class StunAttr : std::uint16_t {
  MappedAddress = 0x0001,
  Username = 0x0006,
  MessageIntegrity = 0x0008,
  ErrorCode = 0x0009,
  XorMappedAddress = 0x0020,
  Priority = 0x0024,
  UseCandidate = 0x0025,
  Software = 0x8022,
  Fingerprint = 0x8028,
  IceControlled = 0x8029,
  IceControlling = 0x802A,
};

/// The class bits of the message type (§5).
enum class StunClass : std::uint8_t {
  Request = 0,
  Indication = 1,
  SuccessResponse = 2,
  ErrorResponse = 3,
};

/// The 96-bit transaction id.
using StunTransactionId = std::array<std::uint8_t, 12>;

/// Why parse_stun() refused a datagram.
enum class StunError : std::uint8_t {
  None,
  TooShort,        ///< Fewer than 20 bytes, or the length field runs past the datagram.
  NotStun,         ///< Top bits not 00 or no magic cookie (RFC 7983 would send it elsewhere).
  BadLength,       ///< Length field not a multiple of 4, or not the datagram's length.
  BadAttribute,    ///< An attribute runs past the message or has an impossible length.
  BadFingerprint,  ///< FINGERPRINT present but not last or not matching.
};

/// Short, stable text for a StunError, for counters and logs.
std::string_view to_string(StunError error);

/// One parsed message; the views point into the parsed buffer.
struct StunMessage {
  StunClass message_class = StunClass::Request;
  std::uint16_t method = 0;
  StunTransactionId transaction_id{};
  std::size_t size = 0;                          ///< 20 + the length field.
  std::string_view username;                     ///< Empty when absent.
  std::optional<std::uint32_t> priority;         ///< PRIORITY.
  bool use_candidate = false;                    ///< USE-CANDIDATE present.
  std::optional<std::uint64_t> ice_controlling;  ///< Tie-breaker of ICE-CONTROLLING.
  std::optional<std::uint64_t> ice_controlled;   ///< Tie-breaker of ICE-CONTROLLED.
  std::optional<net::SocketAddress> xor_mapped;  ///< XOR-MAPPED-ADDRESS, decoded.
  std::optional<std::uint16_t> error_code;       ///< ERROR-CODE as class*100+number.
  std::size_t integrity_offset = 0;  ///< Offset of the MESSAGE-INTEGRITY header; 0 = absent.
  bool has_fingerprint = false;      ///< FINGERPRINT present (and, if so, checked).
};

/// True if the datagram could be STUN by its first bytes (top bits 00, magic cookie).
bool looks_like_stun(std::span<const std::uint8_t> data);

/// Parses one STUN message (the whole datagram), checking FINGERPRINT if present. On failure
/// returns nullopt and, if `why` is given, the reason.
std::optional<StunMessage> parse_stun(std::span<const std::uint8_t> data, StunError* why = nullptr);

/// CRC-32 (ISO-HDLC, as zlib's crc32) of `data`, the checksum FINGERPRINT uses.
std::uint32_t crc32(std::span<const std::uint8_t> data);

/// Checks the MESSAGE-INTEGRITY of a parsed message against the short-term key (the password,
/// §9.1.1); false when absent or wrong. Constant-time comparison.
bool verify_stun_integrity(std::span<const std::uint8_t> data, const StunMessage& message,
                           std::string_view key);

/// Builds a message into caller memory, attribute by attribute. A write that does not fit marks
/// the writer failed (ok() false); later writes do nothing.
class StunWriter {
 public:
  /// Starts a message of `cls`/`method` with `id` in `out`.
  StunWriter(std::span<std::uint8_t> out, StunClass cls, std::uint16_t method,
             const StunTransactionId& id);

  /// USERNAME (or any text attribute of `type`), padded with zeros.
  void add_text(StunAttr type, std::string_view text);
  /// A 32-bit attribute (PRIORITY).
  void add_u32(StunAttr type, std::uint32_t value);
  /// A 64-bit attribute (ICE-CONTROLLING/CONTROLLED).
  void add_u64(StunAttr type, std::uint64_t value);
  /// An attribute without a value (USE-CANDIDATE).
  void add_flag(StunAttr type);
  /// XOR-MAPPED-ADDRESS of `address` (§14.2).
  void add_xor_mapped_address(const net::SocketAddress& address);
  /// ERROR-CODE `code` (300..699) with a reason phrase (§14.8).
  void add_error_code(std::uint16_t code, std::string_view reason);
  /// MESSAGE-INTEGRITY with the short-term key (the password); call after the attributes it covers.
  void add_message_integrity(std::string_view key);
  /// FINGERPRINT; call last.
  void add_fingerprint();

  bool ok() const { return ok_; }
  /// Bytes written (0 when !ok()).
  std::size_t size() const { return ok_ ? size_ : 0; }

 private:
  std::uint8_t* reserve(StunAttr type, std::size_t value_size);

  std::span<std::uint8_t> out_;
  std::size_t size_ = 0;
  bool ok_ = true;
};

}  // namespace predrop::webrtc

#pragma once
// The ICE-lite side of one WebRTC session (RFC 8445 §2.5, §7.3): the server never sends checks;
// it answers the browser's Binding requests that carry USERNAME "<our ufrag>:<their ufrag>" and a
// MESSAGE-INTEGRITY keyed with our password (short-term credentials, RFC 8489 §9.1), and takes
// the address of a valid request with USE-CANDIDATE as the selected pair (regular nomination,
// RFC 8445 §8.1.1; a lite agent is always controlled). Consent (RFC 7675 §5.1): media may be
// sent while a valid request arrived from the selected address within the consent timeout
// (30 s); browsers send one every few seconds.
//
// A pure state machine: time comes in as `now_us`, the response is written into caller memory,
// nothing is sent here. Requests that fail integrity or name another ufrag are dropped without a
// response (no reflection for a forger) and counted.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "predrop/net/socket_address.hpp"

namespace predrop::webrtc {

/// One side's ICE credentials (a=ice-ufrag, a=ice-pwd; RFC 8839 §5.4).
struct IceCredentials {
  std::string ufrag;
  std::string pwd;
};

/// Makes fresh random credentials: an 8-character ufrag and a 24-character password (RFC 8839
/// §5.4 asks for at least 4 and 22 ice-chars), from net::os_random.
IceCredentials random_ice_credentials();

/// What on_stun() did with a datagram.
enum class IceVerdict : std::uint8_t {
  Respond,       ///< A valid request: send the response written into the buffer.
  Malformed,     ///< Not a parseable STUN message (or bad FINGERPRINT).
  NotRequest,    ///< A STUN message but not a Binding request: ignored.
  BadUsername,   ///< USERNAME absent or not ours: dropped.
  BadIntegrity,  ///< MESSAGE-INTEGRITY absent or wrong: dropped.
  NoRoom,        ///< The response buffer is too small.
};

/// Counters of one agent.
struct IceStats {
  std::uint64_t responded = 0;
  std::uint64_t malformed = 0;
  std::uint64_t bad_username = 0;
  std::uint64_t bad_integrity = 0;
  std::uint64_t nominations = 0;  ///< Times the selected address was set or moved.
};

/// ICE-lite responder state for one session.
class IceLiteAgent {
 public:
  /// RFC 7675 §5.1: consent expires 30 s after the last check that succeeded.
  static constexpr std::uint64_t kConsentTimeoutUs = 30'000'000;

  /// `local` is ours (in the answer); `remote_ufrag` the offer's a=ice-ufrag (empty: not checked).
  IceLiteAgent(IceCredentials local, std::string remote_ufrag,
               std::uint64_t consent_timeout_us = kConsentTimeoutUs);

  /// Handles one STUN datagram from `from`; on Respond, `response_size` bytes of `response`
  /// hold the Binding success response to send back to `from`.
  IceVerdict on_stun(std::uint64_t now_us, const net::SocketAddress& from,
                     std::span<const std::uint8_t> packet, std::span<std::uint8_t> response,
                     std::size_t& response_size);

  /// The nominated address media goes to; nullopt before nomination.
  const std::optional<net::SocketAddress>& selected() const { return selected_; }
  /// True while media may be sent: nominated and consent fresh at `now_us`.
  bool consent_fresh(std::uint64_t now_us) const;
  /// True once consent was granted and then lapsed (the session should end).
  bool consent_expired(std::uint64_t now_us) const;
  /// True if `from` has passed a valid check (DTLS and SRTCP are accepted only from such).
  bool is_verified(const net::SocketAddress& from) const;

  const IceCredentials& local() const { return local_; }
  const IceStats& stats() const { return stats_; }

 private:
  IceCredentials local_;
  std::string remote_ufrag_;
  std::uint64_t consent_timeout_us_;
  std::optional<net::SocketAddress> selected_;
  std::optional<net::SocketAddress> last_verified_;
  std::uint64_t last_consent_us_ = 0;
  IceStats stats_;
};

}  // namespace predrop::webrtc

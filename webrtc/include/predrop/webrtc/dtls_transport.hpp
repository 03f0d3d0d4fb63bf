#pragma once
// One DTLS-SRTP association (RFC 5764) over OpenSSL with memory BIOs: datagrams in through
// on_datagram(), records out through the send function, keys out through keys() once connected.
// The peer's certificate is accepted only if its SHA-256 matches the a=fingerprint of its SDP
// (RFC 8122 §5, RFC 8827 §6.5); the profile is SRTP_AES128_CM_SHA1_80, the keys come from
// SSL_export_keying_material("EXTRACTOR-dtls_srtp") laid out as RFC 5764 §4.2 says:
// client key | server key | client salt | server salt.
//
// Never blocks and owns no timer: after each call the owner asks retransmit_in_us() and, when
// that time has passed, calls on_timer() (DTLSv1_get_timeout / DTLSv1_handle_timeout). Setup
// errors come back as values; nothing throws. One thread at a time.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "predrop/core/result.hpp"
#include "predrop/webrtc/dtls_certificate.hpp"
#include "predrop/webrtc/dtls_context.hpp"
#include "predrop/wire/sdes_key.hpp"

struct ssl_st;

namespace predrop::webrtc {

/// Which side of the handshake we are (a=setup: passive = Server, active = Client).
enum class DtlsRole : std::uint8_t { Server, Client };

/// Where an association stands.
enum class DtlsState : std::uint8_t { Handshaking, Connected, Failed, Closed };

/// The SRTP keys of a connected association, per direction.
struct DtlsSrtpKeys {
  wire::SrtpSuite suite = wire::SrtpSuite::AesCm128HmacSha1_80;
  wire::SrtpKeyMaterial local;   ///< Protects what we send.
  wire::SrtpKeyMaterial remote;  ///< Unprotects what the peer sends.
};

/// One DTLS association.
class DtlsTransport {
 public:
  /// Where records go: one call per datagram to send to the peer.
  using SendFn = std::function<void(std::span<const std::uint8_t>)>;

  /// Sets up the association; `remote_fingerprint` is the peer's a=fingerprint sha-256 value
  /// (hex pairs, any case). An error carries OpenSSL's reason.
  static core::Result<std::unique_ptr<DtlsTransport>> create(
      std::shared_ptr<const DtlsContext> context, DtlsRole role, std::string remote_fingerprint,
      SendFn send);
  /// The same with a context of its own (a tool or test with few associations; a server makes
  /// one DtlsContext and shares it).
  static core::Result<std::unique_ptr<DtlsTransport>> create(
      std::shared_ptr<const DtlsCertificate> certificate, DtlsRole role,
      std::string remote_fingerprint, SendFn send);

  ~DtlsTransport();
  DtlsTransport(const DtlsTransport&) = delete;
  DtlsTransport& operator=(const DtlsTransport&) = delete;
  DtlsTransport(DtlsTransport&&) = delete;
  DtlsTransport& operator=(DtlsTransport&&) = delete;

  /// Starts the handshake: a client sends its ClientHello; a server waits for one.
  void start();
  /// Feeds one received DTLS datagram.
  void on_datagram(std::span<const std::uint8_t> data);
  /// Microseconds until a flight must be resent; nullopt while no timer runs.
  std::optional<std::uint64_t> retransmit_in_us() const;
  /// Resends the last flight if its timer expired.
  void on_timer();

  DtlsState state() const { return state_; }
  /// Why the association failed (empty otherwise).
  const std::string& failure() const { return failure_; }
  /// The SRTP keys once Connected.
  const std::optional<DtlsSrtpKeys>& keys() const { return keys_; }
  /// True if the peer presented a certificate whose fingerprint did not match.
  bool fingerprint_mismatch() const { return fingerprint_mismatch_; }

  /// For the OpenSSL verify callback (webrtc/src only): checks the peer's certificate.
  bool check_peer_fingerprint(const std::string& actual);

 private:
  DtlsTransport(std::shared_ptr<const DtlsContext> context, DtlsRole role,
                std::string remote_fingerprint, SendFn send);
  core::Status init();
  void advance();
  void finish_handshake();
  void flush();
  void fail(std::string why);

  struct SslFree {
    void operator()(ssl_st* ssl) const;
  };

  std::shared_ptr<const DtlsContext> context_;
  DtlsRole role_;
  std::string remote_fingerprint_;
  SendFn send_;
  std::unique_ptr<ssl_st, SslFree> ssl_;
  DtlsState state_ = DtlsState::Handshaking;
  std::string failure_;
  std::optional<DtlsSrtpKeys> keys_;
  bool fingerprint_mismatch_ = false;
};

/// Short, stable text for a DtlsState.
const char* to_string(DtlsState state);

}  // namespace predrop::webrtc

#pragma once
// The WebRTC side of the WHEP sessions of one worker (docs/webrtc.md): per session its ICE-lite
// agent and DTLS association on the worker's RTP socket, the DTLS retransmission timer on the
// loop, and the demultiplexing of what arrives on that socket (RFC 7983): STUN by the USERNAME's
// ufrag, DTLS and SRTCP by the ICE-verified address. It tells the facade, through a narrow
// listener, when a session's DTLS is up (start sending, with these keys, to that address), when
// and when a check proved the browser alive; the facade owns the sessions and asks which
// failed or lost consent.
//
// Refused and counted: STUN naming no session's ufrag or failing MESSAGE-INTEGRITY (never
// answered), DTLS from an address no valid check came from, failed handshakes (wrong
// fingerprint among them).
//
// Threading: the worker's loop thread, except OpenSSL's handshake work: each DTLS datagram and
// retransmission tick is a job on a handshake thread of this worker's own (net::OffloadThread,
// at a lower priority), whose completion sends the records and applies the outcome on the loop.
// A join's key exchange and signatures thus never delay the stages of sessions already playing
// (docs/webrtc.md "Sessions per core"). At most kMaxQueuedDtls jobs wait, kMaxQueuedDtlsPerPeer
// per session; beyond, the datagram is dropped and counted (the peer retransmits).
//
// Errors: start() returns OpenSSL's reason; per datagram nothing throws and nothing is logged.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "predrop/net/event_loop.hpp"
#include "predrop/net/offload_thread.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/server/server_options.hpp"
#include "predrop/webrtc/dtls_context.hpp"
#include "predrop/webrtc/dtls_transport.hpp"
#include "predrop/webrtc/ice_lite.hpp"

namespace predrop::server::detail {

/// What WhepPeers tells the facade.
class WhepPeerListener {
 public:
  virtual ~WhepPeerListener() = default;
  /// DTLS is up: the session may start, sending to `to` with `keys`.
  virtual void on_peer_connected(const std::string& session, const net::SocketAddress& to,
                                 const webrtc::DtlsSrtpKeys& keys) = 0;
  /// A valid check from the browser: the session is alive (its expiry moves).
  virtual void on_peer_alive(const std::string& session) = 0;
};

/// The ICE and DTLS state of every WHEP session of one worker.
class WhepPeers {
 public:
  WhepPeers(net::EventLoop& loop, WhepPeerListener& listener, ServerStats& stats);
  ~WhepPeers();
  WhepPeers(const WhepPeers&) = delete;
  WhepPeers& operator=(const WhepPeers&) = delete;

  /// Makes this worker's DTLS certificate and takes the socket STUN and DTLS go out on.
  core::Status start(net::UdpEndpoint& socket);
  /// Drops every peer (the server stops).
  void stop();
  bool started() const { return context_ != nullptr; }
  /// The a=fingerprint of this worker's certificate.
  const std::string& fingerprint() const;

  /// Adds the peer of a new session; an error if DTLS cannot be set up.
  core::Status add(const std::string& session, webrtc::IceCredentials local,
                   std::string remote_ufrag, std::string remote_fingerprint);
  /// Forgets a session's peer (no-op if unknown).
  void remove(const std::string& session);
  /// Handles a datagram on the RTP port if it is STUN or DTLS (true: consumed, counted or not).
  bool on_datagram(std::span<const std::uint8_t> data, const net::SocketAddress& from,
                   std::uint64_t now_us);
  /// Sessions whose browser's consent lapsed (RFC 7675), at `now_us`.
  std::vector<std::string> consent_expired(std::uint64_t now_us) const;
  /// Sessions whose DTLS handshake failed since the last call (the facade removes them from its
  /// housekeeping: a peer is never destroyed inside its own timer's callback).
  std::vector<std::string> take_failed() { return std::exchange(failed_, {}); }
  std::size_t size() const { return peers_.size(); }

  /// DTLS jobs (datagrams, timer ticks) that may wait for the handshake thread: ~1.5 MB at most.
  static constexpr std::size_t kMaxQueuedDtls = 1024;
  /// Of those, per session: a browser's flight is a few datagrams; a flood from one verified
  /// address must not keep the other sessions' handshakes out.
  static constexpr std::size_t kMaxQueuedDtlsPerPeer = 32;
  /// A step refused while none of the session's jobs are out: its timer tries again this soon.
  static constexpr std::uint64_t kRetryRefusedDtlsMs = 50;
  /// The handshake thread's nice value above the worker's: playing sessions first.
  static constexpr int kHandshakeNice = 10;

 private:
  struct Peer;
  struct Association;
  struct DtlsStep;
  void on_stun(std::span<const std::uint8_t> data, const net::SocketAddress& from,
               std::uint64_t now_us);
  void on_dtls(std::span<const std::uint8_t> data, const net::SocketAddress& from);
  /// Posts one step of a peer's association to the handshake thread.
  void run_dtls(Peer& peer, std::function<void(webrtc::DtlsTransport&)> step);
  /// On the loop: sends a step's records and applies its outcome, if the peer is still there.
  void after_dtls(const std::string& session, const Association& assoc, const DtlsStep& step);

  net::EventLoop& loop_;
  WhepPeerListener& listener_;
  ServerStats& stats_;
  net::UdpEndpoint* socket_ = nullptr;
  /// One per worker: every association of the worker shares its OpenSSL context.
  std::shared_ptr<const webrtc::DtlsContext> context_;
  std::map<std::string, std::unique_ptr<Peer>> peers_;           // by session id
  std::unordered_map<std::string, std::string> by_ufrag_;        // our ufrag -> session id
  std::unordered_map<net::SocketAddress, std::string> by_addr_;  // verified address -> session
  std::vector<std::string> failed_;
  /// Last: destroyed first, so that no completion runs into members already gone.
  std::unique_ptr<net::OffloadThread> handshakes_;
};

}  // namespace predrop::server::detail

#pragma once
// One scripted WHEP viewer (docs/webrtc.md), what a browser does on the wire and nothing it
// renders: POST an SDP offer shaped like Chromium's (VP8, H.264, VP9, RTX, NACK/PLI, the
// transport-wide sequence number with transport-cc feedback) to /<stream>/whep, read the answer,
// send STUN Binding requests with USE-CANDIDATE (and later consent checks every 5 s) to the
// candidate, run the DTLS client handshake, then receive SRTP (every N-th packet authenticated
// and decrypted) and send transport-cc feedback (SRTCP) about every packet that carried the
// transport-wide number, every `feedback_interval_us`. DELETE on the Location ends it.
//
// The protocol pieces are the server's own: webrtc::StunWriter / parse_stun, webrtc::
// DtlsTransport (client role), webrtc::classify_packet, wire::write_transport_cc,
// net::SrtpSession. Used by `predrop-load whep` (the WebRTC rows of bench/perf/README.md) and by
// the `whep_load_session` test.
//
// Time: the feedback, the timers and the arrivals read the injected net::Clock; the owner calls
// poll() every few ms. Threading: loop thread. Lifetime: the owner destroys a client only
// outside its callbacks.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/webrtc/dtls_certificate.hpp"

namespace predrop::load {

/// Settings of one WHEP client.
struct WhepClientConfig {
  net::SocketAddress http;  ///< The server's HTTP listener (server.metrics_listen).
  std::string stream;       ///< The stream's name: POST /<stream>/whep.
  /// The client's DTLS certificate (one per process is enough: only its fingerprint is checked).
  std::shared_ptr<const webrtc::DtlsCertificate> certificate;
  std::uint64_t feedback_interval_us = 50'000;  ///< Chromium sends one every 50-100 ms.
  std::uint32_t srtp_verify_every = 16;         ///< Authenticate/decrypt every N-th packet.
  double request_timeout_s = 10.0;              ///< For the POST, ICE and DTLS.
  double end_after_idle_s = 5.0;                ///< The stream is over after this long silent.
};

/// Counters of one client.
struct WhepClientStats {
  std::uint64_t packets = 0;  ///< SRTP datagrams received.
  std::uint64_t bytes = 0;
  std::uint64_t rtcp = 0;  ///< SRTCP datagrams received (SRs).
  std::uint64_t srtp_verified = 0;
  std::uint64_t srtp_failures = 0;
  std::uint64_t transport_numbered = 0;  ///< Packets with a transport-wide sequence number.
  std::uint64_t feedback_sent = 0;       ///< transport-cc messages sent.
  std::uint64_t stun_sent = 0;
  std::uint64_t connect_us = 0;  ///< From the POST to DTLS connected.
};

/// One scripted WHEP viewer.
class WhepClient {
 public:
  /// Upward events; each runs on the loop thread, none may destroy the client.
  struct Events {
    std::function<void(WhepClient&)> on_playing;  ///< DTLS connected: SRTP flows.
    /// Failed ("POST", "ICE", "DTLS", "timeout", "stream end" and a detail); then it is inert.
    std::function<void(WhepClient&, const std::string& what, const std::string& detail)> on_failed;
    std::function<void(WhepClient&)> on_left;  ///< leave() finished.
  };
  /// `clock` must outlive the client.
  WhepClient(net::EventLoop& loop, const net::Clock& clock, WhepClientConfig config, Events events);
  ~WhepClient();
  WhepClient(const WhepClient&) = delete;
  WhepClient& operator=(const WhepClient&) = delete;
  WhepClient(WhepClient&&) = delete;
  WhepClient& operator=(WhepClient&&) = delete;

  /// Opens the UDP socket and POSTs the offer.
  void start();
  /// DELETE on the session, then closes everything and reports on_left.
  void leave();
  /// Closes everything now, silently.
  void abort();
  /// Retransmits STUN/DTLS, sends due feedback and consent checks, notices the end.
  void poll(std::uint64_t now_us);
  /// DTLS connected and not yet left or failed.
  bool playing() const;
  /// The Location the server gave (empty before the answer).
  const std::string& location() const;
  const WhepClientStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Chromium-shaped recvonly video offer (what WhepClient POSTs), with `ufrag`, `pwd` and our
/// certificate's `fingerprint`; transport-cc under extension id 3.
std::string make_whep_offer(const std::string& ufrag, const std::string& pwd,
                            const std::string& fingerprint);

}  // namespace predrop::load

#pragma once
// The WHEP sessions of one worker (docs/webrtc.md), the facade's WebRTC glue moved out of
// stream_server.cpp (as publish routing went to publish_routes.hpp): an offer's admission, entry
// and answer (whep_offer.hpp) with its peer's ICE-lite and DTLS (whep_peers.hpp), the start of
// its media when DTLS is up (to the address ICE selected, with the DTLS-SRTP keys), its signs of
// life, and its end: DELETE (with an RTCP BYE), a failed handshake, consent lost. The sessions
// stay the facade's: this unit finds them in the table and asks the facade, through WhepHost,
// to add, start or remove one.
//
// Threading: the server's loop thread. Errors: an offer's outcome carries its status; nothing
// throws per datagram.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/server/server_options.hpp"
#include "predrop/server/whep_outcome.hpp"
#include "session_table.hpp"
#include "whep_peers.hpp"

namespace predrop::server::detail {

/// What the WHEP sessions ask of the facade, which owns the sessions and their start.
class WhepHost {
 public:
  virtual ~WhepHost() = default;
  /// Adds a prepared entry to the session table; returns it.
  virtual SessionEntry& add_session(std::unique_ptr<SessionEntry> entry) = 0;
  /// Starts the entry's media at `now_us`; false if it cannot start.
  virtual bool start_session(SessionEntry& entry, std::uint64_t now_us) = 0;
  /// Removes a session (and with it its peer, through forget()).
  virtual void remove_session(const std::string& id) = 0;
};

/// The WHEP sessions of one worker.
class WhepSessions final : public WhepPeerListener {
 public:
  /// Everything given must outlive this object.
  WhepSessions(net::EventLoop& loop, const net::Clock& clock, const StreamServerOptions& options,
               SessionTable& sessions, ServerStats& stats, WhepHost& host);

  /// Makes the worker's DTLS certificate; STUN and DTLS go out on `rtp` (WHEP is off, with a
  /// warning, when that fails).
  void start(net::UdpEndpoint& rtp);
  /// Drops every peer (the server stops).
  void stop();

  /// A browser's offer for `stream` from `peer`, which reached us at `candidate_ip`.
  WhepOutcome offer(std::string_view stream, std::string_view offer, const net::SocketAddress& peer,
                    std::string_view candidate_ip);
  /// DELETE of the session: BYE to the browser, then removed. False if it is no WHEP session.
  bool end(const std::string& id);
  /// The player page's report for session `id`: to its StreamSession (counted in /metrics).
  /// False if it is no WHEP session.
  bool quality(const std::string& id, const PageQuality& report);

  /// A datagram on the RTP port that is STUN or DTLS (true: consumed, counted or not).
  bool on_datagram(std::span<const std::uint8_t> data, const net::SocketAddress& from) {
    return peers_.on_datagram(data, from, clock_.now_us());
  }
  /// True if a datagram from `from` on the RTP port is a WHEP browser's SRTCP (rtcp-mux).
  bool is_peer_rtcp(const net::SocketAddress& from) const {
    return peers_.size() != 0 && sessions_.by_address(from) != nullptr;
  }
  /// The facade removed `entry`: its peer goes too.
  void forget(const SessionEntry& entry) {
    if (entry.webrtc) peers_.remove(entry.id);
  }
  /// Ends the sessions whose DTLS failed or whose browser's consent lapsed, at `now_us`.
  void housekeeping(std::uint64_t now_us);

  // WhepPeerListener
  void on_peer_connected(const std::string& id, const net::SocketAddress& to,
                         const webrtc::DtlsSrtpKeys& keys) override;
  void on_peer_alive(const std::string& id) override;

 private:
  const net::Clock& clock_;
  const StreamServerOptions& options_;
  SessionTable& sessions_;
  ServerStats& stats_;
  WhepHost& host_;
  WhepPeers peers_;
  net::UdpEndpoint* rtp_ = nullptr;
};

}  // namespace predrop::server::detail

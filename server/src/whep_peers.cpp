// ICE-lite and DTLS of the WHEP sessions of one worker; see whep_peers.hpp.
#include "whep_peers.hpp"

#include <array>
#include <utility>

#include "predrop/webrtc/demux.hpp"
#include "predrop/webrtc/stun.hpp"

namespace predrop::server::detail {

struct WhepPeers::Peer {
  Peer(std::string id, webrtc::IceCredentials local, std::string remote_ufrag)
      : session(std::move(id)), ice(std::move(local), std::move(remote_ufrag)) {}
  std::string session;
  webrtc::IceLiteAgent ice;
  std::unique_ptr<webrtc::DtlsTransport> dtls;
  std::unique_ptr<net::Timer> timer;
  net::SocketAddress dtls_peer;  // where DTLS records go: the address the handshake came from
  bool connected = false;
  bool failed = false;
};

WhepPeers::WhepPeers(net::EventLoop& loop, WhepPeerListener& listener, ServerStats& stats)
    : loop_(loop), listener_(listener), stats_(stats) {}

WhepPeers::~WhepPeers() = default;

core::Status WhepPeers::start(net::UdpEndpoint& socket) {
  auto cert = webrtc::DtlsCertificate::generate();
  if (!cert) return cert.error();
  auto context = webrtc::DtlsContext::create(std::move(cert.value()));
  if (!context) return context.error();
  context_ = std::move(context.value());
  socket_ = &socket;
  return core::Ok{};
}

void WhepPeers::stop() {
  peers_.clear();
  by_ufrag_.clear();
  by_addr_.clear();
  socket_ = nullptr;
}

const std::string& WhepPeers::fingerprint() const {
  static const std::string none;
  return context_ ? context_->certificate().fingerprint_sha256() : none;
}

core::Status WhepPeers::add(const std::string& session, webrtc::IceCredentials local,
                            std::string remote_ufrag, std::string remote_fingerprint) {
  if (!context_) return core::make_error("WebRTC is not started on this worker");
  const std::string ufrag = local.ufrag;
  auto peer = std::make_unique<Peer>(session, std::move(local), std::move(remote_ufrag));
  Peer* p = peer.get();
  auto dtls = webrtc::DtlsTransport::create(context_, webrtc::DtlsRole::Server,
                                            std::move(remote_fingerprint),
                                            [this, p](std::span<const std::uint8_t> d) {
                                              if (socket_ != nullptr) {
                                                (void)socket_->send(d, p->dtls_peer);
                                              }
                                            });
  if (!dtls) return dtls.error();
  p->dtls = std::move(dtls.value());
  p->timer = std::make_unique<net::Timer>(loop_, [this, p] {
    p->dtls->on_timer();
    after_dtls(*p);
  });
  by_ufrag_[ufrag] = session;
  peers_[session] = std::move(peer);
  return core::Ok{};
}

void WhepPeers::remove(const std::string& session) {
  auto it = peers_.find(session);
  if (it == peers_.end()) return;
  by_ufrag_.erase(it->second->ice.local().ufrag);
  std::erase_if(by_addr_, [&](const auto& kv) { return kv.second == session; });
  peers_.erase(it);
}

bool WhepPeers::on_datagram(std::span<const std::uint8_t> data, const net::SocketAddress& from,
                            std::uint64_t now_us) {
  if (!context_) return false;
  switch (webrtc::classify_packet(data)) {
    case webrtc::PacketKind::Stun:
      on_stun(data, from, now_us);
      return true;
    case webrtc::PacketKind::Dtls:
      on_dtls(data, from);
      return true;
    default:
      return false;
  }
}

void WhepPeers::on_stun(std::span<const std::uint8_t> data, const net::SocketAddress& from,
                        std::uint64_t now_us) {
  ++stats_.webrtc_stun_requests;
  const auto msg = webrtc::parse_stun(data);
  const std::string_view user = msg ? msg->username : std::string_view{};
  const auto it = by_ufrag_.find(std::string(user.substr(0, user.find(':'))));
  if (it == by_ufrag_.end()) {
    ++stats_.webrtc_stun_refused;  // malformed, or names no session of this worker
    return;
  }
  Peer& p = *peers_.at(it->second);
  std::array<std::uint8_t, 512> response{};
  std::size_t n = 0;
  if (p.ice.on_stun(now_us, from, data, response, n) != webrtc::IceVerdict::Respond) {
    ++stats_.webrtc_stun_refused;  // forged (bad integrity), another ufrag pair, not a request
    return;
  }
  (void)socket_->send(std::span<const std::uint8_t>(response.data(), n), from);
  by_addr_[from] = p.session;
  listener_.on_peer_alive(p.session);
}

void WhepPeers::on_dtls(std::span<const std::uint8_t> data, const net::SocketAddress& from) {
  const auto it = by_addr_.find(from);
  Peer* p = nullptr;
  if (it != by_addr_.end()) {
    const auto pit = peers_.find(it->second);
    if (pit != peers_.end() && pit->second->ice.is_verified(from)) p = pit->second.get();
  }
  if (p == nullptr) {
    ++stats_.webrtc_dtls_strangers;  // no valid ICE check came from there: not a peer of ours
    return;
  }
  p->dtls_peer = from;
  p->dtls->on_datagram(data);
  after_dtls(*p);
}

void WhepPeers::after_dtls(Peer& p) {
  if (const auto wait = p.dtls->retransmit_in_us()) {
    p.timer->start_from_now((*wait + 999) / 1000);
  } else {
    p.timer->stop();
  }
  if (p.dtls->state() == webrtc::DtlsState::Connected && !p.connected) {
    p.connected = true;
    ++stats_.webrtc_dtls_connected;
    const net::SocketAddress to = p.ice.selected().value_or(p.dtls_peer);
    listener_.on_peer_connected(p.session, to, *p.dtls->keys());
  } else if (p.dtls->state() == webrtc::DtlsState::Failed && !p.failed) {
    p.failed = true;
    ++stats_.webrtc_dtls_failed;
    failed_.push_back(p.session);
  }
}

std::vector<std::string> WhepPeers::consent_expired(std::uint64_t now_us) const {
  std::vector<std::string> out;
  for (const auto& [id, p] : peers_) {
    if (p->ice.consent_expired(now_us)) out.push_back(id);
  }
  return out;
}

}  // namespace predrop::server::detail

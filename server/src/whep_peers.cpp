// ICE-lite and DTLS of the WHEP sessions of one worker; see whep_peers.hpp.
#include "whep_peers.hpp"

#include <array>
#include <exception>
#include <optional>
#include <utility>

#include "predrop/webrtc/demux.hpp"
#include "predrop/webrtc/stun.hpp"

namespace predrop::server::detail {

// A session's DTLS association. From its creation on, only the handshake thread touches `dtls`
// and `records` (its jobs run one at a time, in order); the loop keeps the association alive
// and reads what each job reports back (DtlsStep).
struct WhepPeers::Association {
  std::unique_ptr<webrtc::DtlsTransport> dtls;
  std::vector<std::vector<std::uint8_t>> records;  // what dtls sent during the running job
  std::size_t queued = 0;                          // jobs posted, not completed (loop thread)
};

// What one DTLS job leaves for the loop: the records to send and where the association stands.
struct WhepPeers::DtlsStep {
  std::vector<std::vector<std::uint8_t>> records;
  webrtc::DtlsState state = webrtc::DtlsState::Handshaking;
  std::optional<webrtc::DtlsSrtpKeys> keys;
  std::optional<std::uint64_t> retransmit_in_us;
};

struct WhepPeers::Peer {
  Peer(std::string id, webrtc::IceCredentials local, std::string remote_ufrag)
      : session(std::move(id)), ice(std::move(local), std::move(remote_ufrag)) {}
  std::string session;
  webrtc::IceLiteAgent ice;
  std::shared_ptr<Association> dtls;  // shared with the jobs in flight, which may outlive us
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
  try {
    handshakes_ = std::make_unique<net::OffloadThread>(
        loop_, net::OffloadThread::Options{
                   .max_pending = kMaxQueuedDtls, .nice = kHandshakeNice, .name = "predrop-dtls"});
  } catch (const std::exception& e) {
    return core::make_error(std::string("cannot start the DTLS handshake thread: ") + e.what());
  }
  context_ = std::move(context.value());
  socket_ = &socket;
  return core::Ok{};
}

void WhepPeers::stop() {
  handshakes_.reset();  // waits for a running job; queued ones are dropped
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
  auto assoc = std::make_shared<Association>();
  // The send function runs on the handshake thread: it only keeps the record for the loop.
  auto dtls = webrtc::DtlsTransport::create(context_, webrtc::DtlsRole::Server,
                                            std::move(remote_fingerprint),
                                            [a = assoc.get()](std::span<const std::uint8_t> d) {
                                              a->records.emplace_back(d.begin(), d.end());
                                            });
  if (!dtls) return dtls.error();
  assoc->dtls = std::move(dtls.value());
  peer->dtls = std::move(assoc);
  Peer* p = peer.get();
  p->timer = std::make_unique<net::Timer>(loop_, [this, p] {
    run_dtls(*p, [](webrtc::DtlsTransport& transport) { transport.on_timer(); });
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
  run_dtls(*p, [datagram = std::vector<std::uint8_t>(data.begin(), data.end())](
                   webrtc::DtlsTransport& transport) { transport.on_datagram(datagram); });
}

void WhepPeers::run_dtls(Peer& p, std::function<void(webrtc::DtlsTransport&)> step) {
  std::shared_ptr<Association> assoc = p.dtls;
  // One peer cannot take the whole queue from the others (a verified address that floods).
  if (!handshakes_ || assoc->queued >= kMaxQueuedDtlsPerPeer) {
    ++stats_.webrtc_dtls_queue_full;  // the jobs it has out will re-arm its timer
    return;
  }
  const bool posted =
      handshakes_->post([this, assoc, session = p.session,
                         step = std::move(step)]() -> net::OffloadThread::Completion {
        // The handshake thread: OpenSSL's work, then a snapshot for the loop.
        step(*assoc->dtls);
        DtlsStep out{std::exchange(assoc->records, {}), assoc->dtls->state(), assoc->dtls->keys(),
                     assoc->dtls->retransmit_in_us()};
        return [this, assoc, session, out = std::move(out)] {
          --assoc->queued;
          after_dtls(session, *assoc, out);
        };
      });
  if (posted) {
    ++assoc->queued;
    return;
  }
  ++stats_.webrtc_dtls_queue_full;  // the peer's retransmission will bring it again
  // With nothing of this peer's out, no completion will re-arm its retransmission timer; a
  // refused tick would otherwise leave our own flight unsent until the peer speaks again.
  if (assoc->queued == 0) p.timer->start_from_now(kRetryRefusedDtlsMs);
}

void WhepPeers::after_dtls(const std::string& session, const Association& assoc,
                           const DtlsStep& step) {
  const auto it = peers_.find(session);
  if (it == peers_.end() || it->second->dtls.get() != &assoc) return;  // removed meanwhile
  Peer& p = *it->second;
  if (socket_ != nullptr) {
    for (const auto& record : step.records) {
      (void)socket_->send(record, p.dtls_peer);
    }
  }
  if (step.retransmit_in_us) {
    p.timer->start_from_now((*step.retransmit_in_us + 999) / 1000);
  } else {
    p.timer->stop();
  }
  if (step.state == webrtc::DtlsState::Connected && !p.connected && step.keys) {
    p.connected = true;
    ++stats_.webrtc_dtls_connected;
    const net::SocketAddress to = p.ice.selected().value_or(p.dtls_peer);
    listener_.on_peer_connected(p.session, to, *step.keys);
  } else if (step.state == webrtc::DtlsState::Failed && !p.failed) {
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

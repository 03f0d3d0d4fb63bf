// The WHEP sessions of one worker; see whep_sessions.hpp.
#include "whep_sessions.hpp"

#include <utility>

#include "predrop/core/log.hpp"
#include "whep_offer.hpp"

namespace predrop::server::detail {

WhepSessions::WhepSessions(net::EventLoop& loop, const net::Clock& clock,
                           const StreamServerOptions& options, SessionTable& sessions,
                           ServerStats& stats, WhepHost& host)
    : clock_(clock),
      options_(options),
      sessions_(sessions),
      stats_(stats),
      host_(host),
      peers_(loop, *this, stats) {}

void WhepSessions::start(net::UdpEndpoint& rtp) {
  rtp_ = &rtp;
  if (auto st = peers_.start(rtp); !st) {
    core::log(core::LogLevel::kWarn, "server", "WHEP off: %s", st.error().message.c_str());
  }
}

void WhepSessions::stop() {
  peers_.stop();
  rtp_ = nullptr;
}

WhepOutcome WhepSessions::offer(std::string_view stream, std::string_view offer,
                                const net::SocketAddress& peer, std::string_view candidate_ip) {
  if (!peers_.started() || rtp_ == nullptr) {
    ++stats_.webrtc_offers_refused;
    return WhepOutcome{503, {}, {}, "WebRTC is not available on this server"};
  }
  const WhepEndpoint endpoint{options_.bind_ip, std::string(candidate_ip),
                              rtp_->local_address().port(), peers_.fingerprint()};
  WhepSetup s = prepare_whep_session(options_, sessions_, stream, offer, peer, endpoint);
  if (!s.entry) {
    ++stats_.webrtc_offers_refused;
    if (s.outcome.status == 503) ++stats_.sessions_refused;
    return s.outcome;
  }
  SessionEntry& e = host_.add_session(std::move(s.entry));
  e.setup_us = e.last_request_us = clock_.now_us();
  if (auto st = peers_.add(e.id, std::move(s.local), s.remote_ufrag, s.remote_fingerprint); !st) {
    host_.remove_session(s.outcome.session);
    ++stats_.webrtc_offers_refused;
    return WhepOutcome{500, {}, {}, st.error().message};
  }
  ++stats_.webrtc_offers;
  ++stats_.sessions_created;
  return s.outcome;
}

bool WhepSessions::end(const std::string& id) {
  const SessionEntry* e = sessions_.find(id);
  if (e == nullptr || !e->webrtc) return false;
  if (e->session && !e->session->said_bye()) {
    stats_.rtcp_byes_sent += e->session->send_bye(clock_.now_us());
  }
  host_.remove_session(id);
  return true;
}

bool WhepSessions::quality(const std::string& id, const PageQuality& report) {
  SessionEntry* e = sessions_.find(id);
  if (e == nullptr || !e->webrtc) return false;
  ++stats_.webrtc_page_reports;
  if (e->session) {
    stats_.webrtc_page_quality_blocks += e->session->note_page_quality(report, clock_.now_us());
  }
  return true;
}

void WhepSessions::housekeeping(std::uint64_t now_us) {
  for (const std::string& id : peers_.take_failed()) {
    host_.remove_session(id);
  }
  for (const std::string& id : peers_.consent_expired(now_us)) {
    ++stats_.webrtc_consent_lost;
    host_.remove_session(id);
  }
}

void WhepSessions::on_peer_connected(const std::string& id, const net::SocketAddress& to,
                                     const webrtc::DtlsSrtpKeys& keys) {
  SessionEntry* e = sessions_.find(id);
  if (e == nullptr || e->session || e->tracks.empty()) return;
  // Every track (video, and Opus audio when answered) on the one BUNDLE transport. The
  // browser's SRTCP key is one for the transport: given once (one libsrtp context opens all).
  for (SessionTrack& t : e->tracks) {
    t.rtp_destination = to;
    t.rtcp_destination = to;
  }
  e->tracks.front().client_suite = keys.suite;
  e->tracks.front().client_key = keys.remote;
  e->key = keys.local;
  if (!host_.start_session(*e, clock_.now_us())) host_.remove_session(id);
}

void WhepSessions::on_peer_alive(const std::string& id) {
  if (SessionEntry* e = sessions_.find(id)) e->last_request_us = clock_.now_us();
}

}  // namespace predrop::server::detail

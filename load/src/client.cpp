#include "predrop/load/client.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "predrop/chain/feedback.hpp"
#include "predrop/chain/stage_receiver.hpp"
#include "predrop/core/byte_io.hpp"
#include "predrop/load/verify_sampler.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/rtsp/client_session.hpp"
#include "predrop/wire/rtcp.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::load {

double loss_quality_db(double loss, double cap_db, double concealed_db) {
  const double l = std::clamp(loss, 0.0, 1.0);
  return -10.0 *
         std::log10(std::pow(10.0, -cap_db / 10.0) + l * std::pow(10.0, -concealed_db / 10.0));
}

namespace {

// Our sockets of one track (the session holds what was negotiated, at the same index).
struct Track {
  std::unique_ptr<net::UdpEndpoint> rtp;
  std::unique_ptr<net::UdpEndpoint> rtcp;
};

enum class State { kIdle, kSettingUp, kPlaying, kLeaving, kDone };

}  // namespace

struct LightClient::Impl {
  net::EventLoop& loop;
  const net::Clock& clock;
  LightClientConfig config;
  Events events;
  State state = State::kIdle;
  std::unique_ptr<rtsp::ClientSession> rtsp_session;
  std::vector<Track> tracks;  // the tracks set up, in SETUP order
  std::size_t feedback_track = 0;
  std::optional<wire::SrtpSuite> suite;
  wire::SrtpKeyMaterial key;
  wire::RtpExtensionIds ext_ids{0, 0};
  std::unique_ptr<chain::StageReceiver> receiver;
  std::optional<net::SrtpSession> verify;  // sampled verification (srtp_verify_every > 1)
  std::optional<net::SrtpSession> feedback_out;
  // Reads the server's sender reports until one names the session (server_number()), then no
  // more: one unprotect per SR while unknown, none after.
  std::optional<net::SrtpSession> sr_in;
  std::vector<std::uint8_t> sr_buf;
  std::string server_number;
  std::vector<std::uint8_t> verify_buf;
  VerifySampler sampler{config.group.srtp_verify_every};
  std::uint32_t reporter_ssrc = 0;
  std::uint64_t last_media_us = 0;
  std::string session;
  LightClientStats stats;

  Impl(net::EventLoop& l, const net::Clock& k, LightClientConfig c, Events e)
      : loop(l), clock(k), config(std::move(c)), events(std::move(e)) {}

  void close_all() {
    for (auto& t : tracks) {
      if (t.rtp) t.rtp->close();
      if (t.rtcp) t.rtcp->close();
    }
    if (rtsp_session) rtsp_session->close();
  }

  void fail(int status, std::string what, std::string detail = {}) {
    if (state == State::kDone) return;
    state = State::kDone;
    close_all();
    if (events.on_failed) {
      events.on_failed(*owner, LightFailure{status, std::move(what), std::move(detail)});
    }
  }

  LightClient* owner = nullptr;

  void start() {
    state = State::kSettingUp;
    rtsp::ClientSessionOptions so;
    so.url = config.url;
    so.server = config.server;
    so.feedback = config.group.feedback;
    so.request_timeout_ms = static_cast<std::uint64_t>(config.request_timeout_s * 1000);
    rtsp::ClientSession::Handlers h;
    h.on_described =
        [this](const rtsp::SessionDescription& d) -> core::Result<std::vector<std::size_t>> {
      std::vector<std::size_t> chosen;
      for (const auto& t : d.tracks) {
        if (config.group.video_only && (t.media.kind != "video" || !chosen.empty())) continue;
        chosen.push_back(t.index);
      }
      if (auto st = prepare(d, chosen); !st) return st.error();
      return chosen;
    };
    h.client_ports = [this](const rtsp::SessionTrack&) { return open_ports(); };
    h.on_playing = [this] { on_playing(); };
    h.on_failed = [this](const rtsp::SessionError& e) {
      if (e.step == rtsp::SessionStep::kTimeout) return fail(0, "timeout", "no RTSP response");
      fail(e.status, std::string(e.what()), e.detail);
    };
    rtsp_session = std::make_unique<rtsp::ClientSession>(loop, so, std::move(h));
    rtsp_session->start();
  }

  core::Status prepare(const rtsp::SessionDescription& d, const std::vector<std::size_t>& chosen) {
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      const rtsp::SessionTrack& t = d.tracks[chosen[i]];
      if (t.key) {
        suite = t.key->suite;
        key = t.key->key;
      }
      if (t.extensions.stage != 0) ext_ids.stage = t.extensions.stage;
      if (t.extensions.abs_send_time != 0) ext_ids.abs_send_time = t.extensions.abs_send_time;
      if (t.media.kind == "video") feedback_track = i;
    }
    if (chosen.empty()) return core::make_error("no track to set up");
    if (ext_ids.stage == 0) return core::make_error("no urn:predrop:stage extension");
    chain::ReceiverConfig rc;
    rc.extension_ids = ext_ids;
    const bool verify_all = config.group.srtp_verify_every <= 1;
    std::optional<net::SrtpSession> srtp_in;
    if (suite) {
      if (verify_all) {
        srtp_in.emplace(net::SrtpDirection::Inbound, *suite, key);
      } else {
        verify.emplace(net::SrtpDirection::Inbound, *suite, key);
        verify_buf.resize(rc.max_datagram + net::kSrtpMaxTrailer);
      }
      feedback_out.emplace(net::SrtpDirection::Outbound, *suite, key);
      sr_in.emplace(net::SrtpDirection::Inbound, *suite, key);
    }
    receiver = std::make_unique<chain::StageReceiver>(
        rc, std::move(srtp_in), chain::StageReceiver::OnPacket{},
        [this](const core::StageMeasurement& m) { on_stage(m); });
    reporter_ssrc = net::random_u32();
    return core::Ok{};
  }

  void on_datagram(std::span<const std::uint8_t> d) {
    if (state != State::kPlaying && state != State::kSettingUp) return;
    const std::uint64_t at = clock.now_us();
    last_media_us = at;
    ++stats.packets;
    stats.bytes += d.size();
    // Sampled verification: the clear header and stage extension of every packet are accounted
    // below; every N-th packet is also authenticated and decrypted.
    if (verify && !wire::looks_like_rtcp(d) && d.size() >= 12 &&
        d.size() <= verify_buf.size() - net::kSrtpMaxTrailer &&
        sampler.take(core::load_u32_be(d.data() + 8))) {
      std::memcpy(verify_buf.data(), d.data(), d.size());
      const auto r = verify->unprotect_rtp(verify_buf, d.size());
      ++stats.srtp_verified;
      if (!r) ++stats.srtp_failures;
    }
    receiver->on_datagram(d, at);
    if (!verify && suite) {
      // Every packet went through SRTP in the receiver.
      const auto& rs = receiver->stats();
      stats.srtp_verified = rs.delivered + rs.srtp_auth_failed + rs.srtp_replay + rs.srtp_other;
      stats.srtp_failures = rs.srtp_auth_failed + rs.srtp_replay + rs.srtp_other;
    }
  }

  core::Result<rtsp::PortPair> open_ports() {
    net::UdpOptions uo;
    uo.recv_buffer_bytes = 256 << 10;
    uo.recv_batch = 4;  // thousands of sockets: keep each receive slab small
    auto rtp =
        net::UdpEndpoint::open(loop, net::SocketAddress::any_v4(0), uo,
                               [this](std::span<const std::uint8_t> d, const net::SocketAddress&,
                                      std::uint64_t) { on_datagram(d); });
    if (!rtp) return rtp.error();
    // RTCP: sends PDFB; of the server's SRs only the first that names the session is read.
    net::UdpOptions ro;
    ro.recv_buffer_bytes = 4096;
    ro.recv_batch = 1;
    sr_buf.resize(1500 + net::kSrtpMaxTrailer);
    auto rtcp =
        net::UdpEndpoint::open(loop, net::SocketAddress::any_v4(0), ro,
                               [this](std::span<const std::uint8_t> d, const net::SocketAddress&,
                                      std::uint64_t) { on_rtcp(d); });
    if (!rtcp) return rtcp.error();
    Track t;
    t.rtp = std::move(rtp.value());
    t.rtcp = std::move(rtcp.value());
    const rtsp::PortPair ports{t.rtp->local_address().port(), t.rtcp->local_address().port()};
    tracks.push_back(std::move(t));
    return ports;
  }

  void on_rtcp(std::span<const std::uint8_t> d) {
    if (!server_number.empty() || d.size() + net::kSrtpMaxTrailer > sr_buf.size()) return;
    std::memcpy(sr_buf.data(), d.data(), d.size());
    auto c = chain::decode_rtcp(sr_buf, d.size(), sr_in ? &*sr_in : nullptr);
    constexpr std::string_view kPrefix = "predrop-";
    if (!c || !c->sender_report || !c->cname.starts_with(kPrefix)) return;
    server_number = std::string(c->cname.substr(kPrefix.size()));
    if (events.on_numbered) events.on_numbered(*owner);
  }

  void on_playing() {
    state = State::kPlaying;
    session = rtsp_session->session_id();
    last_media_us = clock.now_us();
    if (events.on_playing) events.on_playing(*owner);
  }

  void on_stage(const core::StageMeasurement& m) {
    if (state != State::kPlaying) return;
    LightBlock b;
    b.measurement = m;
    b.loss =
        m.announced > 0 ? 1.0 - std::min(1.0, static_cast<double>(m.received) / m.announced) : 0.0;
    b.quality_db = loss_quality_db(b.loss, config.psnr_cap_db, config.concealed_db);
    ++stats.blocks;
    if (config.group.feedback) {
      const Track& t = tracks[feedback_track];
      const rtsp::SessionTrack& negotiated = rtsp_session->tracks()[feedback_track];
      auto fb = chain::make_feedback(m, b.quality_db, wire::PdfbMetric::kPsnrDb,
                                     negotiated.ssrc.value_or(0));
      std::uint8_t buf[256];
      auto n =
          chain::encode_feedback(buf, reporter_ssrc, fb, feedback_out ? &*feedback_out : nullptr);
      auto to = net::SocketAddress::from_ip(config.server.ip_string(), negotiated.server_port.rtcp);
      if (n && to && t.rtcp->send(std::span<const std::uint8_t>(buf, *n), *to)) {
        b.reported = true;
        b.report_time_us = clock.now_us();
        b.report_delay_us =
            static_cast<double>(b.report_time_us) - static_cast<double>(m.last_arrival_us);
        ++stats.reports;
      }
    }
    if (events.on_block) events.on_block(*owner, b);
  }

  void poll(std::uint64_t now) {
    if (state != State::kPlaying || !receiver) return;
    receiver->poll(now);
    if (now > last_media_us + static_cast<std::uint64_t>(config.end_after_idle_s * 1e6)) {
      receiver->flush();
      fail(0, "stream end", "no media for " + std::to_string(config.end_after_idle_s) + " s");
    }
  }

  void leave() {
    if (state == State::kDone || state == State::kLeaving) return;
    if (state != State::kPlaying || !rtsp_session) {
      state = State::kDone;
      close_all();
      if (events.on_left) events.on_left(*owner);
      return;
    }
    state = State::kLeaving;
    // TEARDOWN; answered, unanswered for the request timeout, or the connection gone: left.
    rtsp_session->teardown([this] {
      if (state != State::kLeaving) return;
      state = State::kDone;
      close_all();
      if (events.on_left) events.on_left(*owner);
    });
  }
};

LightClient::LightClient(net::EventLoop& loop, const net::Clock& clock, LightClientConfig config,
                         Events events)
    : impl_(std::make_unique<Impl>(loop, clock, std::move(config), std::move(events))) {
  impl_->owner = this;
}

LightClient::~LightClient() {
  impl_->state = State::kDone;
  impl_->close_all();
}

void LightClient::start() {
  impl_->start();
}

void LightClient::leave() {
  impl_->leave();
}

void LightClient::abort() {
  impl_->state = State::kDone;
  impl_->close_all();
}

void LightClient::poll(std::uint64_t now_us) {
  impl_->poll(now_us);
}

bool LightClient::playing() const {
  return impl_->state == State::kPlaying;
}

const std::string& LightClient::session_id() const {
  return impl_->session;
}

const std::string& LightClient::server_number() const {
  return impl_->server_number;
}

const LightClientStats& LightClient::stats() const {
  return impl_->stats;
}

const LightClientConfig& LightClient::config() const {
  return impl_->config;
}

}  // namespace predrop::load

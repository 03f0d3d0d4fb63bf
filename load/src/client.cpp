#include "predrop/load/client.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>

#include "predrop/chain/feedback.hpp"
#include "predrop/chain/stage_receiver.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/rtsp/rtsp_client.hpp"
#include "predrop/rtsp/rtsp_headers.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "predrop/wire/rtcp.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::load {

double loss_quality_db(double loss, double cap_db, double concealed_db) {
  const double l = std::clamp(loss, 0.0, 1.0);
  return -10.0 *
         std::log10(std::pow(10.0, -cap_db / 10.0) + l * std::pow(10.0, -concealed_db / 10.0));
}

namespace {

struct Track {
  std::string control_url;
  bool video = false;
  std::unique_ptr<net::UdpEndpoint> rtp;
  std::unique_ptr<net::UdpEndpoint> rtcp;
  std::uint32_t ssrc = 0;
  std::uint16_t server_rtcp_port = 0;
};

enum class State { kIdle, kSettingUp, kPlaying, kLeaving, kDone };

}  // namespace

struct LightClient::Impl {
  net::EventLoop& loop;
  LightClientConfig config;
  Events events;
  State state = State::kIdle;
  std::unique_ptr<rtsp::RtspClient> rtsp;
  std::vector<Track> tracks;
  std::size_t feedback_track = 0;
  std::optional<wire::SrtpSuite> suite;
  wire::SrtpKeyMaterial key;
  wire::RtpExtensionIds ext_ids{0, 0};
  std::unique_ptr<chain::StageReceiver> receiver;
  std::optional<net::SrtpSession> verify;  // sampled verification (srtp_verify_every > 1)
  std::optional<net::SrtpSession> feedback_out;
  std::vector<std::uint8_t> verify_buf;
  std::uint64_t datagrams = 0;
  std::uint32_t reporter_ssrc = 0;
  std::unique_ptr<net::Timer> deadline;  // RTSP request timeout
  std::unique_ptr<net::Timer> keepalive;
  std::size_t in_flight = 0;
  std::uint64_t last_media_us = 0;
  std::string session;
  LightClientStats stats;

  Impl(net::EventLoop& l, LightClientConfig c, Events e)
      : loop(l), config(std::move(c)), events(std::move(e)) {}

  void close_all() {
    deadline.reset();
    keepalive.reset();
    for (auto& t : tracks) {
      if (t.rtp) t.rtp->close();
      if (t.rtcp) t.rtcp->close();
    }
    if (rtsp) rtsp->close();
  }

  void fail(int status, std::string what, std::string detail = {}) {
    if (state == State::kDone) return;
    state = State::kDone;
    close_all();
    if (events.on_failed)
      events.on_failed(*owner, LightFailure{status, std::move(what), std::move(detail)});
  }

  LightClient* owner = nullptr;

  // Sends a request with the client's timeout; `then` gets only successful responses.
  void request(rtsp::RtspMethod m, const std::string& url, rtsp::RtspHeaders h, const char* what,
               std::function<void(const rtsp::RtspResponse&)> then) {
    ++in_flight;
    deadline->start(static_cast<std::uint64_t>(config.request_timeout_s * 1000));
    rtsp->send(m, url, std::move(h), [this, what, then = std::move(then)](auto r) {
      if (in_flight > 0) --in_flight;
      if (in_flight == 0 && deadline) deadline->stop();
      if (state == State::kDone) return;
      if (!r) return fail(0, what, r.error().message);
      if (r->status != 200) return fail(r->status, what, r->reason);
      then(*r);
    });
  }

  void start() {
    state = State::kSettingUp;
    deadline = std::make_unique<net::Timer>(loop, [this] {
      if (in_flight == 0) return;
      if (state == State::kLeaving) return finish_leave();  // no answer to TEARDOWN: just go
      fail(0, "timeout", "no RTSP response");
    });
    auto c = rtsp::RtspClient::connect(
        loop, config.server,
        [this](const core::Status& st) {
          if (!st) return fail(0, "connect", st.error().message);
          describe();
        },
        [this](const core::Status& why) {
          if (state == State::kLeaving) return finish_leave();
          fail(0, "closed", why ? "by the server" : why.error().message);
        });
    if (!c) return fail(0, "connect", c.error().message);
    rtsp = std::move(c.value());
    deadline->start(static_cast<std::uint64_t>(config.request_timeout_s * 1000));
    ++in_flight;  // the connect itself
  }

  void describe() {
    if (in_flight > 0) --in_flight;
    rtsp::RtspHeaders h;
    h.set("Accept", "application/sdp");
    request(rtsp::RtspMethod::kDescribe, config.url, h, "DESCRIBE",
            [this](const rtsp::RtspResponse& r) {
              const std::string base(r.headers.get("Content-Base").value_or(config.url));
              auto sdp = rtsp::parse_sdp(r.body);
              if (!sdp) return fail(0, "DESCRIBE", "SDP: " + sdp.error().message);
              if (auto st = prepare(*sdp, base); !st)
                return fail(0, "DESCRIBE", st.error().message);
              setup(0);
            });
  }

  core::Status prepare(const rtsp::SdpSession& sdp, const std::string& base) {
    for (const auto& m : sdp.media) {
      if (config.group.video_only && m.kind != "video") continue;
      if (config.group.video_only && !tracks.empty()) continue;
      Track t;
      t.control_url = rtsp::resolve_control_url(base, m.control);
      t.video = m.kind == "video";
      if (!m.crypto.empty()) {
        auto s = wire::suite_from_name(m.crypto[0].suite);
        if (!s) return core::make_error("unsupported SRTP suite " + m.crypto[0].suite);
        std::uint8_t buf[64];
        auto n = wire::base64_decode(m.crypto[0].inline_key(), buf);
        if (!n || *n != wire::key_salt_size(*s)) return core::make_error("bad a=crypto key");
        std::copy(buf, buf + *n, key.bytes.begin());
        key.size = *n;
        suite = s;
      }
      for (const auto& e : m.extmaps) {
        if (e.uri == wire::kStageExtensionUri) ext_ids.stage = static_cast<std::uint8_t>(e.id);
        if (e.uri == wire::kAbsSendTimeUri) ext_ids.abs_send_time = static_cast<std::uint8_t>(e.id);
      }
      if (t.video) feedback_track = tracks.size();
      tracks.push_back(std::move(t));
    }
    if (tracks.empty()) return core::make_error("no track to set up");
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
    }
    receiver = std::make_unique<chain::StageReceiver>(
        rc, std::move(srtp_in), chain::StageReceiver::OnPacket{},
        [this](const core::StageMeasurement& m) { on_stage(m); });
    reporter_ssrc = static_cast<std::uint32_t>(std::random_device{}());
    return core::Ok{};
  }

  void on_datagram(std::span<const std::uint8_t> d, std::uint64_t at) {
    if (state != State::kPlaying && state != State::kSettingUp) return;
    last_media_us = at;
    ++stats.packets;
    stats.bytes += d.size();
    // Sampled verification: the clear header and stage extension of every packet are accounted
    // below; every N-th packet is also authenticated and decrypted.
    if (verify && !wire::looks_like_rtcp(d) &&
        d.size() <= verify_buf.size() - net::kSrtpMaxTrailer &&
        datagrams++ % config.group.srtp_verify_every == 0) {
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

  core::Status open_ports(Track& t) {
    net::UdpOptions uo;
    uo.recv_buffer_bytes = 256 << 10;
    uo.recv_batch = 4;  // thousands of sockets: keep each receive slab small
    auto rtp =
        net::UdpEndpoint::open(loop, net::SocketAddress::any_v4(0), uo,
                               [this](std::span<const std::uint8_t> d, const net::SocketAddress&,
                                      std::uint64_t at) { on_datagram(d, at); });
    if (!rtp) return rtp.error();
    // RTCP: only sends (PDFB); the server's SRs are left unread in a small queue.
    net::UdpOptions ro;
    ro.recv_buffer_bytes = 4096;
    auto rtcp = net::UdpEndpoint::open(loop, net::SocketAddress::any_v4(0), ro, {});
    if (!rtcp) return rtcp.error();
    t.rtp = std::move(rtp.value());
    t.rtcp = std::move(rtcp.value());
    return core::Ok{};
  }

  void setup(std::size_t i) {
    if (i == tracks.size()) return play();
    Track& t = tracks[i];
    if (auto st = open_ports(t); !st) return fail(0, "SETUP", "ports: " + st.error().message);
    rtsp::TransportSpec spec;
    spec.protocol = suite ? "RTP/SAVP" : "RTP/AVP";
    spec.client_port =
        rtsp::PortPair{t.rtp->local_address().port(), t.rtcp->local_address().port()};
    rtsp::RtspHeaders h;
    h.set("Transport", rtsp::format_transport(spec));
    if (config.group.feedback) h.set("X-Predrop-Feedback", "1");
    request(rtsp::RtspMethod::kSetup, t.control_url, h, "SETUP",
            [this, i](const rtsp::RtspResponse& r) {
              auto tr = r.headers.get("Transport");
              auto specs = tr ? rtsp::parse_transport(*tr)
                              : core::Result<std::vector<rtsp::TransportSpec>>(
                                    core::make_error("no Transport"));
              if (!specs || specs->empty() || !(*specs)[0].server_port) {
                return fail(0, "SETUP", "reply without server_port");
              }
              tracks[i].server_rtcp_port = (*specs)[0].server_port->rtcp;
              tracks[i].ssrc = (*specs)[0].ssrc.value_or(0);
              setup(i + 1);
            });
  }

  void play() {
    rtsp::RtspHeaders h;
    h.set("Range", "npt=0.000-");
    request(rtsp::RtspMethod::kPlay, config.url, h, "PLAY", [this](const rtsp::RtspResponse&) {
      state = State::kPlaying;
      session = rtsp->session();
      last_media_us = net::EventLoop::now_us();
      const std::uint64_t ka_ms = std::max<std::uint64_t>(5, rtsp->session_timeout_s() / 2) * 1000;
      keepalive = std::make_unique<net::Timer>(loop, [this] {
        if (state == State::kPlaying) {
          request(rtsp::RtspMethod::kGetParameter, config.url, {}, "GET_PARAMETER",
                  [](const rtsp::RtspResponse&) {});
        }
      });
      keepalive->start(ka_ms, ka_ms);
      if (events.on_playing) events.on_playing(*owner);
    });
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
      auto fb = chain::make_feedback(m, b.quality_db, wire::PdfbMetric::kPsnrDb, t.ssrc);
      std::uint8_t buf[256];
      auto n =
          chain::encode_feedback(buf, reporter_ssrc, fb, feedback_out ? &*feedback_out : nullptr);
      auto to = net::SocketAddress::from_ip(config.server.ip_string(), t.server_rtcp_port);
      if (n && to && t.rtcp->send(std::span<const std::uint8_t>(buf, *n), *to)) {
        b.reported = true;
        b.report_time_us = net::EventLoop::now_us();
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
    if (state != State::kPlaying || !rtsp) {
      state = State::kDone;
      close_all();
      if (events.on_left) events.on_left(*owner);
      return;
    }
    state = State::kLeaving;
    keepalive.reset();
    ++in_flight;
    deadline->start(static_cast<std::uint64_t>(config.request_timeout_s * 1000));
    rtsp->send(rtsp::RtspMethod::kTeardown, config.url, {}, [this](auto) { finish_leave(); });
  }

  void finish_leave() {
    if (state != State::kLeaving) return;
    state = State::kDone;
    close_all();
    if (events.on_left) events.on_left(*owner);
  }
};

LightClient::LightClient(net::EventLoop& loop, LightClientConfig config, Events events)
    : impl_(std::make_unique<Impl>(loop, std::move(config), std::move(events))) {
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

const LightClientStats& LightClient::stats() const {
  return impl_->stats;
}

const LightClientConfig& LightClient::config() const {
  return impl_->config;
}

}  // namespace predrop::load

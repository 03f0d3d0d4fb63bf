// One scripted WHEP viewer (predrop/load/whep_client.hpp).
#include "predrop/load/whep_client.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "predrop/core/byte_io.hpp"
#include "predrop/load/verify_sampler.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/tcp.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/webrtc/demux.hpp"
#include "predrop/webrtc/dtls_transport.hpp"
#include "predrop/webrtc/ice_lite.hpp"
#include "predrop/webrtc/stun.hpp"
#include "predrop/wire/rtp.hpp"
#include "predrop/wire/transport_cc.hpp"

namespace predrop::load {

namespace {

constexpr std::uint8_t kTransportCcId = 3;
constexpr std::uint64_t kStunRetransmitUs = 200'000;
// Browsers check consent every few seconds (RFC 7675 §5.1 asks for 5 s on average).
constexpr std::uint64_t kConsentIntervalUs = 5'000'000;
// Packets one transport-cc message reports at most; more go in several messages.
constexpr std::size_t kMaxStatuses = 400;

enum class State { kIdle, kPosting, kChecking, kHandshaking, kPlaying, kLeaving, kDone };

// What the client needs from the server's answer.
struct Answer {
  std::string ufrag;
  std::string pwd;
  std::string fingerprint;
  std::string ip;
  std::uint16_t port = 0;
  std::uint32_t ssrc = 0;
  std::uint8_t transport_cc_id = 0;
};

std::optional<Answer> read_answer(std::string_view sdp) {
  Answer a;
  while (!sdp.empty()) {
    const std::size_t eol = sdp.find('\n');
    std::string_view line = sdp.substr(0, eol);
    sdp = eol == std::string_view::npos ? std::string_view{} : sdp.substr(eol + 1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    auto value = [&](std::string_view key) -> std::optional<std::string_view> {
      if (!line.starts_with(key)) return std::nullopt;
      return line.substr(key.size());
    };
    if (auto ufrag = value("a=ice-ufrag:")) {
      a.ufrag = std::string(*ufrag);
    } else if (auto pwd = value("a=ice-pwd:")) {
      a.pwd = std::string(*pwd);
    } else if (auto fp = value("a=fingerprint:sha-256 ")) {
      a.fingerprint = std::string(*fp);
    } else if (auto cand = value("a=candidate:"); cand && a.port == 0) {
      // foundation component transport priority ip port typ host
      std::array<std::string_view, 6> f{};
      std::string_view rest = *cand;
      for (auto& field : f) {
        const std::size_t sp = rest.find(' ');
        field = rest.substr(0, sp);
        rest = sp == std::string_view::npos ? std::string_view{} : rest.substr(sp + 1);
      }
      a.ip = std::string(f[4]);
      a.port = static_cast<std::uint16_t>(std::strtoul(std::string(f[5]).c_str(), nullptr, 10));
    } else if (auto ssrc = value("a=ssrc:"); ssrc && a.ssrc == 0) {
      a.ssrc = static_cast<std::uint32_t>(std::strtoul(std::string(*ssrc).c_str(), nullptr, 10));
    } else if (auto ext = value("a=extmap:");
               ext && ext->find(wire::kTransportSequenceUri) != std::string_view::npos) {
      a.transport_cc_id =
          static_cast<std::uint8_t>(std::strtoul(std::string(*ext).c_str(), nullptr, 10));
    }
  }
  if (a.ufrag.empty() || a.pwd.empty() || a.fingerprint.empty() || a.port == 0) {
    return std::nullopt;
  }
  return a;
}

}  // namespace

std::string make_whep_offer(const std::string& ufrag, const std::string& pwd,
                            const std::string& fingerprint) {
  // Trimmed from Chromium's createOffer() for a recvonly video transceiver.
  std::string s =
      "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
      "a=group:BUNDLE 0\r\na=msid-semantic: WMS\r\n"
      "m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 98\r\nc=IN IP4 0.0.0.0\r\n"
      "a=rtcp:9 IN IP4 0.0.0.0\r\n";
  s += "a=ice-ufrag:" + ufrag + "\r\na=ice-pwd:" + pwd + "\r\n";
  s += "a=fingerprint:sha-256 " + fingerprint + "\r\n";
  s += "a=setup:actpass\r\na=mid:0\r\n";
  s += "a=extmap:" + std::to_string(kTransportCcId) + " " +
       std::string(wire::kTransportSequenceUri) + "\r\n";
  s += "a=recvonly\r\na=rtcp-mux\r\na=rtcp-rsize\r\n"
       "a=rtpmap:96 VP8/90000\r\na=rtcp-fb:96 transport-cc\r\na=rtcp-fb:96 nack\r\n"
       "a=rtcp-fb:96 nack pli\r\na=rtcp-fb:96 ccm fir\r\n"
       "a=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\n"
       "a=rtpmap:102 H264/90000\r\na=rtcp-fb:102 transport-cc\r\na=rtcp-fb:102 nack\r\n"
       "a=rtcp-fb:102 nack pli\r\n"
       "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n"
       "a=rtpmap:103 rtx/90000\r\na=fmtp:103 apt=102\r\n"
       "a=rtpmap:98 VP9/90000\r\na=rtcp-fb:98 transport-cc\r\na=fmtp:98 profile-id=0\r\n";
  return s;
}

struct WhepClient::Impl {
  net::EventLoop& loop;
  const net::Clock& clock;
  WhepClientConfig config;
  Events events;
  WhepClient* owner = nullptr;
  State state = State::kIdle;
  WhepClientStats stats;

  webrtc::IceCredentials local = webrtc::random_ice_credentials();
  std::uint64_t tie_breaker = net::random_u64();
  std::uint32_t reporter_ssrc = net::random_u32();
  std::uint64_t started_us = 0;

  // HTTP: one request at a time (POST, later DELETE); the server closes after its reply.
  std::unique_ptr<net::TcpConnection> http;
  std::string reply;
  std::string http_request;
  std::function<void()> http_done;
  std::string location;

  Answer answer;
  net::SocketAddress server;
  std::unique_ptr<net::UdpEndpoint> udp;
  webrtc::StunTransactionId pending_check{};
  bool check_pending = false;
  std::uint64_t last_check_us = 0;

  std::unique_ptr<webrtc::DtlsTransport> dtls;
  std::optional<net::SrtpSession> verify;  // the server's RTP, every N-th packet
  std::optional<net::SrtpSession> rtcp_out;
  std::vector<std::uint8_t> verify_buf = std::vector<std::uint8_t>(2048);
  VerifySampler sampler{config.srtp_verify_every};
  std::uint64_t last_media_us = 0;

  // transport-cc: arrivals since the last message, by unwrapped transport-wide number.
  std::vector<std::pair<std::int64_t, std::int64_t>> arrivals;
  std::vector<wire::TwccPacket> statuses;
  std::int64_t highest = -1;    // unwrapped, -1 before the first
  std::int64_t next_base = -1;  // first number not yet reported
  std::uint8_t feedback_count = 0;
  std::uint64_t next_feedback_us = 0;

  Impl(net::EventLoop& l, const net::Clock& k, WhepClientConfig c, Events e)
      : loop(l), clock(k), config(std::move(c)), events(std::move(e)) {
    arrivals.reserve(1024);
    statuses.reserve(kMaxStatuses);
  }

  void close_all() {
    if (udp) udp->close();
    http.reset();
  }

  void fail(const std::string& what, const std::string& detail = {}) {
    if (state == State::kDone) return;
    state = State::kDone;
    close_all();
    if (events.on_failed) events.on_failed(*owner, what, detail);
  }

  void start() {
    started_us = clock.now_us();
    net::UdpOptions uo;
    uo.recv_buffer_bytes = 256 << 10;
    uo.recv_batch = 4;  // hundreds of sockets: keep each receive slab small
    auto u =
        net::UdpEndpoint::open(loop, net::SocketAddress::any_v4(0), uo,
                               [this](std::span<const std::uint8_t> d, const net::SocketAddress&,
                                      std::uint64_t) { on_datagram(d); });
    if (!u) return fail("udp", u.error().message);
    udp = std::move(u.value());
    state = State::kPosting;
    const std::string body =
        make_whep_offer(local.ufrag, local.pwd, config.certificate->fingerprint_sha256());
    request("POST /" + config.stream +
                "/whep HTTP/1.1\r\nHost: predrop\r\nContent-Type: application/sdp\r\n"
                "Content-Length: " +
                std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body,
            [this] { on_posted(); });
  }

  // Sends one HTTP request and calls `done` when the server closed the connection. The callbacks
  // reach everything through `self`, the members: they run inside the connection, which they
  // destroy.
  void request(std::string text, std::function<void()> done) {
    reply.clear();
    http_request = std::move(text);
    http_done = std::move(done);
    Impl* self = this;
    auto c = net::TcpConnection::connect(loop, config.http, [self](const core::Status& st) {
      if (!st) {
        // Destroying the connection inside its own callback is allowed, but it destroys this
        // closure too: nothing of it is read after.
        Impl* const me = self;
        me->http.reset();
        return me->state == State::kLeaving ? me->finish_leaving() : me->fail("POST", "connect");
      }
      (void)self->http->start(
          [self](std::span<const std::uint8_t> d) {
            self->reply.append(reinterpret_cast<const char*>(d.data()), d.size());
          },
          [self](const core::Status&) {
            auto finished = std::move(self->http_done);
            self->http.reset();  // this closure is gone after it: only locals below
            finished();
          });
      (void)self->http->write(std::move(self->http_request));
    });
    if (!c) {
      if (state == State::kLeaving) return finish_leaving();
      return fail("POST", c.error().message);
    }
    http = std::move(c.value());
  }

  void on_posted() {
    if (state != State::kPosting) return;
    if (!reply.starts_with("HTTP/1.0 201") && !reply.starts_with("HTTP/1.1 201")) {
      return fail("POST", reply.substr(0, reply.find('\r')));
    }
    const std::size_t body = reply.find("\r\n\r\n");
    const std::size_t loc = reply.find("\r\nLocation: ");
    if (body == std::string::npos || loc == std::string::npos || loc > body) {
      return fail("POST", "no Location or body");
    }
    const std::size_t from = loc + 12;
    location = reply.substr(from, reply.find('\r', from) - from);
    auto a = read_answer(std::string_view(reply).substr(body + 4));
    if (!a) return fail("POST", "answer without ICE, fingerprint or candidate");
    answer = std::move(*a);
    auto to = net::SocketAddress::from_ip(answer.ip, answer.port);
    if (!to) return fail("POST", "candidate address " + answer.ip);
    server = *to;
    state = State::kChecking;
    send_check(clock.now_us());
  }

  void send_check(std::uint64_t now) {
    for (std::size_t i = 0; i < pending_check.size(); i += 4) {
      core::store_u32_be(pending_check.data() + i, net::random_u32());
    }
    std::array<std::uint8_t, 256> buf{};
    webrtc::StunWriter w(buf, webrtc::StunClass::Request, webrtc::kStunBinding, pending_check);
    w.add_text(webrtc::StunAttr::Username, answer.ufrag + ":" + local.ufrag);
    w.add_u32(webrtc::StunAttr::Priority, 2130706431U);
    w.add_u64(webrtc::StunAttr::IceControlling, tie_breaker);
    w.add_flag(webrtc::StunAttr::UseCandidate);
    w.add_message_integrity(answer.pwd);
    w.add_fingerprint();
    if (!w.ok()) return fail("ICE", "STUN request does not fit");
    check_pending = true;
    last_check_us = now;
    if (udp->send(std::span<const std::uint8_t>(buf.data(), w.size()), server)) ++stats.stun_sent;
  }

  void on_stun(std::span<const std::uint8_t> d) {
    auto m = webrtc::parse_stun(d);
    if (!m || !check_pending || m->transaction_id != pending_check) return;
    if (m->message_class != webrtc::StunClass::SuccessResponse ||
        !webrtc::verify_stun_integrity(d, *m, answer.pwd)) {
      return fail("ICE", "Binding refused or unauthenticated");
    }
    check_pending = false;
    if (state != State::kChecking) return;  // a consent check answered
    state = State::kHandshaking;
    auto t = webrtc::DtlsTransport::create(
        config.certificate, webrtc::DtlsRole::Client, answer.fingerprint,
        [this](std::span<const std::uint8_t> rec) { (void)udp->send(rec, server); });
    if (!t) return fail("DTLS", t.error().message);
    dtls = std::move(t.value());
    dtls->start();
    after_dtls();
  }

  void after_dtls() {
    if (state != State::kHandshaking) return;
    if (dtls->state() == webrtc::DtlsState::Failed) return fail("DTLS", dtls->failure());
    if (dtls->state() != webrtc::DtlsState::Connected || !dtls->keys()) return;
    const webrtc::DtlsSrtpKeys& k = *dtls->keys();
    verify.emplace(net::SrtpDirection::Inbound, k.suite, k.remote);
    rtcp_out.emplace(net::SrtpDirection::Outbound, k.suite, k.local);
    state = State::kPlaying;
    const std::uint64_t now = clock.now_us();
    stats.connect_us = now - started_us;
    last_media_us = now;
    next_feedback_us = now + config.feedback_interval_us;
    if (events.on_playing) events.on_playing(*owner);
  }

  void on_datagram(std::span<const std::uint8_t> d) {
    switch (webrtc::classify_packet(d)) {
      case webrtc::PacketKind::Stun:
        return on_stun(d);
      case webrtc::PacketKind::Dtls:
        if (dtls) {
          dtls->on_datagram(d);
          after_dtls();
        }
        return;
      case webrtc::PacketKind::Rtp:
        return on_rtp(d);
      case webrtc::PacketKind::Rtcp:
        ++stats.rtcp;
        return;
      default:
        return;
    }
  }

  void on_rtp(std::span<const std::uint8_t> d) {
    if (state != State::kPlaying) return;
    const std::uint64_t now = clock.now_us();
    last_media_us = now;
    ++stats.packets;
    stats.bytes += d.size();
    wire::RtpExtensionIds ids{0, 0};
    ids.transport_sequence = answer.transport_cc_id;
    if (auto p = wire::parse_rtp(d, ids); p && p->transport_sequence) {
      ++stats.transport_numbered;
      note_arrival(*p->transport_sequence, static_cast<std::int64_t>(now - started_us));
    }
    if (d.size() >= 12 && d.size() + net::kSrtpMaxTrailer <= verify_buf.size() &&
        sampler.take(core::load_u32_be(d.data() + 8))) {
      std::memcpy(verify_buf.data(), d.data(), d.size());
      ++stats.srtp_verified;
      if (!verify->unprotect_rtp(verify_buf, d.size())) ++stats.srtp_failures;
    }
  }

  void note_arrival(std::uint16_t sequence, std::int64_t at_us) {
    std::int64_t unwrapped = sequence;
    if (highest >= 0) {
      const auto delta = static_cast<std::int16_t>(sequence - static_cast<std::uint16_t>(highest));
      unwrapped = highest + delta;
    }
    if (next_base < 0) next_base = unwrapped;
    if (unwrapped < next_base) return;  // already reported (as lost): too late
    highest = std::max(highest, unwrapped);
    arrivals.emplace_back(unwrapped, at_us);
  }

  void send_feedback() {
    if (arrivals.empty() || next_base < 0) return;
    std::sort(arrivals.begin(), arrivals.end());
    std::size_t i = 0;
    while (next_base <= highest) {
      const std::int64_t last = std::min(highest, next_base + std::int64_t{kMaxStatuses} - 1);
      statuses.clear();
      std::int64_t first_arrival = -1;
      for (std::int64_t s = next_base; s <= last; ++s) {
        wire::TwccPacket p;
        p.sequence = static_cast<std::uint16_t>(s);
        while (i < arrivals.size() && arrivals[i].first < s) {
          ++i;
        }
        if (i < arrivals.size() && arrivals[i].first == s) {
          p.received = true;
          // On the message's 250 µs grid (what a receiver can say, §3.1.5).
          p.arrival_us = arrivals[i].second / wire::kTwccDeltaUs * wire::kTwccDeltaUs;
          if (first_arrival < 0) first_arrival = p.arrival_us;
        }
        statuses.push_back(p);
      }
      next_base = last + 1;
      if (first_arrival < 0) continue;
      wire::TwccFeedback h;
      h.sender_ssrc = reporter_ssrc;
      h.media_ssrc = answer.ssrc;
      h.base_sequence = statuses.front().sequence;
      h.status_count = static_cast<std::uint16_t>(statuses.size());
      h.reference_time = static_cast<std::int32_t>(first_arrival / wire::kTwccReferenceUs);
      h.feedback_count = feedback_count++;
      std::array<std::uint8_t, 2048 + net::kSrtpMaxTrailer> buf{};
      const std::size_t n = wire::write_transport_cc(
          h, statuses, std::span<std::uint8_t>(buf.data(), buf.size() - net::kSrtpMaxTrailer));
      if (n == 0) continue;
      const net::SrtpResult r = rtcp_out->protect_rtcp(buf, n);
      if (r && udp->send(std::span<const std::uint8_t>(buf.data(), r.length), server)) {
        ++stats.feedback_sent;
      }
    }
    arrivals.clear();
  }

  void poll(std::uint64_t now) {
    const auto timeout = static_cast<std::uint64_t>(config.request_timeout_s * 1e6);
    switch (state) {
      case State::kPosting:
      case State::kChecking:
      case State::kHandshaking:
        if (now > started_us + timeout) return fail("timeout", "not connected");
        if (state == State::kChecking && now >= last_check_us + kStunRetransmitUs) {
          send_check(now);
        }
        if (state == State::kHandshaking) {
          if (auto in = dtls->retransmit_in_us(); in && *in == 0) dtls->on_timer();
          after_dtls();
        }
        return;
      case State::kPlaying:
        if (now >= next_feedback_us) {
          next_feedback_us = now + config.feedback_interval_us;
          send_feedback();
        }
        if (now >= last_check_us + kConsentIntervalUs) send_check(now);
        if (now > last_media_us + static_cast<std::uint64_t>(config.end_after_idle_s * 1e6)) {
          fail("stream end", "no media");
        }
        return;
      default:
        return;
    }
  }

  void leave() {
    if (state == State::kDone || state == State::kLeaving) return;
    if (location.empty()) {
      state = State::kDone;
      close_all();
      if (events.on_left) events.on_left(*owner);
      return;
    }
    state = State::kLeaving;
    request("DELETE " + location + " HTTP/1.1\r\nHost: predrop\r\nConnection: close\r\n\r\n",
            [this] { finish_leaving(); });
  }

  void finish_leaving() {
    if (state != State::kLeaving) return;
    state = State::kDone;
    close_all();
    if (events.on_left) events.on_left(*owner);
  }
};

WhepClient::WhepClient(net::EventLoop& loop, const net::Clock& clock, WhepClientConfig config,
                       Events events)
    : impl_(std::make_unique<Impl>(loop, clock, std::move(config), std::move(events))) {
  impl_->owner = this;
}

WhepClient::~WhepClient() {
  impl_->state = State::kDone;
  impl_->close_all();
}

void WhepClient::start() {
  impl_->start();
}

void WhepClient::leave() {
  impl_->leave();
}

void WhepClient::abort() {
  impl_->state = State::kDone;
  impl_->close_all();
}

void WhepClient::poll(std::uint64_t now_us) {
  impl_->poll(now_us);
}

bool WhepClient::playing() const {
  return impl_->state == State::kPlaying;
}

const std::string& WhepClient::location() const {
  return impl_->location;
}

const WhepClientStats& WhepClient::stats() const {
  return impl_->stats;
}

}  // namespace predrop::load

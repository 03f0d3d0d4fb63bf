// Adaptation from standard RTCP Receiver Reports (docs/rtsp.md "Adaptation from Receiver
// Reports"): a player that sends no PDFB, only SRTCP RRs as ffmpeg does, over real loopback
// sockets (RTSP over TCP, RTP and SRTCP over UDP). RRs with rising loss raise R, RRs without
// loss bring it back to 0; with player_adaptation fixed R stays at player_rate; forged RRs are
// counted and change nothing. Time is a FakeClock the test advances; nothing sleeps.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "fake_clock.hpp"
#include "predrop/config/config.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/rtsp/client_session.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "predrop/server/server_setup.hpp"
#include "predrop/wire/rtcp.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

using test::request_text;
using test::session_of;

constexpr std::uint32_t kCompactPerSecond = 65'536;

int bound_udp() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  int big = 4 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  return fd;
}

std::uint16_t port_of(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// A player without PDFB: counts RTP, remembers the last SR, sends RRs that say what the test
// wants them to say (the loss is the test's, the sequence numbers and LSR/DLSR are real).
class RrPlayer {
 public:
  RrPlayer(net::EventLoop& loop, test::FakeClock& clock, server::StreamServer& srv)
      : loop_(loop), clock_(clock), srv_(srv), rtsp_(loop, srv.rtsp_address()) {
    rtp_ = bound_udp();
    rtcp_ = bound_udp();
  }
  ~RrPlayer() {
    ::close(rtp_);
    ::close(rtcp_);
  }
  RrPlayer(const RrPlayer&) = delete;
  RrPlayer& operator=(const RrPlayer&) = delete;

  bool start() {
    const std::string url =
        "rtsp://127.0.0.1:" + std::to_string(srv_.rtsp_address().port()) + "/sample";
    auto d = rtsp_.request(request_text("DESCRIBE", url, 1));
    if (!d || d->status != 200) return false;
    auto sdp = rtsp::parse_sdp(d->body);
    if (!sdp.ok()) return false;
    auto key = rtsp::sdes_key_of(sdp->media[0]);
    if (!key.ok() || !key->has_value()) return false;
    srtcp_in_.emplace(net::SrtpDirection::Inbound, wire::SrtpSuite::AesCm128HmacSha1_80,
                      (*key)->key);
    srtcp_out_.emplace(net::SrtpDirection::Outbound, wire::SrtpSuite::AesCm128HmacSha1_80,
                       (*key)->key);
    // No X-Predrop-Feedback: a standard player.
    auto s = rtsp_.request(
        request_text("SETUP", url + "/trackID=0", 2,
                     "Transport: RTP/AVP/UDP;unicast;client_port=" + std::to_string(port_of(rtp_)) +
                         "-" + std::to_string(port_of(rtcp_)) + "\r\n"));
    if (!s || s->status != 200) return false;
    session_ = session_of(*s);
    auto p = rtsp_.request(request_text("PLAY", url + "/", 3, "Session: " + session_ + "\r\n"));
    return p && p->status == 200;
  }

  // Advances the clock in 10 ms steps for `ms`, draining RTP and SRTCP, and sends an RR every
  // `rr_every_ms` saying that `loss` of the packets since the last RR were lost.
  void run(std::uint64_t ms, double loss, std::uint64_t rr_every_ms = 2000) {
    for (std::uint64_t t = 0; t < ms; t += 10) {
      clock_.advance_ms(10);
      // The server's pacing at the fake clock's time (its timer runs on the loop's real clock),
      // then whatever I/O is ready: RTSP, our RTCP to the server.
      srv_.run_pacing();
      loop_.run_nowait();
      drain();
      since_rr_ms_ += 10;
      if (since_rr_ms_ >= rr_every_ms && have_rtp_) {
        since_rr_ms_ = 0;
        const std::uint64_t fresh = highest_ - reported_highest_;
        lost_ += static_cast<std::int32_t>(std::lround(loss * static_cast<double>(fresh)));
        reported_highest_ = highest_;
        send_rr(make_block());
        for (int i = 0; i < 3; ++i) {
          loop_.run_nowait();
        }
      }
    }
  }

  // The block an honest RR would carry now.
  wire::ReportBlock make_block() const {
    wire::ReportBlock b;
    b.ssrc = ssrc_;
    b.cumulative_lost = lost_;
    b.extended_highest_sequence = static_cast<std::uint32_t>(highest_);
    b.jitter = 90;
    if (last_sr_) {
      b.last_sr = *last_sr_;
      b.delay_since_last_sr = static_cast<std::uint32_t>((clock_.now_us() - last_sr_arrival_us_) *
                                                         kCompactPerSecond / 1'000'000);
    }
    return b;
  }

  void send_rr(const wire::ReportBlock& block) {
    std::vector<std::uint8_t> buf(256 + net::kSrtpMaxTrailer);
    wire::ReceiverReport rr;
    rr.ssrc = 0x5EED;
    (void)rr.blocks.push_back(block);
    auto n = wire::write_receiver_report(buf, rr);
    ASSERT_TRUE(n.ok());
    auto m = wire::write_sdes_cname(std::span(buf).subspan(*n), 0x5EED, "player");
    ASSERT_TRUE(m.ok());
    std::size_t length = *n + *m;
    if (!plain_) {
      const net::SrtpResult r = srtcp_out_->protect_rtcp(buf, length);
      ASSERT_TRUE(r);
      length = r.length;
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(srv_.rtp_port() + 1));
    ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    ASSERT_EQ(::sendto(rtcp_, buf.data(), length, 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(length));
  }

  std::uint64_t packets() const { return packets_; }
  /// Send RRs as plain RTCP, as ffmpeg 5.1 does in an SRTP session.
  void set_plain(bool plain) { plain_ = plain; }
  std::uint64_t srs() const { return srs_; }
  /// RTCP datagrams that came from a port other than the server's RTCP port (server_port + 1).
  std::uint64_t srs_from_other_port() const { return srs_from_other_port_; }

 private:
  void drain() {
    std::array<std::uint8_t, 2048> buf{};
    for (;;) {
      const ssize_t n = ::recv(rtp_, buf.data(), buf.size(), 0);
      if (n < 12) break;
      ++packets_;
      const auto seq = static_cast<std::uint16_t>((buf[2] << 8) | buf[3]);
      ssrc_ = (std::uint32_t{buf[8]} << 24) | (std::uint32_t{buf[9]} << 16) |
              (std::uint32_t{buf[10]} << 8) | buf[11];
      // RFC 3550 A.1: extend the 16-bit sequence number with a cycle count.
      if (!have_rtp_) {
        highest_ = seq;
        reported_highest_ = seq - 1;
        have_rtp_ = true;
      } else {
        const auto delta = static_cast<std::int16_t>(seq - static_cast<std::uint16_t>(highest_));
        if (delta > 0) highest_ += static_cast<std::uint64_t>(delta);
      }
    }
    for (;;) {
      sockaddr_in from{};
      socklen_t from_len = sizeof from;
      const ssize_t n = ::recvfrom(rtcp_, buf.data(), buf.size(), 0,
                                   reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n <= 0) break;
      // RFC 3550 §11 / RFC 2326 server_port: RTCP comes from the RTCP port of the pair.
      if (ntohs(from.sin_port) != srv_.rtp_port() + 1) ++srs_from_other_port_;
      const net::SrtpResult r = srtcp_in_->unprotect_rtcp(buf, static_cast<std::size_t>(n));
      if (!r) continue;
      auto c = wire::parse_rtcp_compound(std::span<const std::uint8_t>(buf.data(), r.length));
      if (c.ok() && c->sender_report) {
        last_sr_ = wire::ntp_compact(c->sender_report->ntp_timestamp);
        last_sr_arrival_us_ = clock_.now_us();
        ++srs_;
      }
    }
  }

  net::EventLoop& loop_;
  test::FakeClock& clock_;
  server::StreamServer& srv_;
  test::PosixRtspPeer rtsp_;
  int rtp_ = -1;
  int rtcp_ = -1;
  std::string session_;
  std::optional<net::SrtpSession> srtcp_in_;
  std::optional<net::SrtpSession> srtcp_out_;
  bool have_rtp_ = false;
  std::uint64_t highest_ = 0;
  std::uint64_t reported_highest_ = 0;
  std::uint32_t ssrc_ = 0;
  std::int32_t lost_ = 0;
  std::uint64_t packets_ = 0;
  std::uint64_t srs_ = 0;
  std::uint64_t srs_from_other_port_ = 0;
  std::optional<std::uint32_t> last_sr_;
  std::uint64_t last_sr_arrival_us_ = 0;
  std::uint64_t since_rr_ms_ = 0;
  bool plain_ = false;
};

class ServerRrAdaptation : public ::testing::Test {
 protected:
  void start(server::PlayerAdaptation mode, double player_rate = 0.0) {
    auto o = test::loopback_options();
    o.loop = true;
    o.player_adaptation = mode;
    o.player_rate = player_rate;
    srv_ = std::make_unique<server::StreamServer>(loop_, clock_, o);
    srv_->start();
    player_ = std::make_unique<RrPlayer>(loop_, clock_, *srv_);
    ASSERT_TRUE(player_->start());
    ASSERT_EQ(srv_->sessions().size(), 1u);
  }
  void TearDown() override {
    player_.reset();
    if (srv_) srv_->stop();
    srv_.reset();
    loop_.run_nowait();
  }
  const server::StreamSession& session() const { return *srv_->sessions()[0]; }
  double rate() const { return session().controller().rate(); }

  net::EventLoop loop_;
  test::FakeClock clock_;
  std::unique_ptr<server::StreamServer> srv_;
  std::unique_ptr<RrPlayer> player_;
};

TEST_F(ServerRrAdaptation, LossInReceiverReportsRaisesRAndCleanReportsBringItBack) {
  start(server::PlayerAdaptation::kReceiverReports);
  player_->run(4000, 0.0);
  EXPECT_GT(player_->packets(), 100u);
  EXPECT_GE(player_->srs(), 3u) << "an SR per second";
  EXPECT_EQ(player_->srs_from_other_port(), 0u) << "SRs leave from server_port + 1";
  EXPECT_DOUBLE_EQ(rate(), 0.0) << "no loss, no bottleneck: R stays 0";
  EXPECT_GT(session().stats().rr_reports, 0u);
  // Loss rising from 10 % to 30 %: R goes up.
  player_->run(6000, 0.10);
  const double r_mild = rate();
  player_->run(6000, 0.30);
  const double r_heavy = rate();
  std::printf("R after 10 %% loss %.3f, after 30 %% loss %.3f\n", r_mild, r_heavy);
  EXPECT_GT(r_mild, 0.02);
  EXPECT_GT(r_heavy, 0.15);
  EXPECT_GE(r_heavy, r_mild);
  // The path clears: R comes back to 0.
  double lowest = r_heavy;
  for (int i = 0; i < 30 && rate() > 0.0; ++i) {
    player_->run(2000, 0.0);
    lowest = std::fmin(lowest, rate());
  }
  std::printf("R back at %.3f after %llu reports\n", rate(),
              static_cast<unsigned long long>(session().stats().rr_reports));
  EXPECT_DOUBLE_EQ(rate(), 0.0) << "lowest " << lowest;
  const auto& st = session().stats();
  EXPECT_EQ(st.rr_rejected, 0u);
  EXPECT_EQ(st.rtcp_errors, 0u);
  EXPECT_GE(st.last_rtt_us, 0.0) << "LSR/DLSR gave an RTT";
  EXPECT_EQ(st.reports_missing, 0u) << "blocks between RRs are covered, not missing";
}

TEST_F(ServerRrAdaptation, FixedSwitchKeepsPlayerRate) {
  start(server::PlayerAdaptation::kFixed, 0.25);
  player_->run(4000, 0.0);
  player_->run(10000, 0.30);
  EXPECT_DOUBLE_EQ(rate(), 0.25);
  EXPECT_EQ(session().stats().rr_reports, 0u);
  EXPECT_GT(session().stats().receiver_reports, 0u);
  EXPECT_GE(session().stats().last_rtt_us, 0.0) << "RRs are still read (RTT shown)";
}

TEST_F(ServerRrAdaptation, ForgedReceiverReportsAreCountedAndIgnored) {
  start(server::PlayerAdaptation::kReceiverReports);
  player_->run(4000, 0.0);
  const auto reports = session().stats().rr_reports;
  wire::ReportBlock b = player_->make_block();
  b.extended_highest_sequence += 5000;  // a packet never sent
  b.cumulative_lost = 4000;
  player_->send_rr(b);
  b = player_->make_block();
  b.last_sr ^= 0x00FF0000U;  // an SR this session never sent
  b.cumulative_lost = 4000;
  player_->send_rr(b);
  b = player_->make_block();
  b.cumulative_lost = 0x7FFFFF;  // more lost than sent
  player_->send_rr(b);
  for (int i = 0; i < 5; ++i) {
    loop_.run_nowait();
  }
  EXPECT_EQ(session().stats().rr_rejected, 3u);
  EXPECT_EQ(session().stats().rr_reports, reports);
  EXPECT_DOUBLE_EQ(rate(), 0.0);
}

TEST_F(ServerRrAdaptation, UnprotectedReceiverReportsAsFfmpegSendsThemCountWithAnLsr) {
  start(server::PlayerAdaptation::kReceiverReports);
  player_->set_plain(true);
  player_->run(4000, 0.0);
  player_->run(8000, 0.30);
  EXPECT_GT(rate(), 0.15);
  EXPECT_GT(session().stats().rr_unprotected, 0u);
  EXPECT_EQ(session().stats().rtcp_errors, 0u);
  // Unprotected and naming no SR: refused.
  wire::ReportBlock b = player_->make_block();
  b.last_sr = 0;
  const auto before = session().stats().rr_rejected;
  player_->send_rr(b);
  for (int i = 0; i < 5; ++i) {
    loop_.run_nowait();
  }
  EXPECT_EQ(session().stats().rr_rejected, before + 1);
}

TEST(ServerRrOptions, TomlAndCliMapOntoTheServerOptions) {
  const std::string streams =
      std::string("[server.streams]\nsample = \"") + PREDROP_TEST_SAMPLE + "\"\n";
  auto cfg =
      config::parse_config("[server]\ninterleaved_queue_bytes = 4096\n" + streams +
                               "[control]\nplayer_adaptation = \"fixed\"\nplayer_rate = 0.3\n",
                           "test.toml");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  auto o = server::make_stream_options(*cfg, {});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->player_adaptation, server::PlayerAdaptation::kFixed);
  EXPECT_DOUBLE_EQ(o->player_rate, 0.3);
  EXPECT_EQ(o->interleaved_queue_bytes, 4096u);

  // The CLI overrides both, validated like the file.
  server::CliOverrides cli;
  cli.player_adaptation = "rr";
  cli.interleaved_queue_bytes = 8192;
  config::ServerConfig c = *cfg;
  ASSERT_TRUE(server::apply_overrides(c, cli).ok());
  auto o2 = server::make_stream_options(c, cli);
  ASSERT_TRUE(o2.ok()) << o2.error().message;
  EXPECT_EQ(o2->player_adaptation, server::PlayerAdaptation::kReceiverReports);
  EXPECT_EQ(o2->player_policy.policy, "capacity");
  EXPECT_DOUBLE_EQ(o2->player_policy.capacity.initial_rate, 0.0);
  EXPECT_EQ(o2->interleaved_queue_bytes, 8192u);

  cli.player_adaptation = "pdfb";
  c = *cfg;
  auto bad = server::apply_overrides(c, cli);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--player-adaptation must be rr or fixed"), std::string::npos);
  cli.player_adaptation.clear();
  cli.interleaved_queue_bytes = std::size_t{1} << 30;
  c = *cfg;
  bad = server::apply_overrides(c, cli);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--interleaved-queue-bytes"), std::string::npos);
}

}  // namespace
}  // namespace predrop

// RTSP interleaved TCP transport (RFC 2326 §10.12): SETUP with RTP/AVP/TCP;interleaved=a-b, the
// media as SRTP-protected "$" frames on the RTSP connection, the client's SRTCP coming back on the
// odd channel into the same RTCP path as UDP, hostile framing (unknown channel, bad length,
// truncated tail) counted and dropped without desynchronising the request parser, and the
// bounded per-connection queue against a client that stops reading.
//
// Attached connections (no socket) and a FakeClock for the protocol; one real loopback socket for
// the slow reader. Nothing sleeps.
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/fake_clock.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/rtsp/client_session.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "predrop/wire/mikey.hpp"
#include "predrop/wire/rtcp.hpp"
#include "predrop/wire/rtp.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

using test::request_text;
using test::session_of;

std::span<const std::uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// What the server wrote on a connection, split into replies and interleaved frames.
struct Parsed {
  std::vector<rtsp::RtspResponse> responses;
  std::vector<rtsp::InterleavedFrame> frames;
  int errors = 0;
};

// Fed a read's worth at a time, as from a socket (the parser bounds what it buffers).
Parsed parse_output(rtsp::RtspResponseParser& p, std::string_view out) {
  Parsed r;
  constexpr std::size_t kRead = 16 * 1024;
  for (std::size_t at = 0; at < out.size() || at == 0; at += kRead) {
    for (auto ev = p.feed(out.substr(at, kRead)); ev != rtsp::RtspParseEvent::kNeedMore;
         ev = p.next()) {
      if (ev == rtsp::RtspParseEvent::kMessage) {
        r.responses.push_back(p.take_response());
      } else if (ev == rtsp::RtspParseEvent::kInterleaved) {
        r.frames.push_back(p.interleaved());
      } else {
        ++r.errors;
        if (p.error().fatal) return r;
      }
    }
  }
  return r;
}

std::string frame(std::uint8_t channel, std::span<const std::uint8_t> payload) {
  std::string f = {'$', static_cast<char>(channel), static_cast<char>(payload.size() >> 8),
                   static_cast<char>(payload.size() & 0xff)};
  f.append(reinterpret_cast<const char*>(payload.data()), payload.size());
  return f;
}

class ServerInterleaved : public ::testing::Test {
 protected:
  void SetUp() override {
    auto o = test::loopback_options();
    o.max_sessions_per_address = 0;
    srv_ = std::make_unique<server::StreamServer>(loop_, clock_, o);
    srv_->start();
    url_ = "rtsp://127.0.0.1:" + std::to_string(srv_->rtsp_address().port()) + "/sample";
    id_ = srv_->attach_connection(net::SocketAddress::loopback_v4(40100));
    ASSERT_NE(id_, 0u);
  }
  void TearDown() override {
    srv_->stop();
    srv_.reset();
    loop_.run_nowait();
  }
  // Sends `text` on the attached connection and returns what came back, parsed.
  Parsed exchange(std::string_view text) {
    srv_->receive(id_, bytes_of(text));
    return parse_output(client_, srv_->take_output(id_));
  }
  // DESCRIBE (keeps the video key) and SETUP of the video track with `transport`.
  std::optional<rtsp::RtspResponse> describe_and_setup(const std::string& transport) {
    Parsed d = exchange(request_text("DESCRIBE", url_, 1));
    EXPECT_EQ(d.responses.size(), 1u);
    if (d.responses.empty()) return std::nullopt;
    auto sdp = rtsp::parse_sdp(d.responses[0].body);
    EXPECT_TRUE(sdp.ok());
    if (!sdp.ok()) return std::nullopt;
    auto key = rtsp::sdes_key_of(sdp->media[0]);
    EXPECT_TRUE(key.ok() && key->has_value());
    if (key.ok() && key->has_value()) key_ = (*key)->key;
    Parsed s =
        exchange(request_text("SETUP", url_ + "/trackID=0", 2, "Transport: " + transport + "\r\n"));
    if (s.responses.empty()) return std::nullopt;
    return s.responses[0];
  }
  // One SRTCP-protected RR compound from the client, as a player with the SDP key sends it.
  std::vector<std::uint8_t> client_rr(std::uint32_t media_ssrc) {
    std::vector<std::uint8_t> buf(256 + net::kSrtpMaxTrailer);
    wire::ReceiverReport rr;
    rr.ssrc = 0x1234;
    wire::ReportBlock b;
    b.ssrc = media_ssrc;
    b.fraction_lost = 12;
    b.jitter = 34;
    (void)rr.blocks.push_back(b);
    auto n = wire::write_receiver_report(buf, rr);
    EXPECT_TRUE(n.ok());
    auto m = wire::write_sdes_cname(std::span(buf).subspan(*n), 0x1234, "player");
    EXPECT_TRUE(m.ok());
    if (!client_srtcp_) {
      client_srtcp_.emplace(net::SrtpDirection::Outbound, wire::SrtpSuite::AesCm128HmacSha1_80,
                            key_);
    }
    const net::SrtpResult r = client_srtcp_->protect_rtcp(buf, *n + *m);
    EXPECT_TRUE(r);
    buf.resize(r.length);
    return buf;
  }

  net::EventLoop loop_;
  test::FakeClock clock_;
  std::unique_ptr<server::StreamServer> srv_;
  std::string url_;
  std::uint64_t id_ = 0;
  rtsp::RtspResponseParser client_;
  wire::SrtpKeyMaterial key_;
  std::optional<net::SrtpSession> client_srtcp_;
};

TEST_F(ServerInterleaved, MediaAndReportsTravelOnTheRtspConnection) {
  auto setup = describe_and_setup("RTP/AVP/TCP;unicast;interleaved=0-1");
  ASSERT_TRUE(setup);
  ASSERT_EQ(setup->status, 200) << setup->body;
  auto transport = rtsp::parse_transport_spec(*setup->headers.get("Transport"));
  ASSERT_TRUE(transport.ok());
  EXPECT_EQ(transport->lower, rtsp::LowerTransport::kTcp);
  EXPECT_EQ(transport->interleaved, (rtsp::ChannelPair{0, 1}));
  ASSERT_TRUE(transport->ssrc);
  EXPECT_FALSE(transport->server_port) << "no UDP ports for an interleaved track";
  const std::string session = session_of(*setup);

  Parsed play = exchange(request_text("PLAY", url_, 3, "Session: " + session + "\r\n"));
  ASSERT_EQ(play.responses.size(), 1u);
  EXPECT_EQ(play.responses[0].status, 200);
  // One block (1 s) of media time: every packet of block 0 is due.
  clock_.advance_us(1'100'000);
  srv_->run_pacing();
  Parsed media = parse_output(client_, srv_->take_output(id_));
  EXPECT_EQ(media.errors, 0);
  EXPECT_TRUE(media.responses.empty());
  net::SrtpSession rtp_in(net::SrtpDirection::Inbound, wire::SrtpSuite::AesCm128HmacSha1_80, key_);
  net::SrtpSession rtcp_in(net::SrtpDirection::Inbound, wire::SrtpSuite::AesCm128HmacSha1_80, key_);
  std::size_t rtp = 0;
  std::size_t rtcp = 0;
  for (auto& f : media.frames) {
    std::vector<std::uint8_t> buf(f.payload);
    if (f.channel == 0) {
      const net::SrtpResult r = rtp_in.unprotect_rtp(buf, buf.size());
      ASSERT_TRUE(r) << "every RTP frame is SRTP that the SDP key opens";
      auto pkt = wire::parse_rtp(std::span<const std::uint8_t>(buf.data(), r.length));
      ASSERT_TRUE(pkt.ok());
      EXPECT_EQ(pkt->header.ssrc, *transport->ssrc);
      ++rtp;
    } else {
      ASSERT_EQ(f.channel, 1);
      EXPECT_TRUE(rtcp_in.unprotect_rtcp(buf, buf.size())) << "the SR is SRTCP";
      ++rtcp;
    }
  }
  ASSERT_EQ(srv_->sessions().size(), 1u);
  const server::StreamSession& s = *srv_->sessions()[0];
  EXPECT_GT(rtp, 20u);
  EXPECT_EQ(rtp, s.transmitter_stats().packets_sent);
  EXPECT_GE(rtcp, 1u) << "the first SR goes at PLAY";
  EXPECT_EQ(srv_->stats().interleaved_sessions, 1u);
  EXPECT_EQ(srv_->stats().interleaved_frames_dropped, 0u);
  EXPECT_EQ(srv_->stats().rtcp_datagrams, 0u) << "nothing on the UDP RTCP port";

  // The client's SRTCP RR on the odd channel reaches the session's RTCP path.
  const auto rr = client_rr(*transport->ssrc);
  EXPECT_TRUE(exchange(frame(1, rr)).responses.empty());
  EXPECT_EQ(s.stats().receiver_reports, 1u);
  EXPECT_EQ(s.stats().last_fraction_lost, 12);
  EXPECT_EQ(s.stats().rtcp_errors, 0u);
  // A tampered one fails SRTCP and is counted as an RTCP error, like on UDP.
  auto bad = client_rr(*transport->ssrc);
  bad[10] ^= 0x55;
  (void)exchange(frame(1, bad));
  EXPECT_EQ(s.stats().rtcp_errors, 1u);
  EXPECT_EQ(srv_->stats().interleaved_frames_received, 2u);

  // TEARDOWN on the same connection still parses in the middle of frames.
  Parsed down = exchange(request_text("TEARDOWN", url_, 4, "Session: " + session + "\r\n"));
  ASSERT_EQ(down.responses.size(), 1u);
  EXPECT_EQ(down.responses[0].status, 200);
  EXPECT_EQ(srv_->session_count(), 0u);
}

// The end of the media is said with an RTCP BYE after the last packet, so that a player ends
// its stream at once (ffmpeg waited for its time-out before); the session stays for the reports.
TEST_F(ServerInterleaved, TheEndOfTheMediaIsSaidWithOneByeAfterTheLastPacket) {
  auto setup = describe_and_setup("RTP/AVP/TCP;unicast;interleaved=0-1");
  ASSERT_TRUE(setup);
  ASSERT_EQ(setup->status, 200) << setup->body;
  const std::string session = session_of(*setup);
  ASSERT_EQ(
      exchange(request_text("PLAY", url_, 3, "Session: " + session + "\r\n")).responses.size(), 1u);
  net::SrtpSession rtcp_in(net::SrtpDirection::Inbound, wire::SrtpSuite::AesCm128HmacSha1_80, key_);
  std::size_t frames = 0;
  std::size_t last_rtp = 0;
  std::vector<std::size_t> byes;  // frame index of each compound holding a BYE
  // The sample is 6 s: 8 s of media time in 100 ms steps.
  for (int step = 0; step < 80; ++step) {
    clock_.advance_us(100'000);
    srv_->run_pacing();
    Parsed out = parse_output(client_, srv_->take_output(id_));
    ASSERT_EQ(out.errors, 0);
    for (auto& f : out.frames) {
      if (f.channel == 0) {
        last_rtp = frames;
      } else {
        std::vector<std::uint8_t> buf(f.payload);
        const net::SrtpResult r = rtcp_in.unprotect_rtcp(buf, buf.size());
        ASSERT_TRUE(r);
        auto c = wire::parse_rtcp_compound(std::span<const std::uint8_t>(buf.data(), r.length));
        ASSERT_TRUE(c.ok());
        if (c->has_bye) byes.push_back(frames);
      }
      ++frames;
    }
  }
  ASSERT_EQ(byes.size(), 1u) << "one BYE at the end of the media";
  EXPECT_GT(byes[0], last_rtp) << "after the last media packet";
  ASSERT_EQ(srv_->sessions().size(), 1u) << "the session lives on until TEARDOWN or time-out";
  EXPECT_TRUE(srv_->sessions()[0]->finished());
  // A shutdown says no second BYE for it.
  const auto before = srv_->stats().rtcp_byes_sent;
  srv_->stop();
  EXPECT_EQ(srv_->stats().rtcp_byes_sent, before);
}

TEST_F(ServerInterleaved, TheClientsOwnKeyFromKeyMgmtOpensItsSrtcp) {
  // GStreamer sends its own SRTCP key per track in SETUP (KeyMgmt: prot=mikey, RFC 4567 §3) and
  // protects its RRs with it, not with the key of the SDP.
  Parsed d = exchange(request_text("DESCRIBE", url_, 1));
  ASSERT_EQ(d.responses.size(), 1u);
  const wire::SrtpKeyMaterial mine = net::random_srtp_key(wire::SrtpSuite::AesCm128HmacSha1_80);
  wire::MikeyFields fields;
  fields.csb_id = 7;
  const auto mikey = wire::build_mikey(wire::SrtpSuite::AesCm128HmacSha1_80, mine, fields);
  const std::string key_mgmt = "KeyMgmt: prot=mikey;uri=\"" + url_ + "/trackID=0\";data=\"" +
                               wire::base64_encode(mikey) + "\"\r\n";
  Parsed s =
      exchange(request_text("SETUP", url_ + "/trackID=0", 2,
                            "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n" + key_mgmt));
  ASSERT_EQ(s.responses.size(), 1u);
  ASSERT_EQ(s.responses[0].status, 200);
  const std::string session = session_of(s.responses[0]);
  ASSERT_EQ(
      exchange(request_text("PLAY", url_, 3, "Session: " + session + "\r\n")).responses.size(), 1u);
  key_ = mine;  // the client protects with its own key
  (void)exchange(frame(1, client_rr(0x1111)));
  ASSERT_EQ(srv_->sessions().size(), 1u);
  EXPECT_EQ(srv_->sessions()[0]->stats().receiver_reports, 1u);
  EXPECT_EQ(srv_->sessions()[0]->stats().rtcp_errors, 0u);
}

TEST_F(ServerInterleaved, HostileFramesAreCountedAndTheParserStaysInStep) {
  auto setup = describe_and_setup("RTP/AVP/TCP;unicast;interleaved=0-1");
  ASSERT_TRUE(setup && setup->status == 200);
  const std::string session = session_of(*setup);
  ASSERT_EQ(
      exchange(request_text("PLAY", url_, 3, "Session: " + session + "\r\n")).responses.size(), 1u);
  (void)srv_->take_output(id_);
  const std::uint8_t junk[] = {0x80, 0xc9, 0x00, 0x01, 1, 2, 3, 4};
  // Unknown channel, and RTP sent back on our own RTP channel: both dropped.
  (void)exchange(frame(7, junk));
  (void)exchange(frame(0, junk));
  EXPECT_EQ(srv_->stats().interleaved_unknown_channel, 2u);
  // A length no RTCP compound has: not waited for; the OPTIONS right after it is answered.
  std::string hostile = "$\x01\xff\xf0";
  hostile += "garbage that is not a frame\r\n";
  Parsed after =
      exchange(hostile + request_text("OPTIONS", url_, 5, "Session: " + session + "\r\n"));
  ASSERT_EQ(after.responses.size(), 1u);
  EXPECT_EQ(after.responses[0].status, 200);
  EXPECT_EQ(after.responses[0].cseq(), 5u);
  // Split across reads, a valid frame and a request still parse.
  const std::string mixed = frame(9, junk) + request_text("OPTIONS", url_, 6);
  for (char ch : mixed) {
    srv_->receive(id_, bytes_of(std::string_view(&ch, 1)));
  }
  Parsed split = parse_output(client_, srv_->take_output(id_));
  ASSERT_FALSE(split.responses.empty());
  EXPECT_EQ(split.responses.back().cseq(), 6u);
  EXPECT_EQ(srv_->stats().interleaved_unknown_channel, 3u);
  EXPECT_EQ(srv_->session_count(), 1u);
  // The connection ends inside a frame: a truncated tail, and the interleaved session ends with
  // its connection (its media has nowhere else to go).
  srv_->receive(id_, bytes_of(std::string_view("$\x01\x00\x20"
                                               "abc",
                                               7)));
  srv_->detach_connection(id_);
  EXPECT_EQ(srv_->stats().interleaved_truncated, 1u);
  EXPECT_EQ(srv_->stats().interleaved_bad_length, 1u);
  EXPECT_EQ(srv_->session_count(), 0u);
  EXPECT_EQ(srv_->stats().bad_requests, 0u) << "no frame byte was taken for a request";
}

TEST_F(ServerInterleaved, ChannelsAndTransportsOfOneSession) {
  // No interleaved= given: the server picks channels and says which.
  auto setup = describe_and_setup("RTP/AVP/TCP;unicast");
  ASSERT_TRUE(setup && setup->status == 200);
  const std::string session = session_of(*setup);
  auto t0 = rtsp::parse_transport_spec(*setup->headers.get("Transport"));
  ASSERT_TRUE(t0.ok());
  EXPECT_EQ(t0->interleaved, (rtsp::ChannelPair{0, 1}));
  // The audio track asks for the same channels: it gets the next free pair.
  Parsed a = exchange(request_text(
      "SETUP", url_ + "/trackID=1", 4,
      "Session: " + session + "\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n"));
  ASSERT_EQ(a.responses.size(), 1u);
  ASSERT_EQ(a.responses[0].status, 200);
  auto t1 = rtsp::parse_transport_spec(*a.responses[0].headers.get("Transport"));
  ASSERT_TRUE(t1.ok());
  EXPECT_EQ(t1->interleaved, (rtsp::ChannelPair{2, 3}));
  // A UDP track in an interleaved session is refused.
  std::uint64_t other = srv_->attach_connection(net::SocketAddress::loopback_v4(40101));
  std::swap(other, id_);
  Parsed d = exchange(request_text("DESCRIBE", url_, 1));
  ASSERT_EQ(d.responses.size(), 1u);
  Parsed u = exchange(request_text("SETUP", url_ + "/trackID=0", 2,
                                   "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n"));
  ASSERT_EQ(u.responses.size(), 1u);
  ASSERT_EQ(u.responses[0].status, 200);
  Parsed mix =
      exchange(request_text("SETUP", url_ + "/trackID=1", 3,
                            "Session: " + session_of(u.responses[0]) +
                                "\r\nTransport: RTP/AVP;unicast;client_port=47100-47101\r\n"));
  ASSERT_EQ(mix.responses.size(), 1u);
  EXPECT_EQ(mix.responses[0].status, 461);
}

TEST(ServerInterleavedSocket, ASlowReaderCostsAtMostItsQueue) {
  // A real connection whose client stops reading after PLAY: the kernel buffers fill, then the
  // bounded queue, then packets are dropped (counted); the server's memory does not grow and the
  // stream stays framed when the client reads again.
  net::EventLoop loop;
  test::FakeClock clock;
  auto o = test::loopback_options();
  o.paced = false;  // a whole block per pacing call
  o.loop = true;
  o.interleaved_queue_bytes = 64 * 1024;
  server::StreamServer srv(loop, clock, o);
  srv.start();
  const std::string url =
      "rtsp://127.0.0.1:" + std::to_string(srv.rtsp_address().port()) + "/sample";
  {
    test::PosixRtspPeer p(loop, srv.rtsp_address());
    ASSERT_EQ(p.request(request_text("DESCRIBE", url, 1))->status, 200);
    auto setup = p.request(request_text("SETUP", url + "/trackID=0", 2,
                                        "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n"));
    ASSERT_TRUE(setup && setup->status == 200);
    auto play = p.request(request_text("PLAY", url, 3, "Session: " + session_of(*setup) + "\r\n"));
    ASSERT_TRUE(play && play->status == 200);
    // The client reads nothing from here on; the server keeps sending a block per call.
    int rounds = 0;
    for (; rounds < 5000 && srv.stats().interleaved_frames_dropped == 0; ++rounds) {
      clock.advance_us(1'000'000);
      srv.run_pacing();
    }
    EXPECT_GT(srv.stats().interleaved_frames_dropped, 0u) << "after " << rounds << " blocks";
    EXPECT_GT(rounds, 1) << "a whole block fits: the ring is flushed when it is full";
    ASSERT_EQ(srv.sessions().size(), 1u);
    const server::StreamSession& s = *srv.sessions()[0];
    EXPECT_EQ(s.stats().interleaved_drops, srv.stats().interleaved_frames_dropped);
    EXPECT_GT(s.transmitter_stats().send_drops, 0u) << "the transmitter counts them as drops";
    // The client reads again: an OPTIONS is answered behind the queued frames, all well framed.
    auto options =
        p.request(request_text("OPTIONS", url, 4, "Session: " + session_of(*setup) + "\r\n"));
    ASSERT_TRUE(options);
    EXPECT_EQ(options->status, 200);
    EXPECT_EQ(options->cseq(), 4u);
    rtsp::RtspResponseParser check;
    const Parsed all = parse_output(check, p.received());
    EXPECT_EQ(all.errors, 0);
    EXPECT_EQ(all.responses.size(), 4u);
    EXPECT_GT(all.frames.size(), 100u);
  }
  srv.stop();
  loop.run_nowait();
}

}  // namespace
}  // namespace predrop

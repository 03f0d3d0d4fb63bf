// The streaming server's limits and its robustness on loopback, with real TCP/UDP sockets and one
// real libuv loop: the session limit (453), the connection limit (503 to the first request, then
// close; a flood past it is closed at once), idle and half-open RTSP connections timing out (a
// connection that carries a session does not), garbage requests (400) and unknown session ids
// (454) answered while a session keeps streaming, and a streaming session unaffected by churn
// and by a flood of new connections. The time limits run on a FakeClock that the test moves
// (the server's run_housekeeping() does what its timer does); nothing sleeps and no wall-clock
// speed is asserted.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fake_clock.hpp"
#include "predrop/client/measuring_client.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/tcp.hpp"
#include "predrop/rtsp/rtsp_client.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/server/stream_server.hpp"

namespace predrop {
namespace {

using rtsp::RtspMethod;
using rtsp::RtspResponse;

std::shared_ptr<const media::MediaFile> sample() {
  static std::shared_ptr<const media::MediaFile> m = [] {
    media::PacketizeOptions po;
    po.block = {media::BlockSize::Unit::kDuration, 1'000'000};
    auto f = media::MediaFile::open(PREDROP_TEST_SAMPLE, po);
    EXPECT_TRUE(f.ok());
    return f.ok() ? f.value() : nullptr;
  }();
  return m;
}

// A raw TCP peer: sends whatever bytes it is given and records what comes back and whether the
// server closed the connection.
struct RawPeer {
  std::unique_ptr<net::TcpConnection> tcp;
  std::string received;
  bool connected = false;
  bool closed = false;  // the server hung up (EOF, reset or error)
  std::function<void()> on_change;

  void connect(net::EventLoop& loop, const net::SocketAddress& to, std::string first = {}) {
    auto c = net::TcpConnection::connect(loop, to, [this, first](const core::Status& st) {
      if (!st) {
        closed = true;
        if (on_change) on_change();
        return;
      }
      connected = true;
      (void)tcp->start(
          [this](std::span<const std::uint8_t> d) {
            received.append(reinterpret_cast<const char*>(d.data()), d.size());
            if (on_change) on_change();
          },
          [this](const core::Status&) {
            closed = true;
            if (on_change) on_change();
          });
      if (!first.empty()) (void)tcp->write(first);
      if (on_change) on_change();
    });
    ASSERT_TRUE(c.ok());
    tcp = std::move(c.value());
  }
  void send(std::string bytes) {
    if (tcp && connected && !closed) (void)tcp->write(std::move(bytes));
  }
};

class ServerLimits : public ::testing::Test {
 protected:
  server::StreamServerOptions options() {
    server::StreamServerOptions o;
    o.rtsp_listen = net::SocketAddress::loopback_v4(0);
    o.bind_ip = "127.0.0.1";
    o.streams.push_back({"sample", sample()});
    o.policy.policy = "basic";
    o.block_attribute = "duration_us=1000000;payload=1200";
    return o;
  }
  std::string url(const server::StreamServer& srv) const {
    return "rtsp://127.0.0.1:" + std::to_string(srv.rtsp_address().port()) + "/sample";
  }

  // DESCRIBE then SETUP of track 0 on a new RTSP connection; `done` gets the SETUP status (or 0
  // if the exchange failed before it).
  void setup_session(server::StreamServer& srv, std::function<void(int, rtsp::RtspClient&)> done) {
    auto holder = std::make_shared<std::unique_ptr<rtsp::RtspClient>>();
    auto c = rtsp::RtspClient::connect(
        loop_, srv.rtsp_address(), [this, &srv, holder, done](const core::Status& st) {
          if (!st) return done(0, **holder);
          (*holder)->send(RtspMethod::kDescribe, url(srv), {}, [this, &srv, holder, done](auto r) {
            if (!r || r->status != 200) return done(0, **holder);
            rtsp::TransportSpec spec;
            spec.protocol = "RTP/SAVP";
            spec.client_port =
                rtsp::PortPair{next_port_, static_cast<std::uint16_t>(next_port_ + 1)};
            next_port_ = static_cast<std::uint16_t>(next_port_ + 2);
            rtsp::RtspHeaders h;
            h.set("Transport", rtsp::format_transport(spec));
            (*holder)->send(RtspMethod::kSetup, url(srv) + "/trackID=0", h,
                            [holder, done](auto s) { done(s ? s->status : 0, **holder); });
          });
        });
    ASSERT_TRUE(c.ok());
    *holder = std::move(c.value());
    clients_.push_back(holder);
  }

  net::EventLoop loop_;
  test::FakeClock clock_;  // for the tests of time limits
  std::vector<std::shared_ptr<std::unique_ptr<rtsp::RtspClient>>> clients_;
  std::uint16_t next_port_ = 47000;  // sink ports nobody listens on: the server never sends there
};

TEST_F(ServerLimits, SessionLimitAnswers453AndFreesWithTeardown) {
  auto o = options();
  o.max_sessions = 2;
  server::StreamServer srv(loop_, o);
  srv.start();
  std::vector<int> statuses;
  std::optional<int> after_teardown;
  std::function<void()> next;
  int step = 0;
  next = [&] {
    if (step < 3) {
      ++step;
      setup_session(srv, [&](int status, rtsp::RtspClient&) {
        statuses.push_back(status);
        next();
      });
      return;
    }
    // The first session ends: a new one fits again.
    rtsp::RtspClient& first = **clients_[0];
    first.send(RtspMethod::kTeardown, url(srv), {}, [&](auto r) {
      EXPECT_TRUE(r.ok() && r->status == 200);
      setup_session(srv, [&](int status, rtsp::RtspClient&) {
        after_teardown = status;
        srv.stop();
      });
    });
  };
  next();
  loop_.run();
  ASSERT_EQ(statuses.size(), 3u);
  EXPECT_EQ(statuses[0], 200);
  EXPECT_EQ(statuses[1], 200);
  EXPECT_EQ(statuses[2], 453);
  EXPECT_EQ(after_teardown, 200);
  EXPECT_EQ(srv.stats().sessions_refused, 1u);
  EXPECT_EQ(srv.stats().sessions_created, 3u);
  clients_.clear();
  EXPECT_TRUE(loop_.close().ok());
}

TEST_F(ServerLimits, ConnectionLimitAnswers503ThenCloses) {
  auto o = options();
  o.max_connections = 2;
  server::StreamServer srv(loop_, o);
  srv.start();
  std::vector<std::unique_ptr<RawPeer>> peers;
  auto check = [&] {
    // Two accepted connections answered OPTIONS; the third got 503 and was closed.
    if (peers.size() < 3) return;
    for (std::size_t i = 0; i < 2; ++i) {
      if (peers[i]->received.find("\r\n\r\n") == std::string::npos) return;
    }
    if (!peers[2]->closed) return;
    srv.stop();
    loop_.stop();
  };
  const std::string options_request = "OPTIONS " + url(srv) + " RTSP/1.0\r\nCSeq: 1\r\n\r\n";
  for (int i = 0; i < 2; ++i) {
    peers.push_back(std::make_unique<RawPeer>());
    peers.back()->on_change = check;
    peers.back()->connect(loop_, srv.rtsp_address(), options_request);
  }
  // The third connects once the first two are in (the server counts at accept time).
  net::Timer third(loop_, [&] {
    if (srv.connection_count() < 2 || peers.size() == 3) return;
    peers.push_back(std::make_unique<RawPeer>());
    peers.back()->on_change = check;
    peers.back()->connect(loop_, srv.rtsp_address(), options_request);
  });
  third.start(5, 5);
  loop_.run();
  third.stop();
  ASSERT_EQ(peers.size(), 3u);
  EXPECT_NE(peers[0]->received.find("RTSP/1.0 200"), std::string::npos);
  EXPECT_NE(peers[1]->received.find("RTSP/1.0 200"), std::string::npos);
  EXPECT_NE(peers[2]->received.find("RTSP/1.0 503"), std::string::npos) << peers[2]->received;
  EXPECT_TRUE(peers[2]->closed);
  EXPECT_FALSE(peers[0]->closed);
  EXPECT_EQ(srv.stats().connections_refused, 1u);
  peers.clear();
  EXPECT_TRUE(loop_.close().ok());
}

// Regression (issue 10, finding 1): a SETUP whose URL does not parse read the URL's value after
// the parse failed and ended the process with std::bad_variant_access. Each such request must get
// a 400 naming the problem, and the server must go on answering on the same connection.
TEST_F(ServerLimits, SetupWithUnparsableUrlAnswers400AndTheServerGoesOn) {
  server::StreamServer srv(loop_, options());
  srv.start();
  const std::vector<std::string> bad_urls = {"x", "*", "rtsp://", "rtsp://[::1/sample",
                                             "http://127.0.0.1/sample"};
  std::string requests;
  int cseq = 1;
  for (const auto& u : bad_urls) {
    requests += "SETUP " + u + " RTSP/1.0\r\nCSeq: " + std::to_string(cseq++) + "\r\n\r\n";
  }
  // The same connection, after the bad ones: answered means the process and the parser survived.
  requests += "OPTIONS " + url(srv) + " RTSP/1.0\r\nCSeq: " + std::to_string(cseq) + "\r\n\r\n";
  const std::string last_cseq = "CSeq: " + std::to_string(cseq);
  RawPeer peer;
  peer.on_change = [&] {
    if (peer.closed || peer.received.find(last_cseq) != std::string::npos) {
      srv.stop();
      loop_.stop();
    }
  };
  peer.connect(loop_, srv.rtsp_address(), requests);
  loop_.run();
  std::size_t at = 0;
  int answers_400 = 0;
  while ((at = peer.received.find("RTSP/1.0 400", at)) != std::string::npos) {
    ++answers_400;
    ++at;
  }
  EXPECT_EQ(answers_400, static_cast<int>(bad_urls.size())) << peer.received;
  EXPECT_NE(peer.received.find("RTSP/1.0 200"), std::string::npos) << peer.received;
  EXPECT_NE(peer.received.find(last_cseq), std::string::npos);
  EXPECT_FALSE(peer.closed);
  peer.tcp.reset();
  EXPECT_TRUE(loop_.close().ok());
}

// Runs the loop until `done`; a 20 s real-time guard only bounds a hang (nothing asserts on it).
bool run_until(net::EventLoop& loop, const std::function<bool()>& done) {
  bool gave_up = false;
  net::Timer guard(loop, [&] { gave_up = true; });
  guard.start(20'000);
  guard.keep_loop_alive(false);
  while (!done() && !gave_up)
    loop.run_once();
  return done();
}

TEST_F(ServerLimits, FloodPastTheLimitIsClosedAndExpires) {
  auto o = options();
  o.max_connections = 4;  // allowance past the limit: 16 connections waiting for their 503
  server::StreamServer srv(loop_, clock_, o);
  srv.start();
  constexpr std::size_t kFlood = 60;
  std::vector<std::unique_ptr<RawPeer>> peers;
  auto closed = [&] {
    std::size_t n = 0;
    for (auto& p : peers)
      n += p->closed ? 1 : 0;
    return n;
  };
  // Connections that never send a byte.
  for (std::size_t i = 0; i < kFlood; ++i) {
    peers.push_back(std::make_unique<RawPeer>());
    peers.back()->connect(loop_, srv.rtsp_address());
  }
  // 4 accepted, 16 waiting for their 503, the other 40 closed at once.
  ASSERT_TRUE(run_until(
      loop_,
      [&] {
        return srv.stats().connections_accepted + srv.stats().connections_refused == kFlood &&
               closed() == kFlood - 4 - 16;
      }))
      << "accepted " << srv.stats().connections_accepted << ", refused "
      << srv.stats().connections_refused << ", closed " << closed();
  // The waiting ones expire after 2 s; the accepted ones have the 30 s idle limit.
  clock_.advance_us(2'000'000);
  srv.run_housekeeping();
  EXPECT_EQ(srv.connection_count(), 4u + 16u) << "expired before 2 s";
  clock_.advance_us(1);
  srv.run_housekeeping();
  EXPECT_TRUE(run_until(loop_, [&] { return closed() == kFlood - 4; })) << closed();
  EXPECT_EQ(srv.connection_count(), 4u);
  EXPECT_EQ(srv.stats().connections_refused, kFlood - 4);
  EXPECT_EQ(srv.stats().connections_accepted, 4u);
  EXPECT_EQ(srv.stats().connections_timed_out, 16u);
  srv.stop();
  peers.clear();
  EXPECT_TRUE(loop_.close().ok());
}

TEST_F(ServerLimits, IdleAndHalfOpenConnectionsTimeOutButSessionConnectionsStay) {
  auto o = options();
  o.rtsp_idle_timeout_s = 1;
  o.session_timeout_s = 60;
  server::StreamServer srv(loop_, clock_, o);
  srv.start();
  // A session's control connection first; it stays quiet from here on.
  std::optional<int> session_status;
  rtsp::RtspClient* with_session = nullptr;
  setup_session(srv, [&](int status, rtsp::RtspClient& c) {
    session_status = status;
    with_session = &c;
  });
  ASSERT_TRUE(run_until(loop_, [&] { return session_status.has_value(); }));
  ASSERT_EQ(session_status, 200);

  RawPeer silent;     // connects and says nothing
  RawPeer trickling;  // starts a request and trickles a byte now and then, never finishing
  const std::string partial = "OPTIONS " + url(srv) + " RTSP/1.0\r\nCSeq: 1\r\n";
  const std::uint64_t bytes0 = srv.stats().rtsp_bytes_received;
  silent.connect(loop_, srv.rtsp_address());
  trickling.connect(loop_, srv.rtsp_address(), partial);
  ASSERT_TRUE(run_until(loop_, [&] {
    return srv.connection_count() == 3 &&
           srv.stats().rtsp_bytes_received == bytes0 + partial.size();
  }));
  // 0.6 s on, a byte trickles in; nobody has been idle for 1 s yet.
  clock_.advance_ms(600);
  srv.run_housekeeping();
  EXPECT_EQ(srv.connection_count(), 3u);
  trickling.send("X");
  ASSERT_TRUE(run_until(
      loop_, [&] { return srv.stats().rtsp_bytes_received == bytes0 + partial.size() + 1; }));
  // 1.2 s after the connects: the silent peer has been idle too long, and the trickler's
  // request, begun 1.2 s ago, is overdue although its last byte is only 0.6 s old.
  clock_.advance_ms(600);
  srv.run_housekeeping();
  EXPECT_TRUE(run_until(loop_, [&] { return silent.closed && trickling.closed; }));
  EXPECT_EQ(srv.stats().connections_timed_out, 2u);
  EXPECT_EQ(trickling.received, "") << "no reply to a request that never completed";
  // The session connection, as quiet as the others, still answers a keep-alive.
  std::optional<int> ping_status;
  with_session->send(RtspMethod::kGetParameter, url(srv), {},
                     [&](auto r) { ping_status = r ? r->status : -1; });
  EXPECT_TRUE(run_until(loop_, [&] { return ping_status.has_value(); }));
  EXPECT_EQ(ping_status, 200);
  srv.stop();
  clients_.clear();
  EXPECT_TRUE(loop_.close().ok());
}

// Plays a real session (SRTP, paced, per-block feedback) with the measuring client while
// `disturb` runs against the same server; every block must arrive whole and be reported.
class StreamingUnderDisturbance : public ServerLimits {
 protected:
  void play(server::StreamServer& srv, std::uint32_t blocks, std::function<void()> disturb) {
    client::ClientOptions co;
    co.url = url(srv);
    co.reference = PREDROP_TEST_SAMPLE;
    co.max_blocks = blocks;
    bool disturbing = false;
    client::MeasuringClient c(
        loop_, real_clock_, co,
        [&](const client::BlockResult& r) {
          results_.push_back(r);
          if (!disturbing) {
            disturbing = true;
            disturb();
          }
        },
        [&](const core::Status& st, const client::ClientSummary& s) {
          status_ = st;
          summary_ = s;
          srv.stop();
          loop_.stop();
        });
    c.start();
    loop_.run();
  }
  void expect_every_block_whole(std::uint32_t blocks) {
    ASSERT_TRUE(status_.has_value());
    ASSERT_TRUE(status_->ok()) << status_->error().message;
    ASSERT_EQ(results_.size(), blocks);
    EXPECT_EQ(summary_.srtp_failures, 0u);
    for (const auto& r : results_) {
      EXPECT_EQ(r.received, r.sent) << "block " << r.stage;
      EXPECT_GT(r.sent, 0u);
    }
  }
  const net::MonotonicClock real_clock_;  // the servers streaming here run on the real clock
  std::vector<client::BlockResult> results_;
  std::optional<core::Status> status_;
  client::ClientSummary summary_;
};

TEST_F(StreamingUnderDisturbance, GarbageAndUnknownSessionsAnsweredWhileStreaming) {
  auto o = options();
  server::StreamServer srv(loop_, o);
  srv.start();
  constexpr std::uint32_t kBlocks = 4;
  std::vector<std::unique_ptr<RawPeer>> peers;
  auto peer = [&](std::string bytes) {
    peers.push_back(std::make_unique<RawPeer>());
    peers.back()->connect(loop_, srv.rtsp_address(), std::move(bytes));
  };
  play(srv, kBlocks, [&] {
    // A TLS ClientHello start (NUL bytes included), then CRLFs.
    static const char kTls[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 binary\r\n\r\n";
    peer(std::string(kTls, sizeof kTls - 1));
    peer("HELLO WORLD\r\n\r\n");
    peer("GET_PARAMETER " + url(srv) + " RTSP/1.0\r\nCSeq: 7\r\nSession: DEADBEEF0000\r\n\r\n");
    peer("PLAY " + url(srv) + " RTSP/1.0\r\nCSeq: 8\r\nSession: 0123456789AB\r\n\r\n");
    peer("TEARDOWN " + url(srv) + " RTSP/1.0\r\nCSeq: 9\r\nSession: ;;;\r\n\r\n");
    peer(std::string(20000, 'A'));  // one endless line
  });
  expect_every_block_whole(kBlocks);
  ASSERT_EQ(peers.size(), 6u);
  auto is_error_reply = [](const std::string& r) {
    return r.rfind("RTSP/1.0 4", 0) == 0 || r.rfind("RTSP/1.0 5", 0) == 0;
  };
  EXPECT_TRUE(is_error_reply(peers[0]->received)) << peers[0]->received;
  EXPECT_TRUE(is_error_reply(peers[1]->received)) << peers[1]->received;
  EXPECT_NE(peers[2]->received.find("RTSP/1.0 454"), std::string::npos) << peers[2]->received;
  EXPECT_NE(peers[2]->received.find("CSeq: 7"), std::string::npos);
  EXPECT_NE(peers[3]->received.find("RTSP/1.0 454"), std::string::npos) << peers[3]->received;
  EXPECT_NE(peers[4]->received.find("RTSP/1.0 454"), std::string::npos) << peers[4]->received;
  EXPECT_TRUE(is_error_reply(peers[5]->received)) << peers[5]->received;
  EXPECT_GE(srv.stats().bad_requests, 3u);
  peers.clear();
  EXPECT_TRUE(loop_.close().ok());
}

TEST_F(StreamingUnderDisturbance, ChurnAndConnectionFloodLeaveTheSessionWhole) {
  auto o = options();
  o.max_connections = 32;
  o.max_sessions = 16;
  server::StreamServer srv(loop_, o);
  srv.start();
  constexpr std::uint32_t kBlocks = 5;
  constexpr int kChurn = 40;
  constexpr std::size_t kFlood = 120;
  int churned = 0;
  int refused = 0;
  std::vector<std::unique_ptr<RawPeer>> flood;
  // Churn: sessions set up, played and torn down one after the other, several at a time.
  std::function<void()> churn_one = [&] {
    if (churned >= kChurn) return;
    ++churned;
    setup_session(srv, [&](int status, rtsp::RtspClient& c) {
      if (status != 200) {
        ++refused;
        c.close();
        churn_one();
        return;
      }
      c.send(RtspMethod::kPlay, url(srv), {}, [&](auto) {
        c.send(RtspMethod::kTeardown, url(srv), {}, [&](auto) {
          c.close();
          churn_one();
        });
      });
    });
  };
  play(srv, kBlocks, [&] {
    for (int i = 0; i < 4; ++i)
      churn_one();
    // A flood of connections: most past the limit, half of them silent, half asking OPTIONS.
    for (std::size_t i = 0; i < kFlood; ++i) {
      flood.push_back(std::make_unique<RawPeer>());
      flood.back()->connect(
          loop_, srv.rtsp_address(),
          i % 2 == 0 ? "OPTIONS " + url(srv) + " RTSP/1.0\r\nCSeq: 1\r\n\r\n" : std::string());
    }
  });
  expect_every_block_whole(kBlocks);
  EXPECT_GT(churned, 4);
  EXPECT_GT(srv.stats().connections_refused, 0u);
  EXPECT_GE(srv.stats().sessions_created, 5u);
  flood.clear();
  clients_.clear();
  EXPECT_TRUE(loop_.close().ok());
}

}  // namespace
}  // namespace predrop

// ClientSession (rtsp/include/predrop/rtsp/client_session.hpp) against a scripted fake RTSP
// server on a real loopback TCP socket and a real libuv loop: the whole handshake, a refusal at
// each step, unusable replies, a malformed SDP, a silent server (request timeout), a server that
// hangs up, keep-alives and TEARDOWN. The pure helpers (read_description, sdes_key_of,
// parse_block_attribute, SessionError) are tested first. Every loop test ends with a clean close.
#include "predrop/rtsp/client_session.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "predrop/net/tcp.hpp"
#include "predrop/rtsp/rtsp_headers.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::rtsp {
namespace {

// A fixed key, so that the expected SdesKey is known: bytes 0, 1, ..., 29.
wire::SrtpKeyMaterial test_key() {
  wire::SrtpKeyMaterial k;
  k.size = wire::key_salt_size(wire::SrtpSuite::AesCm128HmacSha1_80);
  for (std::size_t i = 0; i < k.size; ++i)
    k.bytes[i] = static_cast<std::uint8_t>(i);
  return k;
}

// What a predrop server announces: video (H.264, SRTP, stage + abs-send-time extensions) and
// audio (SRTP), and the block attribute.
SdpSession test_sdp() {
  SdpSession s;
  s.control = "*";
  s.attributes.push_back("x-predrop-block:duration_us=1000000;payload=1200");
  SdpCrypto crypto;
  crypto.tag = 1;
  crypto.suite = "AES_CM_128_HMAC_SHA1_80";
  crypto.key_params = "inline:" + wire::base64_encode(test_key().span());
  SdpMedia video;
  video.kind = "video";
  video.proto = "RTP/SAVP";
  video.payload_type = 96;
  video.rtpmap = "H264/90000";
  video.control = "trackID=0";
  video.crypto.push_back(crypto);
  video.extmaps.push_back({3, "", std::string(kStageExtensionUri), ""});
  video.extmaps.push_back({5, "", std::string(kAbsSendTimeUri), ""});
  SdpMedia audio;
  audio.kind = "audio";
  audio.proto = "RTP/SAVP";
  audio.payload_type = 97;
  audio.rtpmap = "MPEG4-GENERIC/48000/2";
  audio.control = "trackID=1";
  audio.crypto.push_back(crypto);
  s.media = {video, audio};
  return s;
}

RtspResponse describe_reply(const std::string& base, const SdpSession& sdp) {
  RtspResponse r = make_response(200, std::nullopt);
  r.headers.set("Content-Base", base);
  auto text = build_sdp(sdp);
  EXPECT_TRUE(text.ok());
  r.set_body("application/sdp", text.ok() ? *text : std::string());
  return r;
}

// ---- pure helpers ----------------------------------------------------------------------------

TEST(ClientSessionDescription, ReadsTracksKeysExtensionsAndBlockAttribute) {
  const auto d = read_description("rtsp://h/x", describe_reply("rtsp://h/x/", test_sdp()));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->content_base, "rtsp://h/x/");
  ASSERT_EQ(d->tracks.size(), 2u);
  EXPECT_EQ(d->tracks[0].index, 0u);
  EXPECT_EQ(d->tracks[0].control_url, "rtsp://h/x/trackID=0");
  EXPECT_EQ(d->tracks[1].control_url, "rtsp://h/x/trackID=1");
  EXPECT_EQ(d->tracks[0].payload_type, 96);
  EXPECT_EQ(d->tracks[1].payload_type, 97);
  EXPECT_EQ(d->tracks[0].media.kind, "video");
  ASSERT_TRUE(d->tracks[0].key.has_value());
  EXPECT_EQ(d->tracks[0].key->suite, wire::SrtpSuite::AesCm128HmacSha1_80);
  EXPECT_EQ(d->tracks[0].key->tag, 1u);
  EXPECT_EQ(d->tracks[0].key->key, test_key());
  EXPECT_EQ(d->tracks[0].extensions, (wire::RtpExtensionIds{3, 5}));
  EXPECT_EQ(d->tracks[1].extensions, (wire::RtpExtensionIds{0, 0}));
  ASSERT_TRUE(d->block_attribute.has_value());
  EXPECT_EQ(*d->block_attribute, "duration_us=1000000;payload=1200");
}

TEST(ClientSessionDescription, WithoutContentBaseTheRequestUrlIsTheBase) {
  RtspResponse r = describe_reply("unused", test_sdp());
  r.headers.remove("Content-Base");
  const auto d = read_description("rtsp://h:1/y", r);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->content_base, "rtsp://h:1/y");
  EXPECT_EQ(d->tracks[0].control_url, "rtsp://h:1/y/trackID=0");
}

TEST(ClientSessionDescription, MalformedSdpIsAnError) {
  RtspResponse r = make_response(200, 2);
  r.set_body("application/sdp", "this is not SDP\r\n");
  const auto d = read_description("rtsp://h/x", r);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().message.rfind("SDP: ", 0), 0u) << d.error().message;
}

TEST(ClientSessionDescription, PlainRtpTrackHasNoKey) {
  SdpSession s = test_sdp();
  s.media[1].crypto.clear();
  s.media[1].proto = "RTP/AVP";
  const auto d = read_description("rtsp://h/x", describe_reply("rtsp://h/x/", s));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_TRUE(d->tracks[0].key.has_value());
  EXPECT_FALSE(d->tracks[1].key.has_value());
}

TEST(SdesKeyOf, TakesTheFirstSupportedSuiteAndRefusesBadKeys) {
  SdpMedia m = test_sdp().media[0];
  SdpCrypto unknown = m.crypto[0];
  unknown.tag = 7;
  unknown.suite = "F8_128_HMAC_SHA1_80";
  m.crypto.insert(m.crypto.begin(), unknown);
  auto k = sdes_key_of(m);
  ASSERT_TRUE(k.ok()) << k.error().message;
  ASSERT_TRUE(k->has_value());
  EXPECT_EQ((*k)->tag, 1u);

  m.crypto.erase(m.crypto.begin() + 1);  // only the unknown suite is left
  k = sdes_key_of(m);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.error().message.find("unsupported SRTP suite F8_128_HMAC_SHA1_80"), std::string::npos)
      << k.error().message;

  m.crypto[0].suite = "AES_CM_128_HMAC_SHA1_80";
  m.crypto[0].key_params = "inline:AAAA";  // 3 bytes, not 30
  k = sdes_key_of(m);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().message.rfind("a=crypto: ", 0), 0u) << k.error().message;

  m.crypto.clear();
  k = sdes_key_of(m);
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->has_value());
}

TEST(ParseBlockAttribute, ReadsKnownNamesSkipsUnknownRefusesBadNumbers) {
  auto b = parse_block_attribute("duration_us=1000000;payload=1200;future=x;flag");
  ASSERT_FALSE(b.ok()) << "future=x is not a number";
  b = parse_block_attribute("duration_us=1000000; payload=1200;future=9;flag");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(*b, (BlockAttribute{1000000, std::nullopt, 1200}));
  b = parse_block_attribute("bytes=65536");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->bytes, 65536u);
  EXPECT_FALSE(parse_block_attribute("bytes=0").ok());
  EXPECT_FALSE(parse_block_attribute("duration_us=-5").ok());
  EXPECT_FALSE(parse_block_attribute("duration_us=12abc").ok());
  b = parse_block_attribute("");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, BlockAttribute{});
}

TEST(SessionError, MessageNamesStepStatusAndDetail) {
  EXPECT_EQ((SessionError{SessionStep::kSetup, 461, "Unsupported Transport"}.message()),
            "SETUP: 461 Unsupported Transport");
  EXPECT_EQ((SessionError{SessionStep::kTimeout, 0, "no answer to PLAY"}.message()),
            "timeout: no answer to PLAY");
  EXPECT_EQ((SessionError{SessionStep::kKeepAlive, 454, ""}.message()), "GET_PARAMETER: 454");
  EXPECT_EQ((SessionError{SessionStep::kClosed, 0, "by the server"}.what()), "closed");
}

TEST(ServerAddressOf, TakesIpLiteralsAndLocalhost) {
  auto a = server_address_of("rtsp://localhost:8554/x");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->ip_string(), "127.0.0.1");
  EXPECT_EQ(a->port(), 8554);
  a = server_address_of("rtsp://10.1.2.3/x");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->port(), 554);
  a = server_address_of("http://h/x");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().message.rfind("bad URL: ", 0), 0u) << a.error().message;
  a = server_address_of("rtsp://example.com/x");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().message.rfind("server host must be an IP address", 0), 0u);
}

// ---- the fake server -------------------------------------------------------------------------

void expect_clean_close(net::EventLoop& loop) {
  auto st = loop.close();
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(loop.forced_closes(), 0u);
  EXPECT_EQ(loop.handle_count(), 0u);
}

// What the fake server does with one request.
struct Action {
  std::optional<RtspResponse> reply;  ///< nullopt: stay silent.
  bool hang_up = false;               ///< Close the connection (after the reply, if any).
};

// One RTSP connection at a time, answered by a script. Records every request.
class FakeServer {
 public:
  using Script = std::function<Action(const RtspRequest& request)>;

  FakeServer(net::EventLoop& loop, Script script) : script_(std::move(script)) {
    auto l = net::TcpListener::listen(
        loop, net::SocketAddress::loopback_v4(0),
        [this](std::unique_ptr<net::TcpConnection> c) { on_accept(std::move(c)); });
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.error().message);
    if (l.ok()) listener_ = std::move(l.value());
  }

  std::string url() const {
    return "rtsp://127.0.0.1:" + std::to_string(listener_->local_address().port()) + "/x";
  }
  const net::SocketAddress& address() const { return listener_->local_address(); }
  /// Stops listening and drops the connection.
  void shut() {
    conn_.reset();
    listener_.reset();
  }
  void hang_up() { conn_.reset(); }
  /// Writes raw bytes on the connection (interleaved frames).
  void send(const std::string& bytes) {
    if (conn_) (void)conn_->write(bytes);
  }

  std::vector<RtspRequest> requests;
  bool client_hung_up = false;

 private:
  void on_accept(std::unique_ptr<net::TcpConnection> c) {
    conn_ = std::move(c);
    parser_ = RtspRequestParser();
    auto st = conn_->start([this](std::span<const std::uint8_t> d) { on_data(d); },
                           [this](const core::Status&) {
                             client_hung_up = true;
                             conn_.reset();
                           });
    EXPECT_TRUE(st.ok());
  }

  void on_data(std::span<const std::uint8_t> d) {
    for (auto ev = parser_.feed(d); ev != RtspParseEvent::kNeedMore; ev = parser_.next()) {
      ASSERT_EQ(ev, RtspParseEvent::kMessage) << parser_.error().message;
      requests.push_back(parser_.request());
      Action a = script_(requests.back());
      if (a.reply) {
        if (!a.reply->headers.contains("CSeq")) {
          a.reply->headers.set("CSeq", std::to_string(requests.back().cseq));
        }
        (void)conn_->write(serialize(*a.reply));
      }
      if (a.hang_up) {
        conn_->close_after_writes();
        return;
      }
    }
  }

  Script script_;
  std::unique_ptr<net::TcpListener> listener_;
  std::unique_ptr<net::TcpConnection> conn_;
  RtspRequestParser parser_;
};

// A predrop-like server: everything succeeds.
Action happy(const std::string& url, const RtspRequest& req) {
  RtspResponse r = make_response(200, req.cseq);
  switch (req.method) {
    case RtspMethod::kDescribe:
      r = describe_reply(url + "/", test_sdp());
      break;
    case RtspMethod::kSetup: {
      auto offers = parse_transport(req.headers.get("Transport").value_or(""));
      EXPECT_TRUE(offers.ok() && offers->size() == 1u);
      TransportSpec spec = offers.ok() && !offers->empty() ? offers->front() : TransportSpec{};
      const bool second = req.url.ends_with("trackID=1");
      spec.server_port = PortPair{static_cast<std::uint16_t>(second ? 6972 : 6970),
                                  static_cast<std::uint16_t>(second ? 6973 : 6971)};
      spec.ssrc = second ? 0xA0D10u : 0xBEEFu;
      r.headers.set("Transport", format_transport(spec));
      r.set_session("12345678", 60);
      break;
    }
    case RtspMethod::kPlay:
      r.headers.set("RTP-Info", "url=" + url + "/trackID=0;seq=100;rtptime=5000,url=trackID=1;" +
                                    "seq=7;rtptime=9");
      r.headers.set("Session", "12345678");
      break;
    default:
      break;
  }
  return {r, false};
}

Action refuse(const RtspRequest& req, int status) {
  return {make_response(status, req.cseq), false};
}

// One run of a session against a fake server, recording what the handlers saw.
struct Harness {
  net::EventLoop loop;
  std::unique_ptr<FakeServer> server;
  std::unique_ptr<ClientSession> session;
  ClientSessionOptions options;
  ClientSession::Handlers handlers;
  std::optional<SessionError> failed;
  int failures = 0;
  int playing = 0;
  std::vector<std::size_t> ports_asked;  // sdp index of each client_ports call
  std::unique_ptr<net::Timer> watchdog;

  explicit Harness(FakeServer::Script script) {
    server = std::make_unique<FakeServer>(loop, std::move(script));
    options.url = server->url();
    handlers.client_ports = [this](const SessionTrack& t) -> core::Result<PortPair> {
      ports_asked.push_back(t.index);
      const auto base = static_cast<std::uint16_t>(40000 + 2 * t.index);
      return PortPair{base, static_cast<std::uint16_t>(base + 1)};
    };
    handlers.on_failed = [this](const SessionError& e) {
      failed = e;
      ++failures;
      end();
    };
    handlers.on_playing = [this] {
      ++playing;
      end();
    };
    watchdog = std::make_unique<net::Timer>(loop, [this] {
      ADD_FAILURE() << "watchdog fired: the session never finished";
      end();
    });
    watchdog->start(10'000);
    watchdog->keep_loop_alive(false);
  }

  // Stops the loop at the end of the current iteration (things are torn down after run()).
  void end() { loop.stop(); }

  void go() {
    session = std::make_unique<ClientSession>(loop, options, handlers);
    session->start();
    loop.run();
  }

  // Drops the session and the server, then checks that the loop closes cleanly.
  void finish() {
    session.reset();
    server->shut();
    watchdog.reset();
    expect_clean_close(loop);
  }
};

TEST(ClientSession, SetsUpEveryTrackAndPlays) {
  std::string url;
  Harness run([&](const RtspRequest& r) { return happy(url, r); });
  url = run.options.url;
  run.options.feedback = true;
  run.go();
  ASSERT_EQ(run.playing, 1);
  EXPECT_FALSE(run.failed.has_value());
  ASSERT_TRUE(run.session->playing());
  EXPECT_EQ(run.session->session_id(), "12345678");
  EXPECT_EQ(run.session->session_timeout_s(), 60u);

  // The requests, in order, as a server sees them.
  const auto& q = run.server->requests;
  ASSERT_EQ(q.size(), 4u);
  EXPECT_EQ(q[0].method, RtspMethod::kDescribe);
  EXPECT_EQ(q[0].url, url);
  EXPECT_EQ(q[0].headers.get("Accept").value_or(""), "application/sdp");
  EXPECT_EQ(q[1].method, RtspMethod::kSetup);
  EXPECT_EQ(q[1].url, url + "/trackID=0");
  EXPECT_EQ(q[1].headers.get("Transport").value_or(""), "RTP/SAVP;unicast;client_port=40000-40001");
  EXPECT_EQ(q[1].headers.get(kFeedbackHeader).value_or(""), "1");
  EXPECT_FALSE(q[1].headers.contains("Session"));
  EXPECT_EQ(q[2].method, RtspMethod::kSetup);
  EXPECT_EQ(q[2].url, url + "/trackID=1");
  EXPECT_EQ(q[2].headers.get("Transport").value_or(""), "RTP/SAVP;unicast;client_port=40002-40003");
  EXPECT_EQ(q[2].headers.get("Session").value_or(""), "12345678");
  EXPECT_EQ(q[3].method, RtspMethod::kPlay);
  EXPECT_EQ(q[3].url, url);
  EXPECT_EQ(q[3].headers.get("Range").value_or(""), "npt=0.000-");
  EXPECT_EQ(q[3].headers.get("Session").value_or(""), "12345678");

  // What was negotiated.
  const auto& t = run.session->tracks();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(run.ports_asked, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(t[0].client_port, (PortPair{40000, 40001}));
  EXPECT_EQ(t[0].server_port, (PortPair{6970, 6971}));
  EXPECT_EQ(t[0].ssrc, 0xBEEFu);
  EXPECT_EQ(t[1].server_port, (PortPair{6972, 6973}));
  EXPECT_EQ(t[1].ssrc, 0xA0D10u);
  EXPECT_EQ(t[0].payload_type, 96);
  EXPECT_EQ(t[1].payload_type, 97);
  ASSERT_TRUE(t[0].key && t[1].key);
  EXPECT_EQ(t[0].key->key, test_key());
  EXPECT_EQ(t[0].extensions, (wire::RtpExtensionIds{3, 5}));
  EXPECT_EQ(t[0].rtp_info_seq, 100u);
  EXPECT_EQ(t[0].rtp_info_rtptime, 5000u);
  EXPECT_EQ(t[1].rtp_info_seq, 7u);  // a relative RTP-Info URL still matches
  EXPECT_EQ(t[1].rtp_info_rtptime, 9u);
  EXPECT_EQ(run.session->description().block_attribute.value_or(""),
            "duration_us=1000000;payload=1200");

  // TEARDOWN: answered, then done.
  int done = 0;
  run.session->teardown([&] {
    ++done;
    run.end();
  });
  EXPECT_FALSE(run.session->playing());
  run.loop.run();
  EXPECT_EQ(done, 1);
  ASSERT_EQ(run.server->requests.size(), 5u);
  EXPECT_EQ(run.server->requests[4].method, RtspMethod::kTeardown);
  EXPECT_EQ(run.server->requests[4].headers.get("Session").value_or(""), "12345678");
  EXPECT_EQ(run.failures, 0);
  run.finish();
}

TEST(ClientSession, PausesAndResumesWhereItStopped) {
  std::string url;
  Harness run([&](const RtspRequest& r) { return happy(url, r); });
  url = run.options.url;
  run.go();
  ASSERT_EQ(run.playing, 1);
  int paused = 0;
  int resumed = 0;
  run.session->resume([&] { ++resumed; });  // not paused: ignored
  run.session->pause([&] {
    ++paused;
    run.end();
  });
  EXPECT_FALSE(run.session->playing());
  run.loop.run();
  ASSERT_EQ(paused, 1);
  EXPECT_TRUE(run.session->paused());
  run.session->pause([&] { ++paused; });  // already paused: ignored
  run.session->resume([&] {
    ++resumed;
    run.end();
  });
  run.loop.run();
  EXPECT_EQ(paused, 1);
  EXPECT_EQ(resumed, 1);
  EXPECT_TRUE(run.session->playing());
  const auto& q = run.server->requests;
  ASSERT_EQ(q.size(), 6u);
  EXPECT_EQ(q[4].method, RtspMethod::kPause);
  EXPECT_EQ(q[4].url, url);
  EXPECT_EQ(q[4].headers.get("Session").value_or(""), "12345678");
  EXPECT_EQ(q[5].method, RtspMethod::kPlay);
  EXPECT_FALSE(q[5].headers.contains("Range"));  // RFC 2326 §10.5: resume at the pause point
  EXPECT_EQ(q[5].headers.get("Session").value_or(""), "12345678");
  EXPECT_EQ(run.failures, 0);
  run.finish();
}

TEST(ClientSession, ARefusedPauseFailsThatStepAndAPausedSessionTearsDown) {
  std::string url;
  bool refuse_pause = true;
  Harness run([&](const RtspRequest& r) {
    if (r.method == RtspMethod::kPause && refuse_pause) return refuse(r, 455);
    return happy(url, r);
  });
  url = run.options.url;
  run.go();
  ASSERT_EQ(run.playing, 1);
  run.session->pause(nullptr);
  run.loop.run();
  ASSERT_TRUE(run.failed.has_value());
  EXPECT_EQ(run.failed->step, SessionStep::kPause);
  EXPECT_EQ(run.failed->status, 455);
  run.finish();

  Harness again([&](const RtspRequest& r) { return happy(url, r); });
  url = again.options.url;
  again.go();
  again.session->pause([&] { again.end(); });
  again.loop.run();
  ASSERT_TRUE(again.session->paused());
  int done = 0;
  again.session->teardown([&] {
    ++done;
    again.end();
  });
  again.loop.run();
  EXPECT_EQ(done, 1);
  EXPECT_EQ(again.server->requests.back().method, RtspMethod::kTeardown);
  again.finish();
}

TEST(ClientSession, FollowsADescribeRedirectToAnotherServer) {
  net::EventLoop* loop_of_run = nullptr;
  std::string edge_url;
  std::unique_ptr<FakeServer> edge;
  std::string origin_url;
  Harness run([&](const RtspRequest& r) -> Action {
    EXPECT_EQ(r.method, RtspMethod::kDescribe) << "only DESCRIBE goes to the origin";
    EXPECT_EQ(r.headers.get("X-Test").value_or(""), "yes");
    RtspResponse moved = make_response(302, r.cseq);
    moved.headers.set("Location", edge_url);
    return {moved, false};
  });
  loop_of_run = &run.loop;
  edge = std::make_unique<FakeServer>(*loop_of_run,
                                      [&](const RtspRequest& r) { return happy(edge_url, r); });
  edge_url = edge->url();
  run.options.headers.set("X-Test", "yes");
  run.go();
  ASSERT_EQ(run.playing, 1) << (run.failed ? run.failed->message() : "");
  EXPECT_EQ(run.server->requests.size(), 1u);
  ASSERT_EQ(edge->requests.size(), 4u);
  EXPECT_EQ(edge->requests[0].url, edge_url);
  EXPECT_EQ(edge->requests[1].url, edge_url + "/trackID=0");
  EXPECT_EQ(edge->requests[3].url, edge_url) << "PLAY goes to the new URL";
  EXPECT_EQ(run.session->server(), edge->address());
  run.session.reset();
  edge->shut();
  run.finish();
}

TEST(ClientSession, ARedirectLoopEnds) {
  std::string url;
  Harness run([&](const RtspRequest& r) -> Action {
    RtspResponse moved = make_response(302, r.cseq);
    moved.headers.set("Location", url);
    return {moved, false};
  });
  url = run.options.url;
  run.go();
  ASSERT_TRUE(run.failed.has_value());
  EXPECT_EQ(run.failed->step, SessionStep::kDescribe);
  EXPECT_NE(run.failed->detail.find("more than 4 redirects"), std::string::npos);
  EXPECT_EQ(run.server->requests.size(), 5u);
  run.finish();
}

TEST(ClientSession, InterleavedSetsUpChannelsAndDeliversFrames) {
  std::string url;
  Harness run([&](const RtspRequest& r) { return happy(url, r); });
  url = run.options.url;
  run.options.interleaved = true;
  std::vector<std::pair<int, std::string>> frames;
  run.handlers.on_frame = [&](std::uint8_t channel, std::span<const std::uint8_t> payload) {
    frames.emplace_back(channel, std::string(payload.begin(), payload.end()));
    if (frames.size() == 2) run.end();
  };
  run.handlers.on_playing = [&] {
    ++run.playing;
    // Two frames, the second split across writes, with nothing between them.
    run.server->send(
        std::string("$\x00\x00\x03"
                    "abc$\x03\x00\x04"
                    "wx",
                    13));
    run.server->send("yz");
  };
  run.go();
  ASSERT_EQ(run.playing, 1);
  EXPECT_TRUE(run.ports_asked.empty()) << "no UDP ports for an interleaved session";
  const auto& q = run.server->requests;
  ASSERT_EQ(q.size(), 4u);
  EXPECT_EQ(q[1].headers.get("Transport").value_or(""), "RTP/SAVP/TCP;unicast;interleaved=0-1");
  EXPECT_EQ(q[2].headers.get("Transport").value_or(""), "RTP/SAVP/TCP;unicast;interleaved=2-3");
  const auto& t = run.session->tracks();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].channels, (ChannelPair{0, 1}));
  EXPECT_EQ(t[1].channels, (ChannelPair{2, 3}));
  EXPECT_EQ(frames, (std::vector<std::pair<int, std::string>>{{0, "abc"}, {3, "wxyz"}}));
  run.finish();
}

TEST(ClientSession, OnDescribedChoosesTracksAndOrder) {
  std::string url;
  Harness run([&](const RtspRequest& r) { return happy(url, r); });
  url = run.options.url;
  run.handlers.on_described =
      [](const SessionDescription& d) -> core::Result<std::vector<std::size_t>> {
    EXPECT_EQ(d.tracks.size(), 2u);
    return std::vector<std::size_t>{1};
  };
  run.go();
  ASSERT_EQ(run.playing, 1);
  ASSERT_EQ(run.session->tracks().size(), 1u);
  EXPECT_EQ(run.session->tracks()[0].index, 1u);
  EXPECT_EQ(run.ports_asked, (std::vector<std::size_t>{1}));
  ASSERT_EQ(run.server->requests.size(), 3u);
  EXPECT_EQ(run.server->requests[1].url, url + "/trackID=1");
  EXPECT_FALSE(run.server->requests[1].headers.contains(kFeedbackHeader));
  run.finish();
}

// A refusal at each step ends the session with that step and status, and nothing after it is
// sent.
struct RefusalCase {
  const char* name;
  RtspMethod method;
  int nth;  // refuse the nth request of that method (0-based)
  int status;
  SessionStep step;
  std::size_t requests;  // requests the server sees in all
};

class ClientSessionRefusal : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(ClientSessionRefusal, EndsWithStepAndStatus) {
  const RefusalCase c = GetParam();
  std::string url;
  int seen = 0;
  Harness run([&](const RtspRequest& r) {
    if (r.method == c.method && seen++ == c.nth) return refuse(r, c.status);
    return happy(url, r);
  });
  url = run.options.url;
  run.go();
  EXPECT_EQ(run.playing, 0);
  ASSERT_TRUE(run.failed.has_value());
  EXPECT_EQ(run.failures, 1);
  EXPECT_EQ(run.failed->step, c.step);
  EXPECT_EQ(run.failed->status, c.status);
  EXPECT_EQ(run.failed->detail, reason_phrase(c.status));
  EXPECT_EQ(run.server->requests.size(), c.requests);
  EXPECT_FALSE(run.session->playing());
  run.finish();
}

INSTANTIATE_TEST_SUITE_P(
    EachStep, ClientSessionRefusal,
    ::testing::Values(
        RefusalCase{"Describe404", RtspMethod::kDescribe, 0, 404, SessionStep::kDescribe, 1},
        RefusalCase{"FirstSetup461", RtspMethod::kSetup, 0, 461, SessionStep::kSetup, 2},
        RefusalCase{"SecondSetup453", RtspMethod::kSetup, 1, 453, SessionStep::kSetup, 3},
        RefusalCase{"Play455", RtspMethod::kPlay, 0, 455, SessionStep::kPlay, 4}),
    [](const ::testing::TestParamInfo<RefusalCase>& i) { return std::string(i.param.name); });

TEST(ClientSession, MalformedSdpFailsDescribe) {
  Harness run([](const RtspRequest& r) {
    RtspResponse resp = make_response(200, r.cseq);
    resp.set_body("application/sdp", "v=0\r\nm=video not-a-port RTP/AVP 96\r\n");
    return Action{resp, false};
  });
  run.go();
  ASSERT_TRUE(run.failed.has_value());
  EXPECT_EQ(run.failed->step, SessionStep::kDescribe);
  EXPECT_EQ(run.failed->status, 0);
  EXPECT_EQ(run.failed->detail.rfind("SDP: ", 0), 0u) << run.failed->detail;
  EXPECT_EQ(run.server->requests.size(), 1u);
  EXPECT_TRUE(run.ports_asked.empty());
  run.finish();
}

TEST(ClientSession, SetupReplyWithoutServerPortFails) {
  std::string url;
  Harness run([&](const RtspRequest& r) {
    if (r.method != RtspMethod::kSetup) return happy(url, r);
    RtspResponse resp = make_response(200, r.cseq);
    resp.headers.set("Transport", "RTP/AVP;unicast;client_port=40000-40001");
    return Action{resp, false};
  });
  url = run.options.url;
  run.go();
  ASSERT_TRUE(run.failed.has_value());
  EXPECT_EQ(run.failed->step, SessionStep::kSetup);
  EXPECT_EQ(run.failed->detail, "reply without server_port");
  run.finish();
}

TEST(ClientSession, OwnerErrorsEndTheSession) {
  std::string url;
  {
    Harness run([&](const RtspRequest& r) { return happy(url, r); });
    url = run.options.url;
    run.handlers.on_described =
        [](const SessionDescription&) -> core::Result<std::vector<std::size_t>> {
      return core::make_error("the stream has no video track");
    };
    run.go();
    ASSERT_TRUE(run.failed.has_value());
    EXPECT_EQ(run.failed->message(), "DESCRIBE: the stream has no video track");
    run.finish();
  }
  {
    Harness run([&](const RtspRequest& r) { return happy(url, r); });
    url = run.options.url;
    run.handlers.client_ports = [](const SessionTrack&) -> core::Result<PortPair> {
      return core::make_error("no free UDP port pair");
    };
    run.go();
    ASSERT_TRUE(run.failed.has_value());
    EXPECT_EQ(run.failed->message(), "SETUP: ports: no free UDP port pair");
    EXPECT_EQ(run.server->requests.size(), 1u);
    run.finish();
  }
}

TEST(ClientSession, SilentServerTimesOut) {
  std::string url;
  Harness run([&](const RtspRequest& r) {
    if (r.method == RtspMethod::kSetup) return Action{};  // never answers
    return happy(url, r);
  });
  url = run.options.url;
  run.options.request_timeout_ms = 50;
  run.go();
  ASSERT_TRUE(run.failed.has_value());
  EXPECT_EQ(run.failed->step, SessionStep::kTimeout);
  EXPECT_EQ(run.failed->detail, "no answer to SETUP");
  EXPECT_EQ(run.failures, 1);
  run.finish();
}

TEST(ClientSession, ServerHangingUpMidHandshakeFailsThatStep) {
  Harness run([](const RtspRequest&) { return Action{std::nullopt, true}; });
  run.go();
  ASSERT_TRUE(run.failed.has_value());
  EXPECT_EQ(run.failed->step, SessionStep::kDescribe);
  EXPECT_EQ(run.failed->status, 0);
  EXPECT_NE(run.failed->detail.find("closed"), std::string::npos) << run.failed->detail;
  EXPECT_EQ(run.failures, 1);
  run.finish();
}

TEST(ClientSession, ServerHangingUpWhilePlayingIsReportedAsClosed) {
  std::string url;
  Harness run([&](const RtspRequest& r) { return happy(url, r); });
  url = run.options.url;
  run.go();
  ASSERT_EQ(run.playing, 1);
  run.server->hang_up();
  run.loop.run();
  ASSERT_TRUE(run.failed.has_value());
  EXPECT_EQ(run.failed->step, SessionStep::kClosed);
  EXPECT_EQ(run.failed->detail, "by the server");
  EXPECT_FALSE(run.session->playing());
  run.finish();
}

TEST(ClientSession, NothingListeningFailsConnect) {
  net::EventLoop loop;
  std::optional<SessionError> failed;
  {
    // A port that was free a moment ago: bind, read it, close.
    net::SocketAddress addr;
    {
      auto l = net::TcpListener::listen(loop, net::SocketAddress::loopback_v4(0),
                                        [](std::unique_ptr<net::TcpConnection>) {});
      ASSERT_TRUE(l.ok());
      addr = (*l)->local_address();
    }
    ClientSessionOptions o;
    o.url = "rtsp://127.0.0.1:" + std::to_string(addr.port()) + "/x";
    ClientSession::Handlers h;
    h.on_failed = [&](const SessionError& e) {
      failed = e;
      loop.stop();
    };
    ClientSession s(loop, o, h);
    s.start();
    loop.run();
  }
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->step, SessionStep::kConnect);
  expect_clean_close(loop);
}

TEST(ClientSession, BadUrlFailsAtStart) {
  net::EventLoop loop;
  std::optional<SessionError> failed;
  {
    ClientSessionOptions o;
    o.url = "rtsp://example.com/x";
    ClientSession::Handlers h;
    h.on_failed = [&](const SessionError& e) { failed = e; };
    ClientSession s(loop, o, h);
    s.start();
    ASSERT_TRUE(failed.has_value()) << "reported before start() returns";
  }
  EXPECT_EQ(failed->step, SessionStep::kConnect);
  EXPECT_EQ(failed->detail.rfind("server host must be an IP address", 0), 0u);
  expect_clean_close(loop);
}

TEST(ClientSession, KeepAlivesWhilePlayingAndARefusedOneFails) {
  std::string url;
  int keepalives = 0;
  Harness run([&](const RtspRequest& r) {
    if (r.method == RtspMethod::kGetParameter && ++keepalives == 3) return refuse(r, 454);
    return happy(url, r);
  });
  url = run.options.url;
  run.options.keepalive_interval_ms = 5;
  run.go();
  ASSERT_EQ(run.playing, 1);
  run.loop.run();  // until the third keep-alive is refused
  ASSERT_TRUE(run.failed.has_value());
  EXPECT_EQ(run.failed->step, SessionStep::kKeepAlive);
  EXPECT_EQ(run.failed->status, 454);
  EXPECT_EQ(keepalives, 3);
  const auto& q = run.server->requests;
  ASSERT_EQ(q.size(), 7u);
  for (std::size_t i = 4; i < 7; ++i) {
    EXPECT_EQ(q[i].method, RtspMethod::kGetParameter);
    EXPECT_EQ(q[i].url, url);
    EXPECT_EQ(q[i].headers.get("Session").value_or(""), "12345678");
  }
  run.finish();
}

TEST(ClientSession, UnansweredTeardownEndsAfterTheTimeout) {
  std::string url;
  Harness run([&](const RtspRequest& r) {
    if (r.method == RtspMethod::kTeardown) return Action{};
    return happy(url, r);
  });
  url = run.options.url;
  run.options.request_timeout_ms = 50;
  run.go();
  ASSERT_EQ(run.playing, 1);
  int done = 0;
  run.session->teardown([&] {
    ++done;
    run.end();
  });
  run.loop.run();
  EXPECT_EQ(done, 1);
  EXPECT_EQ(run.failures, 0) << "no on_failed after teardown()";
  run.finish();
}

TEST(ClientSession, TeardownBeforePlayingClosesAtOnce) {
  Harness run([](const RtspRequest&) { return Action{}; });
  run.session = std::make_unique<ClientSession>(run.loop, run.options, run.handlers);
  run.session->start();
  int done = 0;
  run.session->teardown([&] { ++done; });
  EXPECT_EQ(done, 1);
  EXPECT_EQ(run.failures, 0);
  run.finish();
}

TEST(ClientSession, HandlersMayDestroyTheSession) {
  std::string url;
  for (const SessionStep step : {SessionStep::kSetup, SessionStep::kClosed}) {
    Harness run([&](const RtspRequest& r) {
      if (step == SessionStep::kSetup && r.method == RtspMethod::kSetup) return refuse(r, 461);
      return happy(url, r);
    });
    url = run.options.url;
    run.handlers.on_failed = [&run](const SessionError&) {
      ++run.failures;
      run.session.reset();
      run.end();
    };
    run.handlers.on_playing = [&run] { run.server->hang_up(); };
    run.go();
    EXPECT_EQ(run.failures, 1);
    EXPECT_EQ(run.session, nullptr);
    run.finish();
  }
}

}  // namespace
}  // namespace predrop::rtsp

// Structure-aware fuzz target for the RTSP client's state machine (rtsp/src/client_session.cpp,
// what predrop-client and every predrop-load client run) against a hostile server: a real
// loopback TCP listener on a real libuv loop answers each request the client sends with what the
// input decides — a reply built from parts (any status, a right, wrong or missing CSeq, Session
// ids and timeouts good and bad, Transport values from parts or raw bytes, SDP bodies of 0..6
// media from good and bad lines, RTP-Info good and bad, a Content-Length that lies), raw bytes,
// an interleaved "$" frame before the reply, an unsolicited extra reply, silence (the request
// timeout), or a hang-up. The owner's handlers also act from the input: they choose tracks, refuse
// ports, tear down, close, or destroy the session from inside a callback.
//
// Properties checked, beyond "no crash, no leak, no UB, no exception out of a callback": a
// session fails at most once and plays at most once; a failure after PLAY names a step of the
// playing state (keep-alive, timeout, closed); a played session has tracks with the ports the
// owner gave; a teardown's callback runs exactly once; every run ends (watchdog) and the loop
// closes with no handle left open.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_reader.hpp"
#include "predrop/core/log.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/tcp.hpp"
#include "predrop/rtsp/client_session.hpp"
#include "predrop/rtsp/rtsp_message.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace {

using namespace predrop;
using fuzz::Reader;

constexpr std::uint64_t kRequestTimeoutMs = 10;
constexpr std::uint64_t kWatchdogMs = 5'000;

std::string good_key_b64() {
  std::vector<std::uint8_t> k(wire::key_salt_size(wire::SrtpSuite::AesCm128HmacSha1_80));
  for (std::size_t i = 0; i < k.size(); ++i) {
    k[i] = static_cast<std::uint8_t>(i);
  }
  return wire::base64_encode(k);
}

// SDP lines a hostile or merely odd server may send; index 0.. are chosen by the input.
const std::vector<std::string>& sdp_lines() {
  static const std::vector<std::string> lines = {
      "v=0",
      "o=- 0 0 IN IP4 127.0.0.1",
      "s=x",
      "t=0 0",
      "c=IN IP4 0.0.0.0",
      "a=control:*",
      "m=video 0 RTP/SAVP 96",
      "m=audio 0 RTP/AVP 97",
      "m=application 0 RTP/SAVP 98",
      "m=video 0 RTP/SAVP",
      "a=rtpmap:96 H264/90000",
      "a=rtpmap:97 MPEG4-GENERIC/48000/2",
      "a=rtpmap:96 H264/0",
      "a=control:trackID=0",
      "a=control:trackID=1",
      "a=control:rtsp://127.0.0.9/elsewhere",
      "a=control:",
      "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + good_key_b64(),
      "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:!!!!",
      "a=crypto:1 AEAD_AES_128_GCM inline:" + good_key_b64(),
      "a=crypto:4294967296 NOT_A_SUITE inline:x",
      "a=extmap:3 " + std::string(rtsp::kStageExtensionUri),
      "a=extmap:5 " + std::string(rtsp::kAbsSendTimeUri),
      "a=extmap:300 " + std::string(rtsp::kStageExtensionUri),
      "a=extmap:0 " + std::string(rtsp::kAbsSendTimeUri),
      "a=x-predrop-block:duration_us=1000000;payload=1200",
      "a=x-predrop-block:duration_us=-1;payload=99999999999",
      "a=fmtp:96 packetization-mode=1",
      "garbage without equals",
  };
  return lines;
}

// A well-formed description of `tracks` media, as a predrop server writes it.
std::string good_sdp(std::size_t tracks) {
  std::string s = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=x\r\nt=0 0\r\na=control:*\r\n";
  s += "a=x-predrop-block:duration_us=1000000;payload=1200\r\n";
  for (std::size_t i = 0; i < tracks; ++i) {
    const bool video = i % 2 == 0;
    s += video ? "m=video 0 RTP/SAVP 96\r\na=rtpmap:96 H264/90000\r\n"
               : "m=audio 0 RTP/SAVP 97\r\na=rtpmap:97 MPEG4-GENERIC/48000/2\r\n";
    s += "a=control:trackID=" + std::to_string(i) + "\r\n";
    s += "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + good_key_b64() + "\r\n";
    if (video) s += "a=extmap:3 " + std::string(rtsp::kStageExtensionUri) + "\r\n";
  }
  return s;
}

// The server's side of one request: the reply text the input builds for it.
std::string build_reply(Reader& in, const rtsp::RtspRequest& req) {
  int status = 200;
  switch (in.u8() % 8) {
    case 4:
      status = 404;
      break;
    case 5:
      status = 454;
      break;
    case 6:
      status = 302;
      break;
    case 7:
      status = in.u16() % 1000;
      break;
    default:
      break;
  }
  std::string head = "RTSP/1.0 " + std::to_string(status) + " Whatever\r\n";
  switch (in.u8() % 4) {
    case 2:
      break;  // no CSeq
    case 3:
      head += "CSeq: " + std::to_string(req.cseq + 1) + "\r\n";
      break;
    default:
      head += "CSeq: " + std::to_string(req.cseq) + "\r\n";
      break;
  }
  std::string body;
  switch (req.method) {
    case rtsp::RtspMethod::kDescribe:
      switch (in.u8() % 4) {
        case 0:
          body = good_sdp(1 + in.u8() % 3);
          break;
        case 1: {
          const auto& lines = sdp_lines();
          const std::size_t n = in.u8() % 24;
          for (std::size_t i = 0; i < n; ++i) {
            body += lines[in.u8() % lines.size()] + "\r\n";
          }
          break;
        }
        case 2:
          body = std::string(in.bytes(in.u8()));
          break;
        default:
          break;
      }
      if (in.u8() % 4 != 3) head += "Content-Base: " + req.url + "/\r\n";
      if (!body.empty()) head += "Content-Type: application/sdp\r\n";
      break;
    case rtsp::RtspMethod::kSetup: {
      const std::string offer(req.headers.get("Transport").value_or(""));
      switch (in.u8() % 5) {
        case 0:
          head += "Transport: " + offer + ";server_port=6970-6971;ssrc=BEEF\r\n";
          break;
        case 1:
          head += "Transport: " + offer + ";server_port=0-65535\r\n";
          break;
        case 2:
          head += "Transport: RTP/AVP/TCP;interleaved=0-1\r\n";
          break;
        case 3:
          head += "Transport: " + std::string(in.bytes(in.u8() % 64)) + "\r\n";
          break;
        default:
          break;  // none
      }
      switch (in.u8() % 5) {
        case 0:
          head += "Session: 12345678;timeout=60\r\n";
          break;
        case 1:
          head += "Session: 87654321\r\n";
          break;
        case 2:
          head += "Session: 12345678;timeout=99999999999\r\n";
          break;
        case 3:
          head += "Session: " + std::string(in.bytes(in.u8() % 64)) + "\r\n";
          break;
        default:
          break;  // none
      }
      break;
    }
    case rtsp::RtspMethod::kPlay:
      switch (in.u8() % 3) {
        case 0:
          head += "RTP-Info: url=" + req.url + "/trackID=0;seq=1;rtptime=2\r\n";
          break;
        case 1:
          head += "RTP-Info: " + std::string(in.bytes(in.u8() % 64)) + "\r\n";
          break;
        default:
          break;
      }
      break;
    default:
      break;
  }
  switch (in.u8() % 4) {
    case 2:
      head += "Content-Length: " + std::to_string(body.size() + in.u8()) + "\r\n";
      break;
    case 3:
      head += "Content-Length: -5\r\n";
      break;
    default:
      if (!body.empty()) head += "Content-Length: " + std::to_string(body.size()) + "\r\n";
      break;
  }
  return head + "\r\n" + body;
}

// One RTSP connection at a time, answered as the input says.
class HostileServer {
 public:
  HostileServer(net::EventLoop& loop, Reader& in) : in_(in) {
    auto l = net::TcpListener::listen(
        loop, net::SocketAddress::loopback_v4(0),
        [this](std::unique_ptr<net::TcpConnection> c) { on_accept(std::move(c)); });
    PREDROP_FUZZ_CHECK(l.ok());
    listener_ = std::move(l.value());
  }

  std::string url() const {
    return "rtsp://127.0.0.1:" + std::to_string(listener_->local_address().port()) + "/x";
  }
  void shut() {
    conn_.reset();
    listener_.reset();
  }

 private:
  void on_accept(std::unique_ptr<net::TcpConnection> c) {
    conn_ = std::move(c);
    parser_ = rtsp::RtspRequestParser();
    const auto st = conn_->start([this](std::span<const std::uint8_t> d) { on_data(d); },
                                 [this](const core::Status&) { conn_.reset(); });
    PREDROP_FUZZ_CHECK(st.ok());
  }

  void on_data(std::span<const std::uint8_t> d) {
    for (auto ev = parser_.feed(d); ev != rtsp::RtspParseEvent::kNeedMore; ev = parser_.next()) {
      // The client is ours: what it sends must always parse.
      PREDROP_FUZZ_CHECK(ev == rtsp::RtspParseEvent::kMessage);
      if (!answer(parser_.request())) return;
    }
  }

  // False when the connection is gone (hung up).
  bool answer(const rtsp::RtspRequest& req) {
    if (in_.empty()) return true;  // an exhausted script is a silent server: the client times out
    switch (in_.u8() % 8) {
      case 1:
        (void)conn_->write(std::string(in_.bytes(in_.u8())));
        return true;
      case 2:
        return true;  // silence
      case 3:
        conn_->close_after_writes();
        return false;
      case 4: {  // an interleaved frame first, on any channel, with any length
        std::string frame = "$";
        frame += static_cast<char>(in_.u8());
        const std::uint16_t len = in_.u16() % 300;
        frame += static_cast<char>(len >> 8);
        frame += static_cast<char>(len & 0xff);
        frame += std::string(in_.bytes(len));
        (void)conn_->write(std::move(frame));
        break;
      }
      case 5: {  // an unsolicited reply with a later CSeq
        (void)conn_->write("RTSP/1.0 200 OK\r\nCSeq: " + std::to_string(req.cseq + 7) + "\r\n\r\n");
        break;
      }
      case 6: {
        (void)conn_->write(build_reply(in_, req));
        conn_->close_after_writes();
        return false;
      }
      default:
        break;
    }
    (void)conn_->write(build_reply(in_, req));
    return true;
  }

  Reader& in_;
  std::unique_ptr<net::TcpListener> listener_;
  std::unique_ptr<net::TcpConnection> conn_;
  rtsp::RtspRequestParser parser_;
};

// One session against the hostile server, with the owner's handlers acting from the input.
struct Run {
  Reader& in;
  net::EventLoop loop;
  HostileServer server;
  std::unique_ptr<rtsp::ClientSession> session;
  int failures = 0;
  int playing = 0;
  int teardowns_asked = 0;
  int teardowns_done = 0;
  bool done = false;

  explicit Run(Reader& input) : in(input), server(loop, input) {}

  void end() {
    done = true;
    loop.stop();
  }

  rtsp::ClientSession::Handlers handlers() {
    rtsp::ClientSession::Handlers h;
    h.on_described =
        [this](const rtsp::SessionDescription& d) -> core::Result<std::vector<std::size_t>> {
      switch (in.u8() % 5) {
        case 1: {  // the last track only
          if (d.tracks.empty()) return std::vector<std::size_t>{};
          return std::vector<std::size_t>{d.tracks.size() - 1};
        }
        case 2:
          return core::Error{"owner refuses"};
        case 3:
          session.reset();  // destroyed from inside its own callback
          end();
          return core::Error{"destroyed"};
        case 4:
          return std::vector<std::size_t>{};  // none: the session must fail cleanly
        default: {                            // every track
          std::vector<std::size_t> all(d.tracks.size());
          for (std::size_t i = 0; i < all.size(); ++i) {
            all[i] = i;
          }
          return all;
        }
      }
    };
    h.client_ports = [this](const rtsp::SessionTrack& t) -> core::Result<rtsp::PortPair> {
      switch (in.u8() % 6) {
        case 4:
          return core::Error{"no ports"};
        case 5:
          session.reset();
          end();
          return core::Error{"destroyed"};
        default: {
          const auto base = static_cast<std::uint16_t>(40000 + 2 * t.index);
          return rtsp::PortPair{base, static_cast<std::uint16_t>(base + 1)};
        }
      }
    };
    h.on_playing = [this] {
      ++playing;
      PREDROP_FUZZ_CHECK(playing == 1);
      PREDROP_FUZZ_CHECK(failures == 0);
      PREDROP_FUZZ_CHECK(session && session->playing());
      PREDROP_FUZZ_CHECK(!session->tracks().empty());
      for (const auto& t : session->tracks()) {
        PREDROP_FUZZ_CHECK(t.client_port.rtp == 40000 + 2 * t.index);
      }
      switch (in.u8() % 4) {
        case 1:
          ++teardowns_asked;
          session->teardown([this] {
            ++teardowns_done;
            end();
          });
          break;
        case 2:
          session->close();
          end();
          break;
        case 3:
          session.reset();
          end();
          break;
        default:
          break;  // keep playing: keep-alives until the script runs dry
      }
    };
    h.on_failed = [this](const rtsp::SessionError& e) {
      ++failures;
      PREDROP_FUZZ_CHECK(failures == 1);
      if (playing > 0) {
        PREDROP_FUZZ_CHECK(e.step == rtsp::SessionStep::kKeepAlive ||
                           e.step == rtsp::SessionStep::kTimeout ||
                           e.step == rtsp::SessionStep::kClosed);
      }
      if (std::getenv("PREDROP_FUZZ_VERBOSE") != nullptr) {
        std::fprintf(stderr, "failed: %s\n", e.message().c_str());
      }
      if (session) PREDROP_FUZZ_CHECK(!session->playing());
      if (in.u8() % 2 == 1) session.reset();
      end();
    };
    return h;
  }

  void go() {
    rtsp::ClientSessionOptions o;
    o.url = server.url();
    o.feedback = (in.u8() & 1) != 0;
    o.request_timeout_ms = kRequestTimeoutMs;
    o.keepalive_interval_ms = 1 + in.u8() % 3;
    session = std::make_unique<rtsp::ClientSession>(loop, o, handlers());
    net::Timer watchdog(loop, [] { PREDROP_FUZZ_CHECK(!"the session never ended"); });
    watchdog.start(kWatchdogMs);
    watchdog.keep_loop_alive(false);
    session->start();
    if (!done) loop.run();
    // A teardown asked for and not interrupted by a destroy ends exactly once.
    if (teardowns_asked > 0 && session) PREDROP_FUZZ_CHECK(teardowns_done == 1);
  }

  void finish() {
    session.reset();
    server.shut();
    const auto st = loop.close();
    PREDROP_FUZZ_CHECK(st.ok());
    PREDROP_FUZZ_CHECK(loop.forced_closes() == 0);
    PREDROP_FUZZ_CHECK(loop.handle_count() == 0);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = [] {
    if (std::getenv("PREDROP_FUZZ_VERBOSE") == nullptr) core::set_log_level(core::LogLevel::kOff);
    return true;
  }();
  (void)quiet;
  Reader in{data, size};
  Run run(in);
  run.go();
  if (std::getenv("PREDROP_FUZZ_VERBOSE") != nullptr) {
    std::fprintf(stderr, "played %d failed %d teardowns %d/%d\n", run.playing, run.failures,
                 run.teardowns_done, run.teardowns_asked);
  }
  run.finish();
  return 0;
}

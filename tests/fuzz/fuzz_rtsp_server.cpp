// Structure-aware fuzz target for the stream server's RTSP state machine (server/src/
// stream_server.cpp): a real StreamServer on a FakeClock, driven through its socketless entry
// points (attach_connection/receive/take_output/receive_rtcp) by a sequence of operations decoded
// from the input: connections from three client addresses opening and hanging up, RTSP requests
// built from parts (every method, good and bad URLs, known, foreign and garbage Session ids,
// Transport variants, X-Predrop-Feedback), raw bytes, the clock moving on with the pacer and
// housekeeping run, PDFB reports and raw datagrams on the RTCP path, interleaved sessions
// (RTP/AVP/TCP) and "$" frames from clients on any channel with true, overlong or truncated
// lengths, replies read or left unread (so back-pressure engages), and one-shot injected
// handler faults.
//
// Properties checked after every operation, beyond "no crash, no leak, no UB, no exception out
// of a callback": the session cap holds; a connection never tracks more sessions than exist;
// the connection count stays within the cap plus its allowance; every byte the server writes
// parses as RTSP responses and interleaved frames; /metrics never shows a session id.
//
// The clients' addresses are 127.0.0.2..4: media go to loopback ports where nothing listens,
// so nothing leaves the machine (the test bed's rule: loopback or namespaces of our own only). The
// media file: $PREDROP_FUZZ_MEDIA, else the test sample.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_reader.hpp"
#include "predrop/chain/feedback.hpp"
#include "predrop/core/log.hpp"
#include "predrop/core/reception_meter.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/rtsp/rtsp_message.hpp"
#include "predrop/server/server_setup.hpp"
#include "predrop/server/stream_server.hpp"

namespace {

using namespace predrop;

class FuzzClock final : public net::Clock {
 public:
  std::uint64_t now_us() const override { return now_; }
  void advance(std::uint64_t us) { now_ += us; }

 private:
  std::uint64_t now_ = 1'000'000;
};

using fuzz::Reader;

struct Globals {
  net::SrtpLibraryGuard srtp;
  net::EventLoop loop;
  std::shared_ptr<const media::MediaFile> media;
  Globals() {
    // Injected faults would log on every input; the log is for PREDROP_FUZZ_VERBOSE runs.
    if (std::getenv("PREDROP_FUZZ_VERBOSE") == nullptr) core::set_log_level(core::LogLevel::kOff);
    const char* env = std::getenv("PREDROP_FUZZ_MEDIA");
    media::PacketizeOptions po;
    po.block = {media::BlockSize::Unit::kDuration, 1'000'000};
    auto m = media::MediaFile::open(env != nullptr ? env : PREDROP_TEST_SAMPLE, po);
    if (!m) {
      std::fprintf(stderr, "fuzz_rtsp_server: %s\n", m.error().message.c_str());
      std::abort();
    }
    media = m.value();
  }
};

bool verbose() {
  static const bool v = std::getenv("PREDROP_FUZZ_VERBOSE") != nullptr;
  return v;
}

Globals& globals() {
  static Globals g;
  return g;
}

constexpr std::size_t kMaxSessions = 6;
constexpr std::size_t kMaxConnections = 4;
constexpr std::size_t kOverLimitAllowance = 16;  // StreamServer's floor for small limits
const char* const kMethods[] = {"OPTIONS",  "DESCRIBE",      "SETUP",    "PLAY",          "PAUSE",
                                "TEARDOWN", "GET_PARAMETER", "ANNOUNCE", "SET_PARAMETER", "FROB"};

struct Client {
  std::uint64_t id = 0;
  int ip = 0;
  rtsp::RtspResponseParser parser;
};

class Harness {
 public:
  Harness(Reader& in) : in_(in) {
    const std::uint8_t flags = in_.u8();
    server::StreamServerOptions o;
    o.rtsp_listen = net::SocketAddress::loopback_v4(0);
    o.bind_ip = "127.0.0.1";
    o.streams.push_back({"s", globals().media});
    o.policy.policy = (flags & 4) != 0 ? "adaptive" : "basic";
    o.srtp = (flags & 1) != 0 ? std::optional(wire::SrtpSuite::AesCm128HmacSha1_80) : std::nullopt;
    o.paced = (flags & 2) == 0;
    o.loop = (flags & 8) != 0;
    o.max_sessions = kMaxSessions;
    o.max_sessions_per_address = 2;
    o.max_connections = kMaxConnections;
    o.max_write_queue_bytes = 8 * 1024;
    o.session_timeout_s = 4;
    o.rtsp_idle_timeout_s = 2;
    o.report_timeout_us = 1'000'000;
    o.block_attribute = "duration_us=1000000;payload=1400";
    o.fault_injection = [this](server::CallbackKind k) {
      if (armed_ == static_cast<int>(k)) {
        armed_ = -1;
        throw std::runtime_error("fuzz: injected fault");
      }
    };
    srv_ = std::make_unique<server::StreamServer>(globals().loop, clock_, std::move(o));
    srv_->start();
  }
  ~Harness() {
    srv_->stop();
    srv_.reset();
    globals().loop.run_nowait();  // close callbacks of the server's handles
  }

  void run() {
    for (int ops = 0; ops < 64 && !in_.empty(); ++ops) {
      step();
      check();
    }
    for (auto& c : clients_)
      read(c);
    const std::string metrics = server::render_metrics(*srv_);
    for (const auto& id : sessions_)
      PREDROP_FUZZ_CHECK(metrics.find(id) == std::string::npos);
    if (verbose()) {
      // For writing seeds: how far an input got.
      const server::ServerStats& s = srv_->stats();
      const std::size_t reports = most_reports_, sent = most_packets_;
      std::fprintf(stderr,
                   "ops %d requests %llu sessions %llu playing %zu packets %zu reports %zu "
                   "foreign %llu paused %llu backlog %llu exceptions %llu/%llu/%llu\n",
                   ops_, static_cast<unsigned long long>(s.requests),
                   static_cast<unsigned long long>(s.sessions_created), most_playing_, sent,
                   reports, static_cast<unsigned long long>(s.session_requests_foreign),
                   static_cast<unsigned long long>(s.connections_paused),
                   static_cast<unsigned long long>(s.connections_closed_backlog),
                   static_cast<unsigned long long>(
                       srv_->callback_guard().count(server::CallbackKind::kRtsp)),
                   static_cast<unsigned long long>(
                       srv_->callback_guard().count(server::CallbackKind::kRtcp)),
                   static_cast<unsigned long long>(
                       srv_->callback_guard().count(server::CallbackKind::kTimer)));
    }
  }

 private:
  static net::SocketAddress address(int ip, std::uint16_t port) {
    return net::SocketAddress::v4({127, 0, 0, static_cast<std::uint8_t>(2 + ip)}, port);
  }
  Client* pick() {
    if (clients_.empty()) return nullptr;
    return &clients_[in_.u8() % clients_.size()];
  }
  std::string session_header() {
    switch (in_.u8() % 5) {
      case 0:
        return {};
      case 1:
      case 2:
        if (sessions_.empty()) return {};
        return "Session: " + sessions_[in_.u8() % sessions_.size()] + "\r\n";
      case 3:
        if (sessions_.empty()) return "Session: 0123456789ABCDEF\r\n";
        return "Session: " + sessions_[in_.u8() % sessions_.size()] + ";timeout=60\r\n";
      default:
        const std::size_t len = in_.u8() % 40;
        return "Session: " + std::string(in_.bytes(len)) + "\r\n";
    }
  }
  std::string transport(int ip) {
    const std::uint16_t port = static_cast<std::uint16_t>(30000 + 2 * (in_.u8() % 8));
    const std::string ports = std::to_string(port) + "-" + std::to_string(port + 1);
    switch (in_.u8() % 6) {
      case 0:
        return {};
      case 1:
      case 2:
        rtcp_from_.push_back(address(ip, static_cast<std::uint16_t>(port + 1)));
        return "Transport: RTP/SAVP;unicast;client_port=" + ports + "\r\n";
      case 3:
        rtcp_from_.push_back(address(ip, static_cast<std::uint16_t>(port + 1)));
        return "Transport: RTP/AVP;unicast;destination=127.0.0.1;client_port=" + ports + "\r\n";
      case 4:
        // Interleaved on the RTSP connection: channels as asked, none, or a clash.
        switch (in_.u8() % 3) {
          case 0:
            return "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n";
          case 1:
            return "Transport: RTP/AVP/TCP;unicast\r\n";
          default:
            return "Transport: RTP/AVP/TCP;unicast;interleaved=" + std::to_string(in_.u8()) + "-" +
                   std::to_string(in_.u8()) + "\r\n";
        }
      default: {
        const std::size_t len = in_.u8() % 48;
        return "Transport: " + std::string(in_.bytes(len)) + "\r\n";
      }
    }
  }
  std::string url() {
    switch (in_.u8() % 7) {
      case 0:
        return "rtsp://127.0.0.1/s";
      case 1:
        return "rtsp://127.0.0.1/s/trackID=0";
      case 2:
        return "rtsp://127.0.0.1/s/trackID=1";
      case 3:
        return "rtsp://127.0.0.1/s/trackID=7";
      case 4:
        return "*";
      case 5:
        return "rtsp://127.0.0.1/none";
      default: {
        const std::size_t len = in_.u8() % 24;
        return std::string(in_.bytes(len));
      }
    }
  }
  // Feeds `text` in up to three pieces.
  void feed(Client& c, std::string_view text) {
    std::size_t cut1 = text.empty() ? 0 : in_.u8() % (text.size() + 1);
    std::size_t cut2 = cut1 + (text.size() == cut1 ? 0 : in_.u8() % (text.size() - cut1 + 1));
    for (auto piece : {text.substr(0, cut1), text.substr(cut1, cut2 - cut1), text.substr(cut2)}) {
      if (!piece.empty()) {
        srv_->receive(c.id,
                      std::span(reinterpret_cast<const std::uint8_t*>(piece.data()), piece.size()));
      }
    }
  }
  void request(Client& c, std::string_view method) {
    // The parts in a fixed order of reading (operands of + are not sequenced).
    const std::string target = url();
    const std::string session = session_header();
    std::string text = std::string(method) + " " + target +
                       " RTSP/1.0\r\nCSeq: " + std::to_string(++cseq_) + "\r\n" + session;
    if (method == "SETUP" || (in_.u8() & 7) == 0) text += transport(c.ip);
    if ((in_.u8() & 1) != 0) text += "X-Predrop-Feedback: 1\r\n";
    text += "\r\n";
    feed(c, text);
  }
  // Reads what the server wrote: it must parse as responses; Session ids are remembered.
  void read(Client& c) {
    const std::string out = srv_->take_output(c.id);
    // A read's worth at a time, as from a socket: an interleaved session's output (a burst of
    // media) can exceed what one parser buffers at once.
    constexpr std::size_t kRead = 16 * 1024;
    for (std::size_t at = 0; at < out.size(); at += kRead) {
      read_piece(c, std::string_view(out).substr(at, kRead));
    }
  }
  void read_piece(Client& c, std::string_view out) {
    for (auto ev = c.parser.feed(out); ev != rtsp::RtspParseEvent::kNeedMore;
         ev = c.parser.next()) {
      // Media of interleaved (RTP/AVP/TCP) sessions comes as "$" frames between the replies.
      if (ev == rtsp::RtspParseEvent::kInterleaved) continue;
      PREDROP_FUZZ_CHECK(ev == rtsp::RtspParseEvent::kMessage);
      const rtsp::RtspResponse r = c.parser.take_response();
      if (auto s = r.headers.get("Session"); s && r.status == 200) {
        const std::string id(s->substr(0, s->find(';')));
        if (sessions_.size() < 32) sessions_.push_back(id);
      }
    }
  }
  void rtcp() {
    net::SocketAddress from =
        rtcp_from_.empty() ? address(0, 30001) : rtcp_from_[in_.u8() % rtcp_from_.size()];
    std::vector<std::uint8_t> datagram;
    if ((in_.u8() & 1) != 0) {
      // A PDFB report in clear (valid when the server runs without SRTP).
      core::StageMeasurement m;
      m.stage = in_.u8() % 8;
      m.reception_period_us = in_.u16() * 100.0;
      m.received = in_.u8();
      m.announced = in_.u8();
      const double psnr = static_cast<double>(in_.u8()) / 4;
      datagram.resize(256);
      auto n = chain::encode_feedback(
          datagram, 0x1234, chain::make_feedback(m, psnr, wire::PdfbMetric::kPsnrDb, 0), nullptr);
      datagram.resize(n.ok() ? *n : 0);
    } else {
      const std::size_t len = in_.u8();
      const std::string_view raw = in_.bytes(len);
      datagram.assign(raw.begin(), raw.end());
    }
    srv_->receive_rtcp(datagram, from);
  }
  // An interleaved frame from the client: an RTCP-looking payload or raw bytes, on a channel
  // of its choice, with a true, an overlong or a truncated length.
  void interleaved(Client& c) {
    const std::uint8_t channel = in_.u8() % 6;
    const std::uint8_t how = in_.u8() % 4;
    std::string payload;
    if ((how & 1) == 0) payload = std::string("\x80\xc9\x00\x01\x00\x00\x12\x34", 8);
    payload += std::string(in_.bytes(in_.u8() % 64));
    std::size_t len = payload.size();
    if (how == 2) len = 0x1000 + in_.u16() % 0xefff;  // longer than any RTCP compound
    std::string f = {'$', static_cast<char>(channel), static_cast<char>(len >> 8),
                     static_cast<char>(len & 0xff)};
    f += payload;
    if (how == 3 && !f.empty()) f.resize(f.size() - 1 - in_.u8() % f.size());  // truncated
    feed(c, f);
  }
  void step() {
    switch (in_.u8() % 13) {
      case 0: {  // a connection opens
        if (clients_.size() >= 8) break;
        Client c;
        c.ip = in_.u8() % 3;
        c.id = srv_->attach_connection(address(c.ip, static_cast<std::uint16_t>(40000 + ops_)));
        if (c.id != 0) clients_.push_back(std::move(c));
        break;
      }
      case 1:  // a client hangs up
        if (Client* c = pick()) {
          srv_->detach_connection(c->id);
          std::erase_if(clients_, [id = c->id](const Client& x) { return x.id == id; });
        }
        break;
      case 2:
      case 3:
        if (Client* c = pick()) request(*c, kMethods[in_.u8() % std::size(kMethods)]);
        break;
      case 4:
        if (Client* c = pick()) {
          const std::size_t len = in_.u8();
          feed(*c, in_.bytes(len));
        }
        break;
      case 5:  // time passes; the pacer runs
        clock_.advance(static_cast<std::uint64_t>(in_.u16()) * 50);
        srv_->run_pacing();
        break;
      case 6:
        srv_->run_housekeeping();
        break;
      case 7:
        rtcp();
        break;
      case 8:
        if (Client* c = pick()) read(*c);
        break;
      case 9:
        armed_ = static_cast<int>(
            server::kServerCallbackKinds[in_.u8() % server::kServerCallbackKinds.size()]);
        break;
      case 10:  // the shortest way to a playing session
        if (Client* c = pick()) {
          feed(*c, "DESCRIBE rtsp://127.0.0.1/s RTSP/1.0\r\nCSeq: 1\r\n\r\n");
          read(*c);
          request(*c, "SETUP");
          read(*c);
          request(*c, "PLAY");
        }
        break;
      case 11:
        srv_->run_pacing();
        break;
      default:  // 12: added after the seeds were written, so that their op codes keep meaning
        if (Client* c = pick()) interleaved(*c);
        break;
    }
    ++ops_;
  }
  void check() {
    if (verbose()) {
      std::size_t reports = 0, sent = 0;
      for (const auto* ss : srv_->sessions()) {
        reports += ss->stats().reports;
        sent += ss->transmitter_stats().packets_sent + ss->transmitter_stats().packets_discarded;
      }
      most_reports_ = std::max(most_reports_, reports);
      most_packets_ = std::max(most_packets_, sent);
      most_playing_ = std::max(most_playing_, srv_->sessions().size());
    }
    PREDROP_FUZZ_CHECK(srv_->session_count() <= kMaxSessions);
    PREDROP_FUZZ_CHECK(srv_->connection_session_refs() <= srv_->session_count());
    PREDROP_FUZZ_CHECK(srv_->connection_count() <= kMaxConnections + kOverLimitAllowance);
  }

  Reader& in_;
  FuzzClock clock_;
  std::unique_ptr<server::StreamServer> srv_;
  std::vector<Client> clients_;
  std::vector<std::string> sessions_;
  std::vector<net::SocketAddress> rtcp_from_;
  std::uint32_t cseq_ = 0;
  int armed_ = -1;
  int ops_ = 0;
  std::size_t most_reports_ = 0, most_packets_ = 0, most_playing_ = 0;  // verbose() only
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  Reader in{data, size};
  Harness h(in);
  h.run();
  return 0;
}

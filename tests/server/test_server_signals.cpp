// Signals of the real predrop-server binary (issue 10 item 6): SIGPIPE is ignored, SIGHUP does
// not end it (it still answers OPTIONS afterwards and says so in its log), and SIGTERM ends it
// with exit code 0 after an RTCP BYE to its client and with the trace flushed. The test is the
// client: RTSP over loopback, and two UDP sockets as its RTP/RTCP ports; it reads the BYE by
// decrypting the server's SRTCP with the key from DESCRIBE. It waits on events only (the server's
// log line, replies, the child's exit), never on a clock. A second test reloads the configuration
// (SIGHUP and POST /api/v1/reload) under a playing session: the session goes on with its policy,
// the next session gets the new one, and a bad file changes nothing.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "predrop/chain/feedback.hpp"
#include "predrop/core/reception_meter.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "predrop/wire/rtcp.hpp"
#include "predrop/wire/sdes_key.hpp"
#include "server_test_util.hpp"

namespace predrop {
namespace {

using test::request_text;
using test::session_of;

// The server as a child process with its stderr on a pipe.
struct ServerProcess {
  pid_t pid = -1;
  int err_fd = -1;
  std::string err;

  void spawn(const std::vector<std::string>& args) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(PREDROP_SERVER_BIN));
      for (const auto& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(PREDROP_SERVER_BIN, argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    err_fd = fds[0];
  }
  // Reads the log until `needle` appears; false at EOF (the server ended).
  bool read_until(std::string_view needle) {
    char buf[4096];
    while (err.find(needle) == std::string::npos) {
      const ssize_t n = ::read(err_fd, buf, sizeof buf);
      if (n <= 0) return false;
      err.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }
  void read_rest() {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(err_fd, buf, sizeof buf)) > 0)
      err.append(buf, static_cast<std::size_t>(n));
  }
  // The process's ignored-signal mask (/proc/<pid>/status SigIgn).
  unsigned long long ignored_signals() const {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(f, line)) {
      if (line.rfind("SigIgn:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
    }
    return 0;
  }
  ~ServerProcess() {
    if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (err_fd >= 0) ::close(err_fd);
  }
};

TEST(ServerSignals, HupIsSurvivedTermSaysByeFlushesAndExitsZero) {
  const std::string trace_path = std::string(PREDROP_TEST_TMP) + "/signals-trace.csv";
  std::remove(trace_path.c_str());
  ServerProcess server;
  server.spawn({"--stream", std::string("sample=") + PREDROP_TEST_SAMPLE, "--listen", "127.0.0.1:0",
                "--loop", "--trace-csv", trace_path, "--log-level", "info"});
  ASSERT_TRUE(server.read_until("/sample (")) << server.err;
  const std::size_t at = server.err.find("serving rtsp://127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << server.err;
  const auto port = static_cast<std::uint16_t>(std::stoi(server.err.substr(at + 25)));
  const auto rtsp_addr = net::SocketAddress::loopback_v4(port);

  // SIGPIPE ignored (bit 13 - 1 of the mask).
  EXPECT_NE(server.ignored_signals() & (1ull << (SIGPIPE - 1)), 0u) << "SIGPIPE is not ignored";

  net::EventLoop loop;
  net::Timer spin(loop, [] {});  // keeps run_once() returning; nothing reads a clock from it
  spin.start(1, 1);
  std::size_t rtp_packets = 0;
  std::vector<std::vector<std::uint8_t>> rtcp;
  auto rtp_sock = net::UdpEndpoint::open(loop, net::SocketAddress::loopback_v4(0), {},
                                         [&](auto, const auto&, auto) { ++rtp_packets; });
  auto rtcp_sock = net::UdpEndpoint::open(loop, net::SocketAddress::loopback_v4(0), {},
                                          [&](std::span<const std::uint8_t> d, const auto&, auto) {
                                            rtcp.emplace_back(d.begin(), d.end());
                                          });
  ASSERT_TRUE(rtp_sock.ok() && rtcp_sock.ok());

  const std::string url = "rtsp://127.0.0.1:" + std::to_string(port) + "/sample";
  test::PosixRtspPeer p(loop, rtsp_addr);
  auto describe = p.request(request_text("DESCRIBE", url, 1));
  ASSERT_TRUE(describe && describe->status == 200);
  auto sdp = rtsp::parse_sdp(describe->body);
  ASSERT_TRUE(sdp.ok());
  const auto& crypto = sdp->media.at(0).crypto.at(0);
  const wire::SrtpSuite suite = *wire::suite_from_name(crypto.suite);
  wire::SrtpKeyMaterial key;
  std::uint8_t raw[64];
  auto n = wire::base64_decode(crypto.inline_key(), raw);
  ASSERT_TRUE(n.ok());
  std::copy(raw, raw + *n, key.bytes.begin());
  key.size = *n;

  const std::uint16_t rtp_port = (*rtp_sock)->local_address().port();
  const std::uint16_t rtcp_port = (*rtcp_sock)->local_address().port();
  auto setup = p.request(
      request_text("SETUP", url + "/trackID=0", 2,
                   "Transport: RTP/SAVP;unicast;client_port=" + std::to_string(rtp_port) + "-" +
                       std::to_string(rtcp_port) + "\r\nX-Predrop-Feedback: 1\r\n"));
  ASSERT_TRUE(setup && setup->status == 200);
  const std::string session = "Session: " + session_of(*setup) + "\r\n";
  auto spec = rtsp::parse_transport(*setup->headers.get("Transport"));
  ASSERT_TRUE(spec.ok());
  const std::uint32_t ssrc = *(*spec)[0].ssrc;
  const std::uint16_t server_rtcp = (*spec)[0].server_port->rtcp;
  auto play = p.request(request_text("PLAY", url, 3, session));
  ASSERT_TRUE(play && play->status == 200);
  ASSERT_TRUE(test::pump_until(loop, [&] { return rtp_packets > 0; })) << "no media";

  // A report on stage 0, so the trace has a row to flush; the GET_PARAMETER round trip after it
  // makes sure the server has read the datagram (it was queued before the request).
  net::SrtpSession out(net::SrtpDirection::Outbound, suite, key);
  core::StageMeasurement m;
  m.stage = 0;
  m.reception_period_us = 900'000;
  m.received = 10;
  m.announced = 10;
  std::vector<std::uint8_t> report(256);
  auto len = chain::encode_feedback(
      report, 0x1234, chain::make_feedback(m, 40.0, wire::PdfbMetric::kPsnrDb, 0), &out);
  ASSERT_TRUE(len.ok());
  report.resize(*len);
  (*rtcp_sock)->send(report, net::SocketAddress::loopback_v4(server_rtcp));
  ASSERT_EQ(p.request(request_text("GET_PARAMETER", url, 4, session))->status, 200);

  // SIGHUP: still there, still answering.
  ASSERT_EQ(::kill(server.pid, SIGHUP), 0);
  auto options = p.request(request_text("OPTIONS", url, 5));
  ASSERT_TRUE(options.has_value()) << "the server died of SIGHUP";
  EXPECT_EQ(options->status, 200);
  EXPECT_EQ(::waitpid(server.pid, nullptr, WNOHANG), 0) << "the server exited after SIGHUP";

  // SIGTERM: exit code 0.
  ASSERT_EQ(::kill(server.pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(server.pid, &status, 0), server.pid);
  server.pid = -1;
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  server.read_rest();
  EXPECT_NE(server.err.find("SIGHUP"), std::string::npos) << server.err;

  // The BYE is in our RTCP socket by now; read it (with the SRs before it) and decrypt.
  net::SrtpSession in(net::SrtpDirection::Inbound, suite, key);
  bool bye = false;
  std::size_t looked_at = 0;
  test::pump_until(
      loop,
      [&] {
        for (; looked_at < rtcp.size(); ++looked_at) {
          std::vector<std::uint8_t> d = rtcp[looked_at];
          const std::size_t size = d.size();
          d.resize(size + net::kSrtpMaxTrailer);
          const net::SrtpResult r = in.unprotect_rtcp(d, size);
          if (!r) continue;
          auto c = wire::parse_rtcp_compound(std::span<const std::uint8_t>(d.data(), r.length));
          if (c.ok() && c->has_bye && c->sender_report && c->sender_report->ssrc == ssrc) {
            bye = true;
          }
        }
        return bye;
      },
      2000);
  EXPECT_TRUE(bye) << "no RTCP BYE for SSRC " << ssrc << " among " << rtcp.size()
                   << " RTCP datagrams";

  // The trace was flushed: the header and the row of stage 0's report.
  std::ifstream f(trace_path);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_EQ(text.str().rfind("session,stage,block,", 0), 0u) << text.str();
  EXPECT_NE(text.str().find(",0,0,0.0000,"), std::string::npos) << "no row for stage 0:\n"
                                                                << text.str();
  spin.stop();
}

// One HTTP exchange with the server's listener (it closes after the reply).
std::string http(net::EventLoop& loop, std::uint16_t port, const std::string& request) {
  test::PosixRtspPeer h(loop, net::SocketAddress::loopback_v4(port));
  if (!h.send(request) || !h.wait_closed()) return {};
  return h.received();
}

// The policy of every session the API lists, by number.
std::map<std::uint64_t, std::string> policies(net::EventLoop& loop, std::uint16_t port) {
  const std::string reply = http(loop, port, "GET /api/v1/sessions HTTP/1.0\r\n\r\n");
  std::map<std::uint64_t, std::string> out;
  const std::size_t at = reply.find("\r\n\r\n");
  if (at == std::string::npos) return out;
  const auto j = nlohmann::json::parse(reply.substr(at + 4), nullptr, false);
  if (j.is_discarded()) return out;
  for (const auto& s : j["sessions"]) {
    out[s["number"].get<std::uint64_t>()] = s["policy"].get<std::string>();
  }
  return out;
}

TEST(ServerSignals, ReloadKeepsPlayingSessionsAndControlsTheNextOnes) {
  const std::string config_path = std::string(PREDROP_TEST_TMP) + "/reload.toml";
  const std::string token = "reload-test-token-0123456789";
  auto write_config = [&](const std::string& control) {
    std::ofstream f(config_path, std::ios::trunc);
    f << "[server]\nmode = \"stream\"\nrtsp_listen = \"127.0.0.1:0\"\n"
      << "metrics_listen = \"127.0.0.1:0\"\napi_token = \"" << token << "\"\nworkers = 1\n"
      << "[server.streams]\nsample = \"" << PREDROP_TEST_SAMPLE << "\"\n"
      << control;
  };
  write_config("[control]\npolicy = \"basic\"\n");
  ServerProcess server;
  server.spawn({"-c", config_path, "--loop", "--log-level", "info"});
  ASSERT_TRUE(server.read_until("/sample (")) << server.err;
  const std::size_t at = server.err.find("serving rtsp://127.0.0.1:");
  const std::size_t mat = server.err.find("metrics at http://127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << server.err;
  ASSERT_NE(mat, std::string::npos) << server.err;
  const auto port = static_cast<std::uint16_t>(std::stoi(server.err.substr(at + 25)));
  const auto api_port = static_cast<std::uint16_t>(std::stoi(server.err.substr(mat + 28)));

  net::EventLoop loop;
  net::Timer spin(loop, [] {});
  spin.start(1, 1);
  std::size_t rtp_packets[2] = {0, 0};
  std::vector<std::unique_ptr<net::UdpEndpoint>> socks;
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 2; ++k) {
      auto sock = net::UdpEndpoint::open(loop, net::SocketAddress::loopback_v4(0), {},
                                         [&, i, k](auto, const auto&, auto) {
                                           if (k == 0) ++rtp_packets[i];
                                         });
      ASSERT_TRUE(sock.ok());
      socks.push_back(std::move(sock.value()));
    }
  }
  const std::string url = "rtsp://127.0.0.1:" + std::to_string(port) + "/sample";
  test::PosixRtspPeer p(loop, net::SocketAddress::loopback_v4(port));
  std::uint32_t cseq = 1;
  auto start_session = [&](int i) {
    auto setup =
        p.request(request_text("SETUP", url + "/trackID=0", cseq++,
                               "Transport: RTP/SAVP;unicast;client_port=" +
                                   std::to_string(socks[2 * i]->local_address().port()) + "-" +
                                   std::to_string(socks[2 * i + 1]->local_address().port()) +
                                   "\r\nX-Predrop-Feedback: 1\r\n"));
    ASSERT_TRUE(setup && setup->status == 200);
    auto play =
        p.request(request_text("PLAY", url, cseq++, "Session: " + session_of(*setup) + "\r\n"));
    ASSERT_TRUE(play && play->status == 200);
    ASSERT_TRUE(test::pump_until(loop, [&] { return rtp_packets[i] > 0; })) << "no media";
  };
  ASSERT_EQ(p.request(request_text("DESCRIBE", url, cseq++))->status, 200);
  start_session(0);
  ASSERT_EQ(policies(loop, api_port), (std::map<std::uint64_t, std::string>{{1, "basic"}}));

  // SIGHUP with a new policy: the playing session keeps its own and goes on sending.
  write_config("[control]\npolicy = \"fixed\"\nfixed_rate = 0.3\n");
  ASSERT_EQ(::kill(server.pid, SIGHUP), 0);
  ASSERT_TRUE(server.read_until("reload: policy fixed")) << server.err;
  const std::size_t before = rtp_packets[0];
  ASSERT_TRUE(test::pump_until(loop, [&] { return rtp_packets[0] > before + 10; }))
      << "the playing session stopped at the reload";
  start_session(1);
  EXPECT_EQ(policies(loop, api_port),
            (std::map<std::uint64_t, std::string>{{1, "basic"}, {2, "fixed"}}));

  // POST /api/v1/reload: a bad file is refused (422) and changes nothing; a good one applies.
  write_config("[control]\npolicy = \"nonsense\"\n");
  const std::string auth = "Authorization: Bearer " + token + "\r\n";
  const std::string bad = http(loop, api_port, "POST /api/v1/reload HTTP/1.0\r\n" + auth + "\r\n");
  EXPECT_EQ(bad.rfind("HTTP/1.0 422", 0), 0u) << bad;
  EXPECT_NE(bad.find("control.policy"), std::string::npos) << bad;
  EXPECT_EQ(http(loop, api_port, "POST /api/v1/reload HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 401", 0),
            0u);
  write_config("[control]\npolicy = \"capacity\"\n");
  const std::string good = http(loop, api_port, "POST /api/v1/reload HTTP/1.0\r\n" + auth + "\r\n");
  EXPECT_EQ(good.rfind("HTTP/1.0 200", 0), 0u) << good;
  EXPECT_EQ(policies(loop, api_port),
            (std::map<std::uint64_t, std::string>{{1, "basic"}, {2, "fixed"}}))
      << "playing sessions keep their policies";

  ASSERT_EQ(::kill(server.pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(server.pid, &status, 0), server.pid);
  server.pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  spin.stop();
}

}  // namespace
}  // namespace predrop

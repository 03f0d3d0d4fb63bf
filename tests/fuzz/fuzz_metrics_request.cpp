// Fuzz target for the metrics endpoint's HTTP request handling (server/src/metrics_endpoint.cpp):
//   1. parse_metrics_request() on the raw input: the status is one of 200/400/405/505, and 200
//      only for a GET or HEAD request line of HTTP/1.0 or 1.1, or POST/DELETE of an /api/ or a
//      WHEP path (is_whep_target(); a WHEP POST's body is then awaited, at most max_body_bytes).
//   2. The endpoint itself on a FakeClock, through its socketless entry points: connections open,
//      receive the input in pieces, the clock moves on and the deadline check runs, replies are
//      read; the renderer throws when the input says so; /api/ paths go to the control API
//      (handle_control() over a backend with one session, whose functions throw when the
//      renderer does), WHEP paths to handle_whep() over a fake backend (a page's quality report
//      parsed by parse_page_quality() on the way, and its RTP span attributed to blocks around
//      it by the session's detail::PageQualityJoin: every block's P stays in [0, 1]). Checked:
//      the connection cap
//      holds; a connection gets at most one reply, a well-formed HTTP/1.0 status line with a
//      Content-Length matching the body, and is closed after it; nothing escapes a callback.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "page_quality.hpp"
#include "predrop/core/log.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/server/control_api.hpp"
#include "predrop/server/metrics_endpoint.hpp"
#include "predrop/server/whep_http.hpp"

namespace {

using namespace predrop;

class FuzzClock final : public net::Clock {
 public:
  std::uint64_t now_us() const override { return now_; }
  void advance(std::uint64_t us) { now_ += us; }

 private:
  std::uint64_t now_ = 1'000'000;
};

net::EventLoop& loop() {
  static net::EventLoop l;
  // A throwing renderer is logged by the exception boundary; not on every input.
  static const bool quiet = [] {
    core::set_log_level(core::LogLevel::kOff);
    return true;
  }();
  (void)quiet;
  return l;
}

void check_parser(std::string_view text) {
  const server::MetricsRequest r = server::parse_metrics_request(text);
  PREDROP_FUZZ_CHECK(r.status == 200 || r.status == 400 || r.status == 405 || r.status == 505);
  if (r.status == 200) {
    std::string_view line = text;
    while (line.starts_with("\r\n") || line.starts_with("\n"))
      line.remove_prefix(line.front() == '\r' ? 2 : 1);
    PREDROP_FUZZ_CHECK(line.starts_with(r.head_only ? "HEAD " : "GET ") ||
                       ((line.starts_with("POST ") || line.starts_with("DELETE ")) &&
                        (server::is_control_target(r.target) || server::is_whep_target(r.target))));
    line = line.substr(0, line.find('\n'));
    if (line.ends_with('\r')) line.remove_suffix(1);
    PREDROP_FUZZ_CHECK(line.ends_with(" HTTP/1.0") || line.ends_with(" HTTP/1.1"));
  }
  PREDROP_FUZZ_CHECK(!r.head_only || r.status == 200);
}

// One well-formed reply: status line, headers, Content-Length equal to what follows (HEAD: the
// length of the body it would have had, nothing after the head).
void check_reply(std::string_view reply) {
  PREDROP_FUZZ_CHECK(reply.starts_with("HTTP/1.0 "));
  PREDROP_FUZZ_CHECK(reply.size() >= 12);
  for (std::size_t i = 9; i < 12; ++i)
    PREDROP_FUZZ_CHECK(reply[i] >= '0' && reply[i] <= '9');
  PREDROP_FUZZ_CHECK(reply[9] >= '1' && reply[9] <= '5');
  const std::size_t end = reply.find("\r\n\r\n");
  PREDROP_FUZZ_CHECK(end != std::string_view::npos);
  const std::size_t cl = reply.find("Content-Length: ");
  PREDROP_FUZZ_CHECK(cl != std::string_view::npos && cl < end);
  const std::size_t length = std::stoul(std::string(reply.substr(cl + 16, 12)));
  const std::size_t body = reply.size() - end - 4;
  PREDROP_FUZZ_CHECK(body == length || body == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 16 * 1024) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_parser(text);
  if (size < 2) return 0;

  // Byte 0: the schedule (pieces of at most 1 + b0 % 64 bytes; the clock moves after each
  // piece by (b0 >> 6) * 400 ms); byte 1: renderer fault and connection count.
  const std::size_t piece = 1 + data[0] % 64;
  const std::uint64_t step_us = static_cast<std::uint64_t>(data[0] >> 6) * 400'000;
  const bool render_throws = (data[1] & 1) != 0;
  const std::size_t connections = 1 + (data[1] >> 1) % 5;
  const std::string_view request = text.substr(2);

  FuzzClock clock;
  server::MetricsEndpointOptions o;
  o.max_connections = 3;
  o.request_deadline_us = 1'000'000;
  o.max_request_bytes = 512;
  {
    server::MetricsEndpoint endpoint(
        loop(), net::SocketAddress::loopback_v4(0),
        [render_throws]() -> std::string {
          if (render_throws) throw std::runtime_error("fuzz: render fault");
          return "up 1\n";
        },
        o, clock);
    server::ControlBackend backend;
    backend.streams = {{"sample", "/media/sample.mp4"}};
    backend.token = "fuzz-token-0123456789";
    backend.snapshots = [render_throws] {
      if (render_throws) throw std::runtime_error("fuzz: snapshot fault");
      server::ServerSnapshot w;
      server::SessionMetrics m;
      m.number = 1;
      m.stream = "sample";
      w.session_rows.push_back(m);
      return std::vector<server::ServerSnapshot>{w};
    };
    backend.history = [](std::uint64_t n) -> std::optional<std::vector<server::BlockRecord>> {
      if (n != 1) return std::nullopt;
      return std::vector<server::BlockRecord>(3);
    };
    backend.end_session = [](std::uint64_t n) { return n == 1; };
    endpoint.set_control(
        [&backend](const server::HttpRequest& q) { return server::handle_control(q, backend); });
    // WHEP paths (docs/webrtc.md): an offer echoes its body's size, faults as the renderer does.
    server::WhepBackend whep;
    whep.streams = {"sample"};
    whep.offer = [render_throws](std::string_view, std::string_view offer,
                                 const net::SocketAddress&, std::string_view) {
      if (render_throws) throw std::runtime_error("fuzz: offer fault");
      return server::WhepOutcome{201, "v=0 " + std::to_string(offer.size()), "S1", {}};
    };
    whep.end = [](std::string_view s) { return s == "S1"; };
    // The page's quality report (docs/webrtc.md "Quality in the page"): only a parsed one
    // arrives, and its P is in [0, 1].
    whep.quality = [](std::string_view s, const server::PageQuality& q) {
      PREDROP_FUZZ_CHECK(q.p >= 0 && q.p <= 1 && q.freeze_ms < 1'000'000);
      PREDROP_FUZZ_CHECK(q.has_rtp || (q.rtp_from == 0 && q.rtp_to == 0));
      if (q.has_rtp) {
        // Blocks of 1 s at 90 kHz around rtp_from, and one report twice (a resent POST).
        server::detail::PageQualityJoin join;
        for (std::uint32_t b = 0; b < 20; ++b) {
          join.begin_block(b, q.rtp_from - 270'000 + b * 90'000 + (q.rtp_to & 0xFFu));
        }
        (void)join.add({q.p, q.rtp_from, q.rtp_to});
        (void)join.add({q.p, q.rtp_from, q.rtp_to});
        for (std::uint32_t b = 0; b < 20; ++b) {
          const auto p = join.quality(b);
          PREDROP_FUZZ_CHECK(!p || (*p >= 0 && *p <= 1.0 + 1e-9));
        }
      }
      return s == "S1";
    };
    endpoint.set_whep(
        [&whep](const server::HttpRequest& q) { return server::handle_whep(q, whep); });
    std::vector<std::uint64_t> ids;
    for (std::size_t i = 0; i < connections; ++i) {
      const std::uint64_t id = endpoint.attach_connection();
      PREDROP_FUZZ_CHECK((id != 0) == (i < o.max_connections));
      if (id != 0) ids.push_back(id);
    }
    std::vector<std::string> replies(ids.size());
    for (std::size_t at = 0; at < request.size(); at += piece) {
      const std::string_view p = request.substr(at, piece);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        endpoint.receive(ids[i],
                         std::span(reinterpret_cast<const std::uint8_t*>(p.data()), p.size()));
        replies[i] += endpoint.take_output(ids[i]);
      }
      clock.advance(step_us);
      endpoint.run_housekeeping();
      PREDROP_FUZZ_CHECK(endpoint.connection_count() <= o.max_connections);
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
      replies[i] += endpoint.take_output(ids[i]);
      if (replies[i].empty()) continue;
      // One reply, and the connection is done.
      PREDROP_FUZZ_CHECK(replies[i].find("HTTP/1.0 ", 1) == std::string::npos);
      check_reply(replies[i]);
      PREDROP_FUZZ_CHECK(!endpoint.connection_open(ids[i]));
    }
    const auto& st = endpoint.stats();
    PREDROP_FUZZ_CHECK(st.accepted <= o.max_connections);
    PREDROP_FUZZ_CHECK(endpoint.callback_guard().count(server::CallbackKind::kMetrics) <=
                       st.accepted);
  }
  loop().run_nowait();
  return 0;
}

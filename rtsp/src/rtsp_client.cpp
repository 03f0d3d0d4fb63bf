#include "predrop/rtsp/rtsp_client.hpp"

#include <utility>

#include "predrop/rtsp/rtsp_headers.hpp"

namespace predrop::rtsp {

core::Result<std::unique_ptr<RtspClient>> RtspClient::connect(net::EventLoop& loop,
                                                              const net::SocketAddress& server,
                                                              OnConnected on_connected,
                                                              OnClosed on_closed) {
  std::unique_ptr<RtspClient> c(new RtspClient());
  RtspClient* raw = c.get();
  c->on_closed_ = std::move(on_closed);
  auto tcp = net::TcpConnection::connect(
      loop, server, [raw, on_connected = std::move(on_connected)](const core::Status& st) {
        if (st) {
          auto started = raw->tcp_->start(
              [raw](std::span<const std::uint8_t> d) { raw->on_data(d); },
              [raw](const core::Status& why) {
                // A failed request's callback may destroy the client; so may on_closed.
                std::weak_ptr<bool> alive = raw->alive_;
                raw->fail_all(why ? "connection closed by the server" : why.error().message);
                if (alive.expired() || !raw->on_closed_) return;
                const auto notify = raw->on_closed_;  // a copy: it may destroy the client
                notify(why);
              });
          if (!started) {
            on_connected(started);
            return;
          }
        }
        on_connected(st);
      });
  if (!tcp) return tcp.error();
  c->tcp_ = std::move(tcp.value());
  return c;
}

RtspClient::~RtspClient() = default;

void RtspClient::close() {
  if (tcp_) tcp_->close();
  fail_all("closed");
}

void RtspClient::fail_all(const std::string& why) {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [cseq, cb] : pending)
    cb(core::make_error("RTSP: " + why));
}

void RtspClient::send(rtsp::RtspMethod method, const std::string& url, rtsp::RtspHeaders headers,
                      OnResponse on_response) {
  rtsp::RtspRequest req = rtsp::make_request(method, url, next_cseq_);
  for (const auto& [k, v] : headers.fields())
    req.headers.set(k, v);
  req.headers.set("User-Agent", "predrop-client");
  if (!session_.empty() && !req.headers.contains("Session")) req.headers.set("Session", session_);
  auto st = tcp_->write(rtsp::serialize(req));
  if (!st) {
    on_response(core::make_error("RTSP write: " + st.error().message));
    return;
  }
  pending_.emplace(next_cseq_++, std::move(on_response));
}

void RtspClient::on_data(std::span<const std::uint8_t> data) {
  for (auto ev = parser_.feed(data); ev != rtsp::RtspParseEvent::kNeedMore; ev = parser_.next()) {
    if (ev == rtsp::RtspParseEvent::kInterleaved) continue;
    if (ev == rtsp::RtspParseEvent::kError) {
      if (parser_.error().fatal) {
        fail_all("malformed response: " + parser_.error().message);
        return;
      }
      continue;
    }
    rtsp::RtspResponse resp = parser_.take_response();
    if (auto s = resp.headers.get("Session"); s && session_.empty()) {
      if (auto parsed = rtsp::parse_session(*s)) {
        session_ = parsed->id;
        timeout_s_ = parsed->timeout_s.value_or(60);
      }
    }
    const auto cseq = resp.cseq();
    if (!cseq) continue;
    auto it = pending_.find(*cseq);
    if (it == pending_.end()) continue;
    auto cb = std::move(it->second);
    pending_.erase(it);
    std::weak_ptr<bool> alive = alive_;
    cb(std::move(resp));  // may destroy this
    if (alive.expired()) return;
  }
}

}  // namespace predrop::rtsp

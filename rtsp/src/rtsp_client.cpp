// The asynchronous RTSP client (predrop/rtsp/rtsp_client.hpp).
#include "predrop/rtsp/rtsp_client.hpp"

#include <exception>
#include <utility>

#include "predrop/core/log.hpp"
#include "predrop/rtsp/rtsp_headers.hpp"

namespace predrop::rtsp {

// Runs `fn`, which handles an event of the connection. An exception it throws -- from the client
// or from a callback the client runs -- stops here: the loop must never see it (libuv's C frames
// cannot unwind). The client then treats its state as lost: it drops the connection.
template <typename Fn>
void RtspClient::contain(const char* where, Fn&& fn) {
  std::weak_ptr<bool> alive = alive_;
  std::string what;
  try {
    std::forward<Fn>(fn)();
    return;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception not derived from std::exception";
  }
  core::log(core::LogLevel::kWarn, "rtsp", "internal error in %s: %s", where, what.c_str());
  if (alive.expired()) return;  // the callback that threw had destroyed the client
  try {
    drop(std::string("internal error in ") + where + ": " + what);
  } catch (...) {
    // drop() runs callbacks in their own try blocks; only allocation can get here.
  }
}

core::Result<std::unique_ptr<RtspClient>> RtspClient::connect(net::EventLoop& loop,
                                                              const net::SocketAddress& server,
                                                              OnConnected on_connected,
                                                              OnClosed on_closed) {
  std::unique_ptr<RtspClient> c(new RtspClient());
  RtspClient* raw = c.get();
  c->on_closed_ = std::move(on_closed);
  auto tcp = net::TcpConnection::connect(
      loop, server, [raw, on_connected = std::move(on_connected)](const core::Status& st) {
        raw->contain("the connect callback", [&] {
          if (st) {
            auto started = raw->tcp_->start(
                [raw](std::span<const std::uint8_t> d) {
                  raw->contain("the response handler", [&] { raw->on_data(d); });
                },
                [raw](const core::Status& why) {
                  raw->contain("the close handler", [&] { raw->on_tcp_closed(why); });
                });
            if (!started) {
              raw->closed_why_ = started.error().message;
              on_connected(started);
              return;
            }
          } else {
            raw->closed_why_ = st.error().message;
          }
          on_connected(st);
        });
      });
  if (!tcp) return tcp.error();
  c->tcp_ = std::move(tcp.value());
  return c;
}

RtspClient::~RtspClient() = default;

void RtspClient::close() {
  if (closed_why_.empty()) closed_why_ = "closed";
  if (tcp_) tcp_->close();
  fail_all("closed");
}

void RtspClient::on_tcp_closed(const core::Status& why) {
  closed_why_ = why ? "connection closed by the server" : why.error().message;
  // A failed request's callback may destroy the client; so may on_closed.
  std::weak_ptr<bool> alive = alive_;
  fail_all(closed_why_);
  if (alive.expired() || !on_closed_) return;
  const auto notify = on_closed_;  // a copy: it may destroy the client
  notify(why);
}

void RtspClient::drop(const std::string& why) {
  // on_closed reports only a connection that was up: not after close(), not twice.
  const bool was_open = closed_why_.empty();
  if (was_open) closed_why_ = why;
  if (tcp_) tcp_->close();
  std::weak_ptr<bool> alive = alive_;
  fail_all(why);
  if (!was_open || alive.expired() || !on_closed_) return;
  const auto notify = on_closed_;  // a copy: it may destroy the client
  try {
    notify(core::make_error("RTSP: " + why));
  } catch (const std::exception& e) {
    core::log(core::LogLevel::kWarn, "rtsp", "on_closed threw: %s", e.what());
  } catch (...) {
    core::log(core::LogLevel::kWarn, "rtsp", "on_closed threw");
  }
}

void RtspClient::fail_all(const std::string& why) {
  // A copy: `why` may be this client's own member (closed_why_), and a callback below may
  // destroy the client.
  const std::string reason = "RTSP: " + why;
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [cseq, cb] : pending) {
    // Every waiting request hears why, even if an earlier callback throws.
    try {
      cb(core::make_error(reason));
    } catch (const std::exception& e) {
      core::log(core::LogLevel::kWarn, "rtsp", "response callback threw: %s", e.what());
    } catch (...) {
      core::log(core::LogLevel::kWarn, "rtsp", "response callback threw");
    }
  }
}

void RtspClient::send(rtsp::RtspMethod method, const std::string& url,
                      const rtsp::RtspHeaders& headers, OnResponse on_response) {
  if (!closed_why_.empty() || !tcp_) {
    on_response(core::make_error("RTSP: " + (closed_why_.empty() ? "not connected" : closed_why_)));
    return;
  }
  rtsp::RtspRequest req = rtsp::make_request(method, url, next_cseq_);
  for (const auto& [k, v] : headers.fields()) {
    req.headers.set(k, v);
  }
  req.headers.set("User-Agent", "predrop-client");
  if (!session_.empty() && !req.headers.contains("Session")) req.headers.set("Session", session_);
  auto st = tcp_->write(rtsp::serialize(req));
  if (!st) {
    on_response(core::make_error("RTSP write: " + st.error().message));
    return;
  }
  pending_.emplace(next_cseq_++, std::move(on_response));
}

void RtspClient::deliver(std::uint32_t cseq, core::Result<rtsp::RtspResponse> response) {
  auto it = pending_.find(cseq);
  if (it == pending_.end()) return;  // a late or repeated answer: nobody waits for it
  auto cb = std::move(it->second);
  pending_.erase(it);
  cb(std::move(response));  // may destroy this
}

void RtspClient::on_parse_error(const rtsp::RtspParseError& error) {
  if (error.fatal) {
    drop("malformed response: " + error.message);
    return;
  }
  if (error.status == 501) return;  // a request from the server, not an answer: skipped
  if (pending_.empty()) return;
  // The answer to the request it names, or else to the oldest one waiting (§9.1: in order).
  const std::uint32_t cseq =
      error.cseq && pending_.contains(*error.cseq) ? *error.cseq : pending_.begin()->first;
  deliver(cseq, core::make_error("RTSP: malformed response: " + error.message));
}

void RtspClient::on_data(std::span<const std::uint8_t> data) {
  std::weak_ptr<bool> alive = alive_;
  for (auto ev = parser_.feed(data); ev != rtsp::RtspParseEvent::kNeedMore; ev = parser_.next()) {
    if (ev == rtsp::RtspParseEvent::kInterleaved) {
      if (!on_frame_) continue;
      const rtsp::InterleavedFrame& f = parser_.interleaved();
      on_frame_(f.channel, f.payload);  // may destroy this
      if (alive.expired() || !closed_why_.empty()) return;
      continue;
    }
    if (ev == rtsp::RtspParseEvent::kError) {
      const bool fatal = parser_.error().fatal;
      on_parse_error(parser_.error());
      if (alive.expired() || fatal || !closed_why_.empty()) return;
      continue;
    }
    rtsp::RtspResponse resp = parser_.take_response();
    if (auto s = resp.headers.get("Session"); s && session_.empty()) {
      if (auto parsed = rtsp::parse_session(*s)) {
        session_ = parsed->id;
        timeout_s_ = parsed->timeout_s.value_or(60);
      }
    }
    if (const auto cseq = resp.cseq()) {
      deliver(*cseq, std::move(resp));
    } else if (!pending_.empty()) {
      // CSeq is required in every response (§12.17); in order, this one answers the oldest.
      const auto oldest = pending_.begin()->first;
      deliver(oldest, core::make_error("RTSP: malformed response: no CSeq header (status " +
                                       std::to_string(resp.status) + ")"));
    }
    if (alive.expired() || !closed_why_.empty()) return;
  }
}

}  // namespace predrop::rtsp

#include "rtsp_connections.hpp"

#include <algorithm>
#include <utility>

namespace predrop::server::detail {

namespace {
// Connections past max_connections: each waits at most this long for the request it is to be
// refused (503), and at most this many such connections are open at once; beyond that a new
// connection is closed at once, so that a flood cannot hoard file descriptors.
constexpr std::uint64_t kOverLimitIdleUs = 2'000'000;

std::size_t over_limit_allowance(std::size_t max_connections) {
  return std::max<std::size_t>(16, max_connections / 8);
}

// What the client may send interleaved is RTCP (RR, SDES, BYE, PDFB): a frame longer than the
// server's RTCP buffer is no RTCP compound, and is skipped rather than waited for.
constexpr std::size_t kMaxInterleavedIn = 4096;

rtsp::RtspParserLimits connection_limits() {
  rtsp::RtspParserLimits limits;
  limits.max_interleaved_bytes = kMaxInterleavedIn;
  return limits;
}
}  // namespace

RtspConnection::RtspConnection() : parser(connection_limits()) {}

void RtspConnection::write(std::string bytes) {
  // A media frame half written goes out whole before the reply (the stream stays framed).
  if (interleaved) bytes.insert(0, interleaved->queue().take_partial());
  if (tcp) {
    (void)tcp->write(std::move(bytes));
  } else if (attached_open) {
    output += bytes;
  }
}

std::size_t RtspConnection::write_queue_bytes() const {
  return tcp ? tcp->write_queue_bytes() : output.size();
}

void RtspConnection::close_after_writes() {
  if (tcp) {
    tcp->close_after_writes();
  } else {
    attached_open = false;
  }
}

void RtspConnection::close() {
  if (tcp) {
    tcp->close();
  } else {
    attached_open = false;
  }
}

RtspConnections::RtspConnections(ConnectionLimits limits, ServerStats& stats)
    : limits_(limits), stats_(stats) {}

RtspConnection* RtspConnections::admit(std::unique_ptr<RtspConnection> c, std::uint64_t now) {
  c->id = ++ids_;
  c->last_activity_us = now;
  if (connections_.size() >= limits_.max_connections) {
    // Over the limit: the first request gets 503 and the connection closes (RFC 2326 §11.3.6).
    ++stats_.connections_refused;
    if (connections_.size() >=
        limits_.max_connections + over_limit_allowance(limits_.max_connections)) {
      c->close();
      return nullptr;
    }
    c->over_limit = true;
  } else {
    ++stats_.connections_accepted;
  }
  RtspConnection* raw = c.get();
  connections_.emplace(raw->id, std::move(c));
  return raw;
}

RtspConnection* RtspConnections::find(std::uint64_t id) const {
  auto it = connections_.find(id);
  return it == connections_.end() ? nullptr : it->second.get();
}

void RtspConnections::receive(RtspConnection& c, std::span<const std::uint8_t> data,
                              std::uint64_t now, RtspConnectionListener& listener) {
  c.last_activity_us = now;
  stats_.rtsp_bytes_received += data.size();
  c.input.append(reinterpret_cast<const char*>(data.data()), data.size());
  if (!c.reading_paused) {
    serve(c, now, listener);
  } else if (c.write_queue_bytes() + c.unparsed() > limits_.max_write_queue_bytes) {
    // The client does not read our replies: what it sends waits unparsed, within the bound.
    close_for_backlog(c);
  }
}

void RtspConnections::close_for_backlog(RtspConnection& c) {
  ++stats_.connections_closed_backlog;
  c.close();
}

void RtspConnections::serve(RtspConnection& c, std::uint64_t now,
                            RtspConnectionListener& listener) {
  // Buffered (pipelined) requests first, then the input not yet parsed.
  auto ev = c.parser.next();
  for (;;) {
    if (ev == rtsp::RtspParseEvent::kNeedMore) {
      if (c.unparsed() == 0) break;
      // At most one read's worth at a time, as if it came from the socket: the parser bounds
      // what it buffers, and held input may be much more.
      const std::size_t n = std::min(c.unparsed(), net::TcpConnection::kReadBufferSize);
      const std::string_view in(c.input.data() + c.input_used, n);
      c.input_used += n;
      ev = c.parser.feed(in);
      if (c.unparsed() == 0) {
        c.input.clear();
        c.input_used = 0;
      }
      continue;
    }
    if (ev == rtsp::RtspParseEvent::kError) {
      ++stats_.bad_requests;
      const rtsp::RtspParseError& e = c.parser.error();
      rtsp::RtspResponse r = rtsp::make_response(e.status, e.cseq);
      r.set_body("text/plain", e.message + "\r\n");
      c.write(rtsp::serialize(r));
      if (e.fatal) {
        // The reply goes out first; the connection is forgotten once it is closed.
        c.close_after_writes();
        return;
      }
    } else if (ev == rtsp::RtspParseEvent::kMessage) {
      ++stats_.requests;
      rtsp::RtspRequest request = c.parser.take_request();
      if (c.over_limit) {
        rtsp::RtspResponse r = rtsp::make_response(503, request.cseq);
        r.headers.set("Retry-After", "5");
        c.write(rtsp::serialize(r));
        c.close_after_writes();
        return;
      }
      c.write(listener.on_request(c, request));
      if (!c.is_open()) return;
    } else if (ev == rtsp::RtspParseEvent::kInterleaved) {
      listener.on_interleaved(c, c.parser.interleaved());
      if (!c.is_open()) return;
    }
    const std::size_t queued = c.write_queue_bytes();
    if (queued + c.unparsed() > limits_.max_write_queue_bytes) {
      close_for_backlog(c);
      return;
    }
    if (queued > pause_threshold()) {
      // The kernel's send buffer is full and our queue grows: the client is not reading. Stop
      // answering it until the queue drains (resume_paused()).
      c.reading_paused = true;
      c.input.erase(0, c.input_used);  // keep only what waits
      c.input_used = 0;
      paused_.insert(c.id);
      ++stats_.connections_paused;
      return;
    }
    ev = c.parser.next();
  }
  if (c.parser.buffered() == 0) {
    c.partial_since_us = 0;
  } else if (c.partial_since_us == 0) {
    c.partial_since_us = now;
  }
}

std::uint64_t RtspConnections::idle_limit_us(const RtspConnection& c) const {
  const std::uint64_t idle = static_cast<std::uint64_t>(limits_.rtsp_idle_timeout_s) * 1'000'000;
  if (c.over_limit) return std::min(idle, kOverLimitIdleUs);
  // A connection that carries a session is the player's control channel: players ping every
  // session timeout / 2 (FFmpeg), which the plain idle timeout would race, so it lives as long
  // as the session may.
  if (!c.sessions.empty()) {
    return static_cast<std::uint64_t>(
               std::max(limits_.rtsp_idle_timeout_s, limits_.session_timeout_s + 10)) *
           1'000'000;
  }
  return idle;
}

void RtspConnections::close_overdue(std::uint64_t now) {
  const std::uint64_t request_deadline_us =
      static_cast<std::uint64_t>(limits_.rtsp_idle_timeout_s) * 1'000'000;
  for (const auto& [id, c] : connections_) {
    // A request that trickled in for longer than the idle timeout (slow loris), or a connection
    // silent for longer than its idle limit.
    const bool slow_request = c->partial_since_us != 0 && request_deadline_us != 0 &&
                              now > c->partial_since_us + request_deadline_us;
    const bool idle = now > c->last_activity_us + idle_limit_us(*c);
    if (c->is_open() && (slow_request || idle)) {
      ++stats_.connections_timed_out;
      c->close();
    }
  }
}

void RtspConnections::forget(const RtspConnection& c) {
  paused_.erase(c.id);
  interleaved_.erase(c.id);
  const rtsp::InterleavedCounters& dropped = c.parser.interleaved_counters();
  stats_.interleaved_bad_length += dropped.bad_length;
  if (c.parser.in_interleaved_frame()) ++stats_.interleaved_truncated;
}

std::vector<std::unique_ptr<RtspConnection>> RtspConnections::take_closed() {
  std::vector<std::unique_ptr<RtspConnection>> out;
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (it->second->is_open()) {
      ++it;
      continue;
    }
    forget(*it->second);
    out.push_back(std::move(it->second));
    it = connections_.erase(it);
  }
  return out;
}

std::unique_ptr<RtspConnection> RtspConnections::take(std::uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return nullptr;
  forget(*it->second);
  std::unique_ptr<RtspConnection> c = std::move(it->second);
  connections_.erase(it);
  return c;
}

std::vector<std::unique_ptr<RtspConnection>> RtspConnections::take_all() {
  std::vector<std::unique_ptr<RtspConnection>> out;
  for (auto& [id, c] : connections_) {
    c->close();
    out.push_back(std::move(c));
  }
  connections_.clear();
  paused_.clear();
  interleaved_.clear();
  return out;
}

bool RtspConnections::is_open(std::uint64_t id) const {
  const RtspConnection* c = find(id);
  return c != nullptr && c->is_open();
}

std::string RtspConnections::take_output(std::uint64_t id) {
  RtspConnection* c = find(id);
  if (c == nullptr || c->tcp) return {};
  return std::exchange(c->output, {});
}

std::size_t RtspConnections::session_refs() const {
  std::size_t n = 0;
  for (const auto& [id, c] : connections_) {
    n += c->sessions.size();
  }
  return n;
}

bool RtspConnections::flush_interleaved() {
  bool pending = false;
  for (std::uint64_t id : interleaved_) {
    RtspConnection* c = find(id);
    if (c != nullptr && c->interleaved && c->is_open()) {
      c->interleaved->queue().flush();
      pending = pending || c->interleaved->queue().queued_bytes() > 0;
    }
  }
  return pending;
}

}  // namespace predrop::server::detail

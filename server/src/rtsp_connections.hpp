#pragma once
// The RTSP connections of one StreamServer (stream_server.hpp): admission against
// max_connections (over it, the first request gets 503), the input each connection holds and
// the parser it goes through, the bound on what a client that does not read its replies may
// cost (pause answering it, then close), idle limits and request deadlines (slow-loris clients),
// and the interleaved media queues that wait for their sockets. What a parsed request means is
// not decided here: each request and each interleaved frame goes to the listener (the facade,
// which routes it to rtsp_methods.hpp or to a session), and the reply comes back.
//
// Time: every decision takes `now` (the server's clock) from the caller.
// Threading: the server's loop thread.
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "interleaved_link.hpp"
#include "live_publish.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/tcp.hpp"
#include "predrop/rtsp/rtsp_message.hpp"
#include "predrop/server/server_options.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::server::detail {

/// One RTSP connection: a real socket, or an attached one (tests and fuzzing) whose output is
/// kept in `output` until taken.
struct RtspConnection {
  std::uint64_t id = 0;
  std::unique_ptr<net::TcpConnection> tcp;
  net::SocketAddress peer;
  rtsp::RtspRequestParser parser;
  bool over_limit = false;  ///< Admitted past max_connections: its first request gets 503.
  // Input received but not yet parsed: all of it while the client does not read our replies
  // (reading_paused), else only during one receive() call.
  std::string input;
  std::size_t input_used = 0;  ///< Bytes of `input` already given to the parser.
  bool reading_paused = false;
  /// Clock time of the last byte received (or of the accept).
  std::uint64_t last_activity_us = 0;
  /// Clock time since when an incomplete request has sat in the parser (0 = none): a request
  /// must be complete within the idle timeout of its first byte (slow-loris clients that
  /// trickle a byte at a time never reset the clock).
  std::uint64_t partial_since_us = 0;
  /// SDES keys handed out in DESCRIBE on this connection, per stream: SETUP uses the same key.
  std::map<std::string, wire::SrtpKeyMaterial, std::less<>> keys;
  /// Live sessions set up on this connection: while there is one, the connection has the
  /// longer idle limit of a player's control channel.
  std::vector<std::string> sessions;
  std::string output;  ///< What an attached connection was sent (its write queue).
  /// Set by an accepted ANNOUNCE: the connection publishes a stream (docs/live.md).
  std::unique_ptr<Publisher> publisher;
  bool attached_open = true;
  /// Created by the first RTP/AVP/TCP SETUP. (Last member: it points at `tcp` and `output`.)
  std::unique_ptr<InterleavedLink> interleaved;

  RtspConnection();
  std::size_t unparsed() const { return input.size() - input_used; }
  bool is_open() const { return tcp ? tcp->is_open() : attached_open; }
  /// Queues `bytes` (a reply); a media frame half written goes out whole before it.
  void write(std::string bytes);
  std::size_t write_queue_bytes() const;
  void close_after_writes();
  void close();
};

/// Where a connection's requests and interleaved frames go.
class RtspConnectionListener {
 public:
  virtual ~RtspConnectionListener() = default;
  /// A complete request on `c` (not over the limit); returns the serialized reply.
  virtual std::string on_request(RtspConnection& c, rtsp::RtspRequest& request) = 0;
  /// A "$" frame the client sent on `c`.
  virtual void on_interleaved(RtspConnection& c, const rtsp::InterleavedFrame& frame) = 0;
};

/// Limits of the connections (from StreamServerOptions).
struct ConnectionLimits {
  std::size_t max_connections = 2000;
  std::size_t max_write_queue_bytes = std::size_t{1} << 20;
  std::uint32_t rtsp_idle_timeout_s = 30;
  std::uint32_t session_timeout_s = 60;
};

/// The connections of one server.
class RtspConnections {
 public:
  using Map = std::map<std::uint64_t, std::unique_ptr<RtspConnection>>;

  RtspConnections(ConnectionLimits limits, ServerStats& stats);

  /// Admits `c` at `now`: over max_connections it is kept only to answer its first request
  /// 503, and beyond an allowance on top it is closed at once (nullptr). Counted either way.
  RtspConnection* admit(std::unique_ptr<RtspConnection> c, std::uint64_t now);
  RtspConnection* find(std::uint64_t id) const;

  /// Bytes arrived on `c` at `now`: parsed and answered through `listener`, unless its client
  /// stopped reading (then held, within the bound).
  void receive(RtspConnection& c, std::span<const std::uint8_t> data, std::uint64_t now,
               RtspConnectionListener& listener);
  /// Connections that stopped being answered and whose replies drained: answered again through
  /// `listener` (`serve` wraps each in the caller's exception boundary; false if it threw).
  template <class Serve>
  void resume_paused(Serve&& serve);
  /// Parses and answers what `c` holds, unless its client stopped reading our replies.
  void serve(RtspConnection& c, std::uint64_t now, RtspConnectionListener& listener);

  /// The connections to close at `now`: silent for longer than their idle limit, or with a
  /// request not complete within the idle timeout. Closes them (counted) and returns none; the
  /// caller forgets every closed connection with take_closed().
  void close_overdue(std::uint64_t now);
  /// Takes every connection that is no longer open out of the table.
  std::vector<std::unique_ptr<RtspConnection>> take_closed();
  /// Takes connection `id` out of the table (nullptr if unknown).
  std::unique_ptr<RtspConnection> take(std::uint64_t id);
  /// Every connection out; each is closed.
  std::vector<std::unique_ptr<RtspConnection>> take_all();

  /// `c` now has an interleaved media queue that the pacer flushes.
  void note_interleaved(const RtspConnection& c) { interleaved_.insert(c.id); }
  /// Writes every interleaved queue as far as its socket takes it; true if one still holds
  /// bytes.
  bool flush_interleaved();
  /// True while some connection's queue is written only by polling (interleaved media, or
  /// replies a paused client has not read).
  bool needs_polling() const { return !interleaved_.empty() || !paused_.empty(); }
  bool any_paused() const { return !paused_.empty(); }

  const Map& all() const { return connections_; }
  std::size_t size() const { return connections_.size(); }
  /// True while connection `id` is open.
  bool is_open(std::uint64_t id) const;
  /// What was written to attached connection `id` since the last call (empty for a socket's).
  std::string take_output(std::uint64_t id);
  /// Sessions the connections carry, summed.
  std::size_t session_refs() const;

 private:
  std::uint64_t idle_limit_us(const RtspConnection& c) const;
  std::size_t pause_threshold() const { return limits_.max_write_queue_bytes / 4; }
  void close_for_backlog(RtspConnection& c);
  // The parser's counters and the indexes, for a connection leaving the table.
  void forget(const RtspConnection& c);

  ConnectionLimits limits_;
  ServerStats& stats_;
  Map connections_;
  std::uint64_t ids_ = 0;
  std::set<std::uint64_t> interleaved_;  // connections with a media queue
  std::set<std::uint64_t> paused_;       // connections whose client does not read
};

template <class Serve>
void RtspConnections::resume_paused(Serve&& serve) {
  for (auto it = paused_.begin(); it != paused_.end();) {
    RtspConnection* c = find(*it);
    if (c == nullptr || !c->is_open()) {
      it = paused_.erase(it);
      continue;
    }
    if (c->write_queue_bytes() > pause_threshold() / 2) {
      ++it;
      continue;
    }
    it = paused_.erase(it);
    c->reading_paused = false;
    // May pause it again, or close it.
    if (!serve(*c)) {
      ++stats_.connections_closed_by_exception;
      c->close();
    }
  }
}

}  // namespace predrop::server::detail

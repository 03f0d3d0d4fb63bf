#pragma once
// Helpers for the server tests in this folder: the sample clip, server options on loopback, and a
// plain POSIX RTSP peer (it can bind any 127/8 address, so tests can speak from a second client
// IP) whose request() pumps the server's loop until the whole response is in. The server's
// pacing timer (at most 50 ms apart, also when idle) keeps run_once() returning, so nothing here
// sleeps or waits on wall-clock time.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "predrop/media/media_file.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/rtsp/rtsp_message.hpp"
#include "predrop/server/stream_server.hpp"

namespace predrop::test {

/// The sample clip in 1 s blocks, opened once per test program.
inline std::shared_ptr<const media::MediaFile> sample_media() {
  static std::shared_ptr<const media::MediaFile> m = [] {
    media::PacketizeOptions po;
    po.block = {media::BlockSize::Unit::kDuration, 1'000'000};
    auto f = media::MediaFile::open(PREDROP_TEST_SAMPLE, po);
    EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message);
    return f.ok() ? f.value() : nullptr;
  }();
  return m;
}

/// Server options for loopback tests: the sample as "sample", policy basic, SRTP on.
inline server::StreamServerOptions loopback_options() {
  server::StreamServerOptions o;
  o.rtsp_listen = net::SocketAddress::loopback_v4(0);
  o.bind_ip = "127.0.0.1";
  o.streams.push_back({"sample", sample_media()});
  o.policy.policy = "basic";
  o.block_attribute = "duration_us=1000000;payload=1400";
  return o;
}

/// Runs the loop until `done()` or `max_rounds` loop iterations (a hang guard, not a clock).
inline bool pump_until(net::EventLoop& loop, const std::function<bool()>& done,
                       int max_rounds = 200'000) {
  for (int i = 0; i < max_rounds; ++i) {
    if (done()) return true;
    loop.run_once();
  }
  return done();
}

/// A request in wire form; `extra` is zero or more "Name: value\r\n" lines.
inline std::string request_text(std::string_view method, std::string_view url, std::uint32_t cseq,
                                std::string_view extra = {}) {
  std::string r;
  r.append(method).append(" ").append(url).append(" RTSP/1.0\r\nCSeq: ");
  r.append(std::to_string(cseq)).append("\r\n").append(extra).append("\r\n");
  return r;
}

/// One TCP connection to the server from `bind_ip`, with a blocking connect and send (loopback
/// completes both in the kernel) and non-blocking reads driven by the server's loop.
class PosixRtspPeer {
 public:
  PosixRtspPeer(net::EventLoop& loop, const net::SocketAddress& server,
                const std::string& bind_ip = "127.0.0.1")
      : loop_(loop) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_GE(fd_, 0);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    ::inet_pton(AF_INET, bind_ip.c_str(), &local.sin_addr);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local), 0)
        << std::strerror(errno);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(server.port());
    ::inet_pton(AF_INET, server.ip_string().c_str(), &to.sin_addr);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof to), 0)
        << std::strerror(errno);
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  }
  ~PosixRtspPeer() { close(); }
  PosixRtspPeer(const PosixRtspPeer&) = delete;
  PosixRtspPeer& operator=(const PosixRtspPeer&) = delete;

  /// Sends raw bytes; false if the connection is gone.
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EAGAIN) {
        loop_.run_once();
        continue;
      }
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  /// Sends `text` and returns the next response (nullopt if the server closed first).
  std::optional<rtsp::RtspResponse> request(const std::string& text) {
    if (!send(text)) return std::nullopt;
    return next_response();
  }

  /// Pumps the loop until a whole response is in, or the server closes the connection.
  std::optional<rtsp::RtspResponse> next_response() {
    std::optional<rtsp::RtspResponse> out;
    auto ev = parser_.next();
    pump_until(loop_, [&] {
      if (ev == rtsp::RtspParseEvent::kMessage) {
        out = parser_.take_response();
        return true;
      }
      if (ev == rtsp::RtspParseEvent::kError || closed_) return true;
      // Interleaved frames between replies (RTP/AVP/TCP sessions) are skipped, buffered ones
      // first: the parser holds them until next() moves past them.
      ev = ev == rtsp::RtspParseEvent::kInterleaved ? parser_.next() : read_some();
      return false;
    });
    if (!out && ev == rtsp::RtspParseEvent::kMessage) out = parser_.take_response();
    return out;
  }

  /// Reads what has arrived; true once the server has closed the connection (EOF or reset).
  bool server_closed() {
    if (!closed_) (void)read_some();
    return closed_;
  }

  /// Pumps the loop until the server closes the connection; returns whether it did.
  bool wait_closed(int max_rounds = 200'000) {
    return pump_until(
        loop_, [&] { return server_closed(); }, max_rounds);
  }

  /// Everything received so far.
  const std::string& received() const { return received_; }
  /// Local port of this peer.
  std::uint16_t local_port() const {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
  }
  int fd() const { return fd_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  rtsp::RtspParseEvent read_some() {
    char buf[16384];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      closed_ = true;
      return rtsp::RtspParseEvent::kNeedMore;
    }
    if (n < 0) return rtsp::RtspParseEvent::kNeedMore;
    received_.append(buf, static_cast<std::size_t>(n));
    return parser_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
  }

  net::EventLoop& loop_;
  int fd_ = -1;
  bool closed_ = false;
  std::string received_;
  rtsp::RtspResponseParser parser_;
};

/// The Session id of a response (empty if none).
inline std::string session_of(const rtsp::RtspResponse& r) {
  auto v = r.headers.get("Session");
  if (!v) return {};
  const std::string_view s = *v;
  return std::string(s.substr(0, s.find(';')));
}

}  // namespace predrop::test

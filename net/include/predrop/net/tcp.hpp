#pragma once
// TCP for the RTSP control channel: a listener that hands out connections and a connection that
// reads into a fixed buffer and writes owned strings.
//
// Ownership and lifetime: connections are owned through unique_ptr by whoever accepts (or
// connects) them. Destroying a connection closes it at once; libuv finishes the close later, and
// pending writes are cancelled and free their own buffers, so destroying a connection at any time
// -- mid-write, inside its own callbacks, after the peer vanished -- is safe.
// Threading: loop thread only. A connection may move to another loop (another thread) only as a
// DetachedTcpSocket: detach() on the accepting loop, adopt() on the serving one.
// Errors: setup returns core::Result; runtime failures of a connection (reset, write error,
// idle timeout) close it and are reported once through on_close.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "predrop/core/result.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"

namespace predrop::net {

/// A connected TCP socket on no loop, between TcpConnection::detach() on one loop and
/// TcpConnection::adopt() on another (one thread accepts, another serves). Move-only; the socket
/// is closed if it is never adopted. Any thread may move or destroy it.
class DetachedTcpSocket {
 public:
  DetachedTcpSocket() = default;
  ~DetachedTcpSocket();
  DetachedTcpSocket(DetachedTcpSocket&& other) noexcept;
  DetachedTcpSocket& operator=(DetachedTcpSocket&& other) noexcept;
  DetachedTcpSocket(const DetachedTcpSocket&) = delete;
  DetachedTcpSocket& operator=(const DetachedTcpSocket&) = delete;

  /// True while it holds a socket.
  bool valid() const { return fd_ >= 0; }
  /// Remote address, as the connection it was detached from knew it.
  const SocketAddress& peer_address() const { return peer_; }

 private:
  friend class TcpConnection;
  DetachedTcpSocket(int fd, const SocketAddress& peer) : fd_(fd), peer_(peer) {}
  void reset();

  int fd_ = -1;
  SocketAddress peer_;
};

/// One TCP connection. Created by TcpListener (accepted) or TcpConnection::connect().
class TcpConnection final : public detail::LoopHandle {
 public:
  /// Bytes received; the span is valid only during the call. May destroy the connection.
  using DataHandler = std::function<void(std::span<const std::uint8_t> data)>;
  /// The connection went down by itself: ok() for an orderly close by the peer (EOF), an error
  /// for reset, write failure or idle timeout. Runs at most once, never for close() or the
  /// destructor. May destroy the connection.
  using CloseHandler = std::function<void(const core::Status& why)>;
  /// Outcome of connect(); runs once unless the connection is destroyed first.
  using ConnectHandler = std::function<void(const core::Status& result)>;

  /// Size of the per-connection read buffer (RTSP requests are far smaller).
  static constexpr std::size_t kReadBufferSize = std::size_t{16} * 1024;

  /// Starts connecting to `to`. A setup failure is returned and `on_connected` never runs; a
  /// failure to connect is reported to `on_connected`. Call start() once connected.
  static core::Result<std::unique_ptr<TcpConnection>> connect(EventLoop& loop,
                                                              const SocketAddress& to,
                                                              ConnectHandler on_connected);
  /// A connection on `loop` for a socket detached from another loop; call start() next.
  static core::Result<std::unique_ptr<TcpConnection>> adopt(EventLoop& loop,
                                                            DetachedTcpSocket socket);
  ~TcpConnection() override;
  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;
  TcpConnection(TcpConnection&&) = delete;
  TcpConnection& operator=(TcpConnection&&) = delete;

  /// Installs the handlers and starts reading.
  core::Status start(DataHandler on_data, CloseHandler on_close);
  /// Queues `data`; the connection owns the bytes until libuv has written them. Errors if closed.
  core::Status write(std::string data);
  /// Writes what the kernel takes now of `first` then `second`, without queueing or copying
  /// (uv_try_write): the number of bytes taken, 0 while the socket buffer is full or writes are
  /// queued by write() (so bytes never overtake queued ones), an error if the connection failed.
  /// For the interleaved media path, which keeps its own bounded queue; allocation-free.
  core::Result<std::size_t> try_write(std::span<const std::uint8_t> first,
                                      std::span<const std::uint8_t> second = {});
  /// Closes after the queued writes have gone out (or failed), without reading further; on_close
  /// does not run. For "send the reply, then hang up".
  void close_after_writes();
  /// Closes now, cancelling queued writes; on_close does not run. Idempotent.
  void close();
  /// Takes the socket off this loop for adopt() on another: this connection closes (no callback
  /// runs) while the socket stays open in the result. Before start() only (nothing read yet).
  core::Result<DetachedTcpSocket> detach();

  /// Closes the connection with an error if no bytes arrive for `timeout_ms` (0 disables).
  void set_idle_timeout(std::uint64_t timeout_ms);

  /// Remote address (known once accepted or connected).
  const SocketAddress& peer_address() const { return peer_; }
  /// Local address (known once accepted or connected).
  const SocketAddress& local_address() const { return local_; }
  /// Bytes queued in libuv and not yet handed to the kernel.
  std::size_t write_queue_bytes() const;

 private:
  friend struct TcpCallbacks;
  friend class TcpListener;

  explicit TcpConnection(EventLoop& loop);
  void fail(const core::Status& why);
  void touch();
  void read_addresses();
  void on_handle_closing() override;

  EventLoop& loop_;
  DataHandler on_data_;
  CloseHandler on_close_;
  ConnectHandler on_connected_;
  SocketAddress peer_;
  SocketAddress local_;
  std::unique_ptr<Timer> idle_timer_;
  std::uint64_t idle_timeout_ms_ = 0;
  std::byte* read_buf_ = nullptr;  // Lives in the handle's block; freed with the handle.
  bool shutting_down_ = false;
};

/// A listening TCP socket that hands each accepted connection to its owner.
class TcpListener final : public detail::LoopHandle {
 public:
  /// Receives a new, not yet started connection; the callee owns it and calls start().
  using ConnectionHandler = std::function<void(std::unique_ptr<TcpConnection> connection)>;

  /// Binds and listens on `bind_to` (port 0 picks a free port); SO_REUSEADDR is set, as every
  /// server does, so a restart does not wait out TIME_WAIT.
  static core::Result<std::unique_ptr<TcpListener>> listen(EventLoop& loop,
                                                           const SocketAddress& bind_to,
                                                           ConnectionHandler on_connection,
                                                           int backlog = 128);

  /// Stops listening (idempotent).
  void close() { close_handle(); }
  /// The address actually bound.
  const SocketAddress& local_address() const { return local_; }
  /// accept() failures seen so far (for example EMFILE).
  std::uint64_t accept_errors() const { return accept_errors_; }

 private:
  friend struct TcpCallbacks;
  TcpListener(EventLoop& loop, ConnectionHandler on_connection);

  EventLoop& loop_;
  ConnectionHandler on_connection_;
  SocketAddress local_;
  std::uint64_t accept_errors_ = 0;
};

}  // namespace predrop::net

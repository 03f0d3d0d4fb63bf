#include "predrop/net/tcp.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <utility>

#include "predrop/net/callback_guard.hpp"
#include "uv_util.hpp"

namespace predrop::net {
namespace {

/// A write request that owns its bytes until libuv reports the write done or cancelled.
struct WriteReq {
  uv_write_t req;
  std::string data;
};

uv_stream_t* as_stream(uv_handle_t* h) {
  return reinterpret_cast<uv_stream_t*>(h);
}
uv_tcp_t* as_tcp(uv_handle_t* h) {
  return reinterpret_cast<uv_tcp_t*>(h);
}

core::Result<SocketAddress> tcp_address(uv_handle_t* h, bool peer) {
  sockaddr_storage ss{};
  int len = sizeof(ss);
  const int rc = peer ? uv_tcp_getpeername(as_tcp(h), reinterpret_cast<sockaddr*>(&ss), &len)
                      : uv_tcp_getsockname(as_tcp(h), reinterpret_cast<sockaddr*>(&ss), &len);
  if (rc != 0) {
    return detail::uv_error(peer ? "getpeername" : "getsockname", rc);
  }
  return SocketAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&ss));
}

}  // namespace

struct TcpCallbacks {
  static void on_alloc(uv_handle_t* h, std::size_t /*suggested*/, uv_buf_t* buf) {
    auto* self = detail::owner<TcpConnection>(h);
    if (self == nullptr) {
      *buf = uv_buf_init(nullptr, 0);
      return;
    }
    *buf = uv_buf_init(reinterpret_cast<char*>(self->read_buf_), TcpConnection::kReadBufferSize);
  }

  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
    auto* self = detail::owner<TcpConnection>(stream);
    if (self == nullptr || nread == 0) {
      return;  // 0 is libuv's EAGAIN.
    }
    if (nread > 0) {
      self->touch();
      // The handler may destroy the connection: after it, `self` is only looked up again.
      const bool ok = loop_guard().run(CallbackKind::kTcpData, [&] {
        self->on_data_(std::span<const std::uint8_t>(
            reinterpret_cast<const std::uint8_t*>(buf->base), static_cast<std::size_t>(nread)));
      });
      if (!ok) {
        // The handle outlives its wrapper until the loop's close callback, so this lookup is
        // safe; it is null if the handler destroyed the connection before throwing.
        if (auto* alive = detail::owner<TcpConnection>(stream)) {
          alive->fail(core::make_error("connection closed: its data handler threw"));
        }
      }
      return;
    }
    if (nread == UV_EOF) {
      self->fail(core::Ok{});
    } else {
      self->fail(detail::uv_error("read from " + self->peer_.to_string(), static_cast<int>(nread)));
    }
  }

  static void on_write(uv_write_t* req, int status) {
    std::unique_ptr<WriteReq> owned(static_cast<WriteReq*>(req->data));
    // ECANCELED means the connection was closed with the write queued: nobody is left to tell.
    if (status == 0 || status == UV_ECANCELED) {
      return;
    }
    auto* self = detail::owner<TcpConnection>(req->handle);
    owned.reset();
    if (self != nullptr) {
      self->fail(detail::uv_error("write to " + self->peer_.to_string(), status));
    }
  }

  static void on_shutdown(uv_shutdown_t* req, int /*status*/) {
    std::unique_ptr<uv_shutdown_t> owned(req);
    // Whatever the outcome, the connection is done; if the wrapper is gone it already closed.
    auto* self = detail::owner<TcpConnection>(req->handle);
    if (self != nullptr) {
      self->close();
    }
  }

  static void on_connect(uv_connect_t* req, int status) {
    std::unique_ptr<uv_connect_t> owned(req);
    auto* self = detail::owner<TcpConnection>(req->handle);
    if (self == nullptr) {
      return;  // Destroyed while connecting: the request was cancelled.
    }
    auto cb = std::move(self->on_connected_);
    self->on_connected_ = nullptr;
    if (status == 0) {
      self->read_addresses();
      if (cb) {
        auto* handle = req->handle;
        if (!loop_guard().run(CallbackKind::kTcpConnect, [&] { cb(core::Ok{}); })) {
          if (auto* alive = detail::owner<TcpConnection>(handle)) {
            alive->close();
          }
        }
      }
    } else {
      self->close();
      if (cb) {
        auto error = detail::uv_error("connect to " + self->peer_.to_string(), status);
        loop_guard().run(CallbackKind::kTcpConnect, [&] { cb(error); });
      }
    }
  }

  static void on_connection(uv_stream_t* server, int status) {
    auto* self = detail::owner<TcpListener>(server);
    if (self == nullptr) {
      return;
    }
    if (status < 0) {
      ++self->accept_errors_;
      return;
    }
    std::unique_ptr<TcpConnection> c(new TcpConnection(self->loop_));
    if (uv_accept(server, as_stream(c->handle_)) != 0) {
      ++self->accept_errors_;
      return;
    }
    // RTSP is request/response with small messages: Nagle would only add latency.
    uv_tcp_nodelay(as_tcp(c->handle_), 1);
    c->read_addresses();
    // Last use of `self`: the handler may destroy the listener. If it throws, the connection it
    // was handed is destroyed with the unwinding (or kept by the handler): either way, no leak.
    loop_guard().run(CallbackKind::kTcpAccept, [&] { self->on_connection_(std::move(c)); });
  }
};

// ---------------------------------------------------------------------------------------------
// TcpConnection

TcpConnection::TcpConnection(EventLoop& loop) : loop_(loop) {
  auto* h = detail::alloc_handle<uv_tcp_t>(kReadBufferSize);
  uv_tcp_init(loop.native(), h);  // Creates no socket yet, so it cannot fail.
  h->data = static_cast<detail::LoopHandle*>(this);
  handle_ = reinterpret_cast<uv_handle_t*>(h);
  read_buf_ = detail::handle_extra(h);
}

TcpConnection::~TcpConnection() = default;

// ---------------------------------------------------------------------------------------------
// DetachedTcpSocket

DetachedTcpSocket::~DetachedTcpSocket() {
  reset();
}

DetachedTcpSocket::DetachedTcpSocket(DetachedTcpSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), peer_(other.peer_) {}

DetachedTcpSocket& DetachedTcpSocket::operator=(DetachedTcpSocket&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = std::exchange(other.fd_, -1);
    peer_ = other.peer_;
  }
  return *this;
}

void DetachedTcpSocket::reset() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

core::Result<DetachedTcpSocket> TcpConnection::detach() {
  if (handle_ == nullptr) {
    return core::make_error("detach: connection is closed");
  }
  if (on_data_) {
    return core::make_error("detach: connection already started");
  }
  uv_os_fd_t fd = -1;
  if (const int rc = uv_fileno(handle_, &fd); rc != 0) {
    return detail::uv_error("uv_fileno", rc);
  }
  // libuv has no way to let go of a handle's descriptor without closing it: a duplicate keeps the
  // socket open (it shares O_NONBLOCK and TCP_NODELAY with the original) while the handle closes.
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) {
    return detail::uv_error("dup", -errno);
  }
  DetachedTcpSocket out(copy, peer_);
  close();
  return out;
}

core::Result<std::unique_ptr<TcpConnection>> TcpConnection::adopt(EventLoop& loop,
                                                                  DetachedTcpSocket socket) {
  if (!socket.valid()) {
    return core::make_error("adopt: no socket");
  }
  std::unique_ptr<TcpConnection> c(new TcpConnection(loop));
  if (const int rc = uv_tcp_open(as_tcp(c->handle_), socket.fd_); rc != 0) {
    return detail::uv_error("uv_tcp_open", rc);  // `socket` still owns the descriptor: closed
  }
  socket.fd_ = -1;          // the handle owns it now
  c->peer_ = socket.peer_;  // kept if getpeername fails (the peer already reset)
  c->read_addresses();
  return c;
}

core::Result<std::unique_ptr<TcpConnection>> TcpConnection::connect(EventLoop& loop,
                                                                    const SocketAddress& to,
                                                                    ConnectHandler on_connected) {
  std::unique_ptr<TcpConnection> c(new TcpConnection(loop));
  c->peer_ = to;
  c->on_connected_ = std::move(on_connected);
  sockaddr_storage ss{};
  to.to_sockaddr(ss);
  auto* req = new uv_connect_t;
  const int rc = uv_tcp_connect(req, as_tcp(c->handle_), reinterpret_cast<const sockaddr*>(&ss),
                                &TcpCallbacks::on_connect);
  if (rc != 0) {
    delete req;
    c->on_connected_ = nullptr;
    return detail::uv_error("connect to " + to.to_string(), rc);
  }
  uv_tcp_nodelay(as_tcp(c->handle_), 1);
  return c;
}

core::Status TcpConnection::start(DataHandler on_data, CloseHandler on_close) {
  if (handle_ == nullptr) {
    return core::make_error("start: connection is closed");
  }
  on_data_ = std::move(on_data);
  on_close_ = std::move(on_close);
  const int rc = uv_read_start(as_stream(handle_), &TcpCallbacks::on_alloc, &TcpCallbacks::on_read);
  if (rc != 0) {
    return detail::uv_error("read_start", rc);
  }
  touch();
  return core::Ok{};
}

core::Status TcpConnection::write(std::string data) {
  if (handle_ == nullptr || shutting_down_) {
    return core::make_error("write: connection is closed");
  }
  if (data.empty()) {
    return core::Ok{};
  }
  auto req = std::make_unique<WriteReq>();
  req->data = std::move(data);
  req->req.data = req.get();
  // The buffer points into the request's own string, which stays put until on_write.
  uv_buf_t buf = uv_buf_init(req->data.data(), static_cast<unsigned>(req->data.size()));
  const int rc = uv_write(&req->req, as_stream(handle_), &buf, 1, &TcpCallbacks::on_write);
  if (rc != 0) {
    return detail::uv_error("write to " + peer_.to_string(), rc);
  }
  static_cast<void>(req.release());  // on_write frees it.
  return core::Ok{};
}

core::Result<std::size_t> TcpConnection::try_write(std::span<const std::uint8_t> first,
                                                   std::span<const std::uint8_t> second) {
  if (handle_ == nullptr || shutting_down_) {
    return core::make_error("write: connection is closed");
  }
  // libuv's buffers are non-const only because uv_write shares the type; try_write reads them.
  std::array<uv_buf_t, 2> bufs{
      uv_buf_init(const_cast<char*>(reinterpret_cast<const char*>(first.data())),
                  static_cast<unsigned>(first.size())),
      uv_buf_init(const_cast<char*>(reinterpret_cast<const char*>(second.data())),
                  static_cast<unsigned>(second.size()))};
  const unsigned n = second.empty() ? 1U : 2U;
  if (first.empty()) {
    return std::size_t{0};
  }
  const int rc = uv_try_write(as_stream(handle_), bufs.data(), n);
  if (rc == UV_EAGAIN) {
    return std::size_t{0};
  }
  if (rc < 0) {
    return detail::uv_error("write to " + peer_.to_string(), rc);
  }
  return static_cast<std::size_t>(rc);
}

void TcpConnection::close_after_writes() {
  if (handle_ == nullptr || shutting_down_) {
    return;
  }
  shutting_down_ = true;
  // The handlers stay in place (this may run inside on_data, whose closure must outlive the
  // call); uv_read_stop ends on_data and fail() skips on_close while shutting down.
  if (idle_timer_) {
    idle_timer_->stop();
  }
  uv_read_stop(as_stream(handle_));
  auto* req = new uv_shutdown_t;
  if (uv_shutdown(req, as_stream(handle_), &TcpCallbacks::on_shutdown) != 0) {
    delete req;
    close();
  }
}

void TcpConnection::close() {
  close_handle();
}

void TcpConnection::on_handle_closing() {
  // Only stopped, not destroyed: this may run inside the idle timer's own callback.
  if (idle_timer_) {
    idle_timer_->stop();
  }
}

void TcpConnection::fail(const core::Status& why) {
  if (handle_ == nullptr) {
    return;
  }
  close_handle();
  if (shutting_down_) {
    return;  // close_after_writes() promised not to call on_close.
  }
  // Moved out so that the handler may destroy the connection (and with it on_close_) while it
  // runs; this is the last use of `this`.
  auto cb = std::move(on_close_);
  on_close_ = nullptr;
  if (cb) {
    loop_guard().run(CallbackKind::kTcpClose, [&] { cb(why); });
  }
}

void TcpConnection::touch() {
  if (idle_timeout_ms_ > 0 && idle_timer_ && !shutting_down_) {
    idle_timer_->start(idle_timeout_ms_);
  }
}

void TcpConnection::set_idle_timeout(std::uint64_t timeout_ms) {
  if (handle_ == nullptr) {
    return;
  }
  idle_timeout_ms_ = timeout_ms;
  if (timeout_ms == 0) {
    if (idle_timer_) {
      idle_timer_->stop();
    }
    return;
  }
  if (!idle_timer_) {
    idle_timer_ = std::make_unique<Timer>(loop_, [this] {
      fail(core::make_error("idle timeout: no data from " + peer_.to_string() + " for " +
                            std::to_string(idle_timeout_ms_) + " ms"));
    });
  }
  idle_timer_->start(timeout_ms);
}

void TcpConnection::read_addresses() {
  if (auto p = tcp_address(handle_, true)) {
    peer_ = *p;
  }
  if (auto l = tcp_address(handle_, false)) {
    local_ = *l;
  }
}

std::size_t TcpConnection::write_queue_bytes() const {
  return handle_ == nullptr ? 0 : uv_stream_get_write_queue_size(as_stream(handle_));
}

// ---------------------------------------------------------------------------------------------
// TcpListener

TcpListener::TcpListener(EventLoop& loop, ConnectionHandler on_connection)
    : loop_(loop), on_connection_(std::move(on_connection)) {}

core::Result<std::unique_ptr<TcpListener>> TcpListener::listen(EventLoop& loop,
                                                               const SocketAddress& bind_to,
                                                               ConnectionHandler on_connection,
                                                               int backlog) {
  std::unique_ptr<TcpListener> l(new TcpListener(loop, std::move(on_connection)));
  auto* h = detail::alloc_handle<uv_tcp_t>();
  int rc = uv_tcp_init_ex(loop.native(), h, bind_to.is_v4() ? AF_INET : AF_INET6);
  if (rc != 0) {
    detail::free_uninitialised(h);
    return detail::uv_error("uv_tcp_init_ex", rc);
  }
  h->data = static_cast<detail::LoopHandle*>(l.get());
  l->handle_ = reinterpret_cast<uv_handle_t*>(h);

  sockaddr_storage ss{};
  bind_to.to_sockaddr(ss);
  // libuv sets SO_REUSEADDR itself and reports EADDRINUSE from uv_listen, not from bind.
  rc =
      uv_tcp_bind(h, reinterpret_cast<const sockaddr*>(&ss), bind_to.is_v6() ? UV_TCP_IPV6ONLY : 0);
  if (rc != 0) {
    return detail::uv_error("bind " + bind_to.to_string(), rc);
  }
  rc = uv_listen(as_stream(l->handle_), backlog, &TcpCallbacks::on_connection);
  if (rc != 0) {
    return detail::uv_error("listen on " + bind_to.to_string(), rc);
  }
  auto local = tcp_address(l->handle_, false);
  if (!local) {
    return local.error();
  }
  l->local_ = *local;
  return l;
}

}  // namespace predrop::net

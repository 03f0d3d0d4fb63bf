#include "predrop/net/udp_endpoint.hpp"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "predrop/net/callback_guard.hpp"
#include "predrop/net/clock.hpp"
#include "uv_util.hpp"

namespace predrop::net {
namespace {

// libuv gives every recvmmsg slot this many bytes (UV__UDP_DGRAM_MAXSIZE in src/unix/udp.c) and
// reads at most UV__MMSG_MAXWIDTH datagrams per call.
constexpr std::size_t kLibuvSlot = std::size_t{64} * 1024;
constexpr unsigned kLibuvMaxMmsg = 20;

bool is_queue_full(int err) {
  return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS;
}

int get_int_sockopt(int fd, int level, int name) {
  int value = 0;
  socklen_t len = sizeof(value);
  if (fd < 0 || ::getsockopt(fd, level, name, &value, &len) != 0) {
    return 0;
  }
  return value;
}

// The kernel's receive time of the datagram just read (SIOCGSTAMPNS: CLOCK_REALTIME), on the
// monotonic clock that the rest of predrop uses; `now` (monotonic) when there is none. Both
// clocks are read here, so a stepped wall clock only moves the result between two datagrams.
std::uint64_t kernel_arrival_us(int fd, std::uint64_t now) {
  timespec stamp{};
  timespec real{};
  if (::ioctl(fd, SIOCGSTAMPNS, &stamp) != 0 || ::clock_gettime(CLOCK_REALTIME, &real) != 0) {
    return now;
  }
  const auto to_us = [](const timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000 + t.tv_nsec / 1'000;
  };
  const std::int64_t age = to_us(real) - to_us(stamp);
  if (age < 0 || static_cast<std::uint64_t>(age) > now) return now;
  return now - static_cast<std::uint64_t>(age);
}

}  // namespace

struct UdpEndpoint::SendScratch {
  std::array<mmsghdr, kMaxSendBatch> msgs;
  std::array<iovec, kMaxSendBatch> iovs;
  std::array<sockaddr_storage, kMaxSendBatch> addrs;
  // GSO: per message, its UDP_SEGMENT cmsg, its first datagram and how many it carries.
  struct alignas(cmsghdr) Control {
    char bytes[CMSG_SPACE(sizeof(std::uint16_t))];
  };
  std::array<Control, kMaxSendBatch> controls;
  std::array<std::size_t, kMaxSendBatch> first;
  std::array<std::size_t, kMaxSendBatch> count;
};

namespace {
// What sendmsg says when GSO itself is refused (udp_send_skb(), udp_sendmsg() in
// net/ipv4/udp.c): EIO without checksum offload, EINVAL for a segment size the route cannot
// carry, ENOPROTOOPT/EOPNOTSUPP on kernels or sockets without UDP_SEGMENT.
bool is_gso_refusal(int err) {
  return err == EIO || err == EINVAL || err == ENOPROTOOPT || err == EOPNOTSUPP;
}
}  // namespace

struct UdpCallbacks {
  static void on_alloc(uv_handle_t* h, std::size_t /*suggested*/, uv_buf_t* buf) {
    auto* self = detail::owner<UdpEndpoint>(h);
    if (self == nullptr) {
      *buf = uv_buf_init(nullptr, 0);
      return;
    }
    // The same slab every time: libuv delivers a whole batch before it asks for memory again,
    // and on_datagram must not keep the span.
    *buf =
        uv_buf_init(reinterpret_cast<char*>(self->slab_), static_cast<unsigned>(self->slab_len_));
  }

  static void on_recv(uv_udp_t* h, ssize_t nread, const uv_buf_t* buf, const sockaddr* addr,
                      unsigned flags) {
    auto* self = detail::owner<UdpEndpoint>(h);
    if (self == nullptr || (flags & UV_UDP_MMSG_FREE) != 0) {
      return;
    }
    if (nread < 0) {
      ++self->stats_.recv_errors;
      return;
    }
    if (addr == nullptr) {
      return;  // Nothing was ready (EAGAIN); libuv reports it as 0 bytes.
    }
    if ((flags & UV_UDP_PARTIAL) != 0) {
      ++self->stats_.truncated;
      return;
    }
    auto from = SocketAddress::from_sockaddr(addr);
    if (!from) {
      ++self->stats_.recv_errors;
      return;
    }
    ++self->stats_.received;
    std::uint64_t now = monotonic_now_us();
    if (self->kernel_timestamps_) now = kernel_arrival_us(self->fd_, now);
    // Last use of `self`: the handler may destroy the endpoint. A handler that throws loses only
    // this datagram.
    loop_guard().run(CallbackKind::kUdpReceive, [&] {
      self->on_datagram_(
          std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(buf->base),
                                        static_cast<std::size_t>(nread)),
          *from, now);
    });
  }
};

UdpEndpoint::UdpEndpoint(DatagramHandler on_datagram)
    : on_datagram_(std::move(on_datagram)), scratch_(std::make_unique<SendScratch>()) {
  std::memset(scratch_.get(), 0, sizeof(SendScratch));
}

UdpEndpoint::~UdpEndpoint() = default;

core::Result<std::unique_ptr<UdpEndpoint>> UdpEndpoint::open(EventLoop& loop,
                                                             const SocketAddress& bind_to,
                                                             const UdpOptions& options,
                                                             DatagramHandler on_datagram) {
  const unsigned batch =
      options.kernel_timestamps ? 1u : std::clamp(options.recv_batch, 1u, kLibuvMaxMmsg);
  const bool receiving = static_cast<bool>(on_datagram);
  const std::size_t slab_len = receiving ? batch * kLibuvSlot : 0;
  std::unique_ptr<UdpEndpoint> ep(new UdpEndpoint(std::move(on_datagram)));

  auto* h = detail::alloc_handle<uv_udp_t>(slab_len);
  unsigned init_flags = bind_to.is_v4() ? AF_INET : AF_INET6;
  if (batch > 1) {
    init_flags |= UV_UDP_RECVMMSG;
  }
  int rc = uv_udp_init_ex(loop.native(), h, init_flags);
  if (rc != 0) {
    detail::free_uninitialised(h);
    return detail::uv_error("uv_udp_init_ex", rc);
  }
  h->data = static_cast<detail::LoopHandle*>(ep.get());
  ep->handle_ = reinterpret_cast<uv_handle_t*>(h);
  ep->slab_ = detail::handle_extra(h);
  ep->slab_len_ = slab_len;

  uv_os_fd_t fd = -1;
  rc = uv_fileno(ep->handle_, &fd);
  if (rc != 0) {
    return detail::uv_error("uv_fileno", rc);
  }
  ep->fd_ = fd;

  const int yes = 1;
  if (options.reuse_port && ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof(yes)) != 0) {
    return detail::uv_error("setsockopt(SO_REUSEPORT)", -errno);
  }
  if (options.recv_buffer_bytes > 0 &&
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &options.recv_buffer_bytes, sizeof(int)) != 0) {
    return detail::uv_error("setsockopt(SO_RCVBUF)", -errno);
  }
  if (options.send_buffer_bytes > 0 &&
      ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &options.send_buffer_bytes, sizeof(int)) != 0) {
    return detail::uv_error("setsockopt(SO_SNDBUF)", -errno);
  }
  if (options.kernel_timestamps && receiving) {
    // Every datagram gets its receive time stamped from now on (libuv reads without a control
    // buffer, so the cmsg is cut and only the ioctl reads the stamp).
    if (::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &yes, sizeof(yes)) != 0) {
      return detail::uv_error("setsockopt(SO_TIMESTAMPNS)", -errno);
    }
    ep->kernel_timestamps_ = true;
  }

  sockaddr_storage ss{};
  bind_to.to_sockaddr(ss);
  // IPv6 sockets are v6-only so that peers never show up as v4-mapped addresses and a v4
  // destination on a v6 socket fails loudly instead of half-working.
  rc =
      uv_udp_bind(h, reinterpret_cast<const sockaddr*>(&ss), bind_to.is_v6() ? UV_UDP_IPV6ONLY : 0);
  if (rc != 0) {
    return detail::uv_error("bind " + bind_to.to_string(), rc);
  }

  int len = sizeof(ss);
  rc = uv_udp_getsockname(h, reinterpret_cast<sockaddr*>(&ss), &len);
  if (rc != 0) {
    return detail::uv_error("getsockname", rc);
  }
  auto local = SocketAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&ss));
  if (!local) {
    return local.error();
  }
  ep->local_ = *local;

  if (receiving) {
    rc = uv_udp_recv_start(h, &UdpCallbacks::on_alloc, &UdpCallbacks::on_recv);
    if (rc != 0) {
      return detail::uv_error("uv_udp_recv_start", rc);
    }
  }
  return ep;
}

bool UdpEndpoint::send(std::span<const std::uint8_t> data, const SocketAddress& to) {
  if (fd_ < 0) {
    ++stats_.send_errors;
    return false;
  }
  sockaddr_storage ss;
  const socklen_t len = to.to_sockaddr(ss);
  ssize_t n;
  do {
    n = ::sendto(fd_, data.data(), data.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&ss),
                 len);
  } while (n < 0 && errno == EINTR);
  if (n >= 0) {
    ++stats_.sent;
    return true;
  }
  if (is_queue_full(errno)) {
    ++stats_.send_drops;
  } else {
    ++stats_.send_errors;
  }
  return false;
}

std::size_t UdpEndpoint::send_batch(std::span<const OutDatagram> batch) {
  if (fd_ < 0) {
    stats_.send_errors += batch.size();
    return 0;
  }
  return gso_batches_ && gso_ok_ ? send_gso(batch) : send_plain(batch);
}

std::size_t UdpEndpoint::send_gso(std::span<const OutDatagram> batch) {
  SendScratch& s = *scratch_;
  std::size_t total = 0;
  std::size_t base = 0;  // first datagram of this round; a round takes <= kMaxSendBatch of them
  while (base < batch.size()) {
    // Group: consecutive datagrams to one destination, all as long as the first but the last,
    // which may be shorter (the kernel cuts every gso_size bytes).
    std::size_t msgs = 0;
    std::size_t d = base;
    while (d < batch.size() && d - base < kMaxSendBatch) {
      const OutDatagram& head = batch[d];
      std::size_t n = 1;
      std::size_t bytes = head.len;
      while (head.to != nullptr && head.len != 0 && d + n < batch.size() &&
             d + n - base < kMaxSendBatch && n < kMaxGsoSegments) {
        const OutDatagram& next = batch[d + n];
        if (next.to == nullptr || next.len == 0 || next.len > head.len ||
            bytes + next.len > kMaxGsoBytes || (next.to != head.to && !(*next.to == *head.to))) {
          break;
        }
        bytes += next.len;
        ++n;
        if (next.len < head.len) break;  // a shorter segment can only be the last
      }
      const std::size_t k = d - base;
      for (std::size_t j = 0; j < n; ++j) {
        s.iovs[k + j].iov_base = const_cast<std::uint8_t*>(batch[d + j].data);
        s.iovs[k + j].iov_len = batch[d + j].len;
      }
      msghdr& m = s.msgs[msgs].msg_hdr;
      m.msg_iov = &s.iovs[k];
      m.msg_iovlen = n;
      m.msg_flags = 0;
      if (head.to != nullptr) {
        m.msg_name = &s.addrs[msgs];
        m.msg_namelen = head.to->to_sockaddr(s.addrs[msgs]);
      } else {
        m.msg_name = nullptr;
        m.msg_namelen = 0;
      }
      if (n > 1) {
        m.msg_control = s.controls[msgs].bytes;
        m.msg_controllen = sizeof(s.controls[msgs].bytes);
        cmsghdr* c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_UDP;
        c->cmsg_type = UDP_SEGMENT;
        c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
        const auto seg = static_cast<std::uint16_t>(head.len);
        std::memcpy(CMSG_DATA(c), &seg, sizeof(seg));
      } else {
        m.msg_control = nullptr;
        m.msg_controllen = 0;
      }
      s.first[msgs] = d;
      s.count[msgs] = n;
      ++msgs;
      d += n;
    }
    std::size_t off = 0;
    while (off < msgs) {
      const int r = ::sendmmsg(fd_, &s.msgs[off], static_cast<unsigned>(msgs - off), MSG_DONTWAIT);
      if (r > 0) {
        for (std::size_t k = off; k < off + static_cast<std::size_t>(r); ++k) {
          total += s.count[k];
          stats_.sent += s.count[k];
          if (s.count[k] > 1) ++stats_.gso_messages;
        }
        off += static_cast<std::size_t>(r);
        continue;
      }
      if (r < 0 && errno == EINTR) {
        continue;
      }
      if (r == 0 || is_queue_full(errno)) {
        stats_.send_drops += batch.size() - s.first[off];
        return total;
      }
      if (s.count[off] > 1 && is_gso_refusal(errno)) {
        // Refused for good: the rest of the batch, and every later one, as single datagrams.
        gso_ok_ = false;
        ++stats_.gso_fallbacks;
        return total + send_plain(batch.subspan(s.first[off]));
      }
      // Refused for its own reason (sendmmsg reports only the first failure): skip it.
      stats_.send_errors += s.count[off];
      ++off;
    }
    base = d;
  }
  return total;
}

std::size_t UdpEndpoint::send_plain(std::span<const OutDatagram> batch) {
  SendScratch& s = *scratch_;
  std::size_t total = 0;
  for (std::size_t base = 0; base < batch.size(); base += kMaxSendBatch) {
    const std::size_t n = std::min(kMaxSendBatch, batch.size() - base);
    for (std::size_t k = 0; k < n; ++k) {
      const OutDatagram& d = batch[base + k];
      s.iovs[k].iov_base = const_cast<std::uint8_t*>(d.data);
      s.iovs[k].iov_len = d.len;
      msghdr& m = s.msgs[k].msg_hdr;
      m.msg_iov = &s.iovs[k];
      m.msg_iovlen = 1;
      m.msg_control = nullptr;
      m.msg_controllen = 0;
      m.msg_flags = 0;
      if (d.to != nullptr) {
        m.msg_name = &s.addrs[k];
        m.msg_namelen = d.to->to_sockaddr(s.addrs[k]);
      } else {
        // The kernel answers EDESTADDRREQ for this datagram alone; it is counted as an error.
        m.msg_name = nullptr;
        m.msg_namelen = 0;
      }
    }
    std::size_t off = 0;
    while (off < n) {
      const int r = ::sendmmsg(fd_, &s.msgs[off], static_cast<unsigned>(n - off), MSG_DONTWAIT);
      if (r > 0) {
        off += static_cast<std::size_t>(r);
        total += static_cast<std::size_t>(r);
        stats_.sent += static_cast<std::uint64_t>(r);
        continue;
      }
      if (r < 0 && errno == EINTR) {
        continue;
      }
      if (r == 0 || is_queue_full(errno)) {
        // The socket queue is full; later datagrams would meet the same fate this instant.
        stats_.send_drops += batch.size() - (base + off);
        return total;
      }
      // sendmmsg reports an error only for the first datagram it could not send: skip that one.
      ++stats_.send_errors;
      ++off;
    }
  }
  return total;
}

std::size_t UdpEndpoint::send_segments(std::span<const std::uint8_t> data, std::size_t segment_size,
                                       const SocketAddress& to) {
  if (data.empty()) {
    return 0;
  }
  const std::size_t count = segment_size == 0 ? 0 : (data.size() + segment_size - 1) / segment_size;
  // 65000 leaves room for IPv6 + UDP headers inside one 64 KiB GSO super-packet.
  if (fd_ < 0 || count == 0 || count > kMaxGsoSegments || data.size() > 65000 ||
      segment_size > 0xffff) {
    stats_.send_errors += count == 0 ? 1 : count;
    return 0;
  }
  if (gso_ok_ && count > 1) {
    sockaddr_storage ss;
    iovec iov{const_cast<std::uint8_t*>(data.data()), data.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(std::uint16_t))] = {};
    msghdr m{};
    m.msg_name = &ss;
    m.msg_namelen = to.to_sockaddr(ss);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
    const auto seg = static_cast<std::uint16_t>(segment_size);
    std::memcpy(CMSG_DATA(c), &seg, sizeof(seg));
    ssize_t n;
    do {
      n = ::sendmsg(fd_, &m, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n >= 0) {
      stats_.sent += count;
      return count;
    }
    if (is_queue_full(errno)) {
      stats_.send_drops += count;
      return 0;
    }
    if (errno != EIO && errno != EINVAL && errno != ENOPROTOOPT && errno != EOPNOTSUPP) {
      stats_.send_errors += count;
      return 0;
    }
    // The kernel or the route's device cannot segment: use sendmmsg from now on.
    gso_ok_ = false;
  }
  std::array<OutDatagram, kMaxGsoSegments> batch;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t off = i * segment_size;
    batch[i] = OutDatagram{data.data() + off, std::min(segment_size, data.size() - off), &to};
  }
  return send_batch({batch.data(), count});
}

bool UdpEndpoint::using_recvmmsg() const {
  return handle_ != nullptr && uv_udp_using_recvmmsg(reinterpret_cast<uv_udp_t*>(handle_)) != 0;
}

int UdpEndpoint::recv_buffer_bytes() const {
  return get_int_sockopt(fd_, SOL_SOCKET, SO_RCVBUF);
}

int UdpEndpoint::send_buffer_bytes() const {
  return get_int_sockopt(fd_, SOL_SOCKET, SO_SNDBUF);
}

}  // namespace predrop::net

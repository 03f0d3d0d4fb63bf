#pragma once
// UDP socket on a libuv loop, built for the media packet path:
// - receive uses libuv's recvmmsg mode (UV_UDP_RECVMMSG) into one slab allocated at open();
// - send bypasses libuv's request queue and writes on the socket fd directly (sendto/sendmmsg,
//   non-blocking), so nothing is allocated or queued per packet. A datagram the kernel will not
//   take right now (EAGAIN/ENOBUFS) is dropped and counted, never buffered: for real-time media a
//   late packet is worth less than a lost one, and predrop's own discarding sits upstream.
// Threading: loop thread only. Errors on the packet path are counted in UdpStats, not thrown.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "predrop/core/result.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"

namespace predrop::net {

/// Socket options chosen at open().
struct UdpOptions {
  /// SO_REUSEPORT: several sockets share the port and the kernel spreads datagrams among them.
  bool reuse_port = false;
  /// SO_RCVBUF in bytes (0 = system default). Linux doubles it and caps it at net.core.rmem_max.
  int recv_buffer_bytes = 0;
  /// SO_SNDBUF in bytes (0 = system default). Capped at net.core.wmem_max.
  int send_buffer_bytes = 0;
  /// Datagrams per recvmmsg call, 1..20 (libuv's UV__MMSG_MAXWIDTH). libuv gives each slot 64 KiB,
  /// so the slab is recv_batch x 64 KiB of address space; only the pages datagrams touch become
  /// resident (about 4 KiB per slot for media-sized datagrams). 1 turns recvmmsg off.
  unsigned recv_batch = 20;
  /// Arrival times from the kernel (SO_TIMESTAMPNS, read with SIOCGSTAMPNS after each datagram)
  /// instead of the time the loop got to the datagram: a receiver that measures packet spacing
  /// (the reception meter's dispersion and in-stage queueing delay) must not see its own busy
  /// periods as network delay. Needs recv_batch = 1 (the ioctl names the last datagram read);
  /// open() forces it. The stamp is converted to the monotonic clock; without one (the kernel
  /// did not stamp the datagram) the loop's time is used.
  bool kernel_timestamps = false;
};

/// Per-endpoint counters; all monotonic.
struct UdpStats {
  std::uint64_t sent = 0;         ///< Datagrams the kernel accepted.
  std::uint64_t send_drops = 0;   ///< Datagrams dropped because the socket/device queue was full.
  std::uint64_t send_errors = 0;  ///< Datagrams refused for another reason (bad address, size...).
  std::uint64_t received = 0;     ///< Datagrams delivered to on_datagram.
  std::uint64_t recv_errors = 0;  ///< Failed receive calls reported by libuv.
  std::uint64_t truncated = 0;    ///< Datagrams cut short by the receive slot (then not delivered).
  std::uint64_t gso_messages = 0;   ///< send_batch() messages that carried 2+ datagrams (GSO).
  std::uint64_t gso_fallbacks = 0;  ///< Times the kernel refused GSO (0 or 1: then never again).
};

/// One datagram of a send_batch() call; the pointers only need to live for the call.
struct OutDatagram {
  const std::uint8_t* data;
  std::size_t len;
  const SocketAddress* to;
};

/// A bound UDP socket. Created by open(); owned through unique_ptr because libuv holds a pointer
/// to it. The receive callback may destroy the endpoint.
class UdpEndpoint final : public detail::LoopHandle {
 public:
  /// Receives one datagram. `data` points into the receive slab and is valid only during the
  /// call; `recv_time_us` is monotonic_now_us() taken when the datagram was read.
  using DatagramHandler = std::function<void(
      std::span<const std::uint8_t> data, const SocketAddress& from, std::uint64_t recv_time_us)>;

  /// Maximum datagrams handed to one sendmmsg(2) call; larger batches are split.
  static constexpr std::size_t kMaxSendBatch = 64;

  /// Binds to `bind_to` (port 0 picks a free port) and starts receiving if `on_datagram` is set.
  static core::Result<std::unique_ptr<UdpEndpoint>> open(EventLoop& loop,
                                                         const SocketAddress& bind_to,
                                                         const UdpOptions& options,
                                                         DatagramHandler on_datagram);
  ~UdpEndpoint() override;
  UdpEndpoint(const UdpEndpoint&) = delete;
  UdpEndpoint& operator=(const UdpEndpoint&) = delete;
  UdpEndpoint(UdpEndpoint&&) = delete;
  UdpEndpoint& operator=(UdpEndpoint&&) = delete;

  /// Sends one datagram now. Returns true if the kernel took it; otherwise counts a drop or error.
  bool send(std::span<const std::uint8_t> data, const SocketAddress& to);
  /// Sends the datagrams in order with sendmmsg(2); returns how many the kernel took. When the
  /// socket queue fills (EAGAIN/ENOBUFS) the rest of the batch is dropped and counted; a datagram
  /// refused for its own reason (bad address, too large) is counted and skipped.
  ///
  /// With set_gso(true), each run of consecutive datagrams to one destination whose lengths are
  /// equal (the last may be shorter) goes as one UDP GSO message inside the same sendmmsg
  /// (a UDP_SEGMENT cmsg with the run's length, at most kMaxGsoSegments datagrams and
  /// kMaxGsoBytes bytes): one trip through the stack per run, and the receiver still gets
  /// separate datagrams. If the kernel refuses GSO (EIO: no checksum offload on the route's
  /// device; EINVAL; ENOPROTOOPT/EOPNOTSUPP: a kernel without it), that is counted in
  /// UdpStats::gso_fallbacks and this and every later batch go as single datagrams.
  std::size_t send_batch(std::span<const OutDatagram> batch);
  /// Turns GSO grouping in send_batch() on or off (off at open()).
  void set_gso(bool on) { gso_batches_ = on; }
  /// True while send_batch() groups datagrams with GSO (set_gso(true) and not refused).
  bool gso_batching() const { return gso_batches_ && gso_ok_; }
  /// Most bytes in one GSO message: room for IPv6 + UDP headers inside a 64 KiB super-packet.
  static constexpr std::size_t kMaxGsoBytes = 65000;

  /// Most segments one send_segments() call takes (the kernel's UDP_MAX_SEGMENTS).
  static constexpr std::size_t kMaxGsoSegments = 64;

  /// Sends `data` as consecutive datagrams of `segment_size` bytes (the last may be shorter) to
  /// one destination with a single UDP GSO sendmsg (UDP_SEGMENT, Linux 4.18+): one trip through
  /// the stack for up to 64 packets. `data` must hold at most kMaxGsoSegments segments and at most
  /// 65000 bytes. If the kernel or device refuses GSO, this falls back to sendmmsg for this and
  /// every later call. Returns how many datagrams went out (all or none, except on fallback).
  std::size_t send_segments(std::span<const std::uint8_t> data, std::size_t segment_size,
                            const SocketAddress& to);
  /// False once GSO was refused and send_segments() fell back to sendmmsg.
  bool gso_available() const { return gso_ok_; }

  /// Closes the socket now (idempotent); no callback runs afterwards.
  void close() { close_handle(); }

  /// The address actually bound (resolves port 0).
  const SocketAddress& local_address() const { return local_; }
  /// Counters since open().
  const UdpStats& stats() const { return stats_; }
  /// True if libuv reads with recvmmsg(2) on this socket.
  bool using_recvmmsg() const;
  /// SO_RCVBUF as the kernel reports it (already doubled), or 0 when closed.
  int recv_buffer_bytes() const;
  /// SO_SNDBUF as the kernel reports it, or 0 when closed.
  int send_buffer_bytes() const;

 private:
  friend struct UdpCallbacks;
  struct SendScratch;  // Preallocated msghdr/iovec/sockaddr arrays for send_batch().

  explicit UdpEndpoint(DatagramHandler on_datagram);
  void on_handle_closing() override { fd_ = -1; }

  // send_batch() without GSO, and with it.
  std::size_t send_plain(std::span<const OutDatagram> batch);
  std::size_t send_gso(std::span<const OutDatagram> batch);

  DatagramHandler on_datagram_;
  SocketAddress local_;
  UdpStats stats_;
  int fd_ = -1;
  bool gso_ok_ = true;
  bool gso_batches_ = false;
  bool kernel_timestamps_ = false;
  std::byte* slab_ = nullptr;  // Lives in the handle's block; freed with the handle.
  std::size_t slab_len_ = 0;
  std::unique_ptr<SendScratch> scratch_;
};

}  // namespace predrop::net

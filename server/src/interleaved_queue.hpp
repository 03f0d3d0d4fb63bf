#pragma once
// The bounded media queue of one RTSP connection that carries interleaved sessions (RFC 2326
// §10.12): every RTP and RTCP packet of those sessions becomes one "$" channel length frame in a
// ring allocated once, and the ring is written to the socket with TcpConnection::try_write, which
// neither copies nor queues. A frame that does not fit whole is refused (the caller counts it as
// dropped), so a player that reads slowly costs the server at most the ring: the depth of the
// ring and of the kernel's send buffer behind it is the congestion signal on TCP.
//
// RTSP replies share the byte stream: before one is queued (TcpConnection::write) the rest of a
// frame already half written is handed over with it (take_partial()), and try_write takes nothing
// while such writes are queued, so frames and replies never interleave inside each other.
//
// Threading: the server's loop thread. Per packet: one copy into the ring, no allocation.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "predrop/net/tcp.hpp"
#include "predrop/server/session_transport.hpp"

namespace predrop::server::detail {

/// Counters of one connection's interleaved queue.
struct InterleavedQueueStats {
  std::uint64_t frames = 0;         ///< Frames queued.
  std::uint64_t dropped = 0;        ///< Frames refused: the ring was full (or the socket failed).
  std::uint64_t bytes_written = 0;  ///< Bytes handed to the kernel (or to the attached output).
  std::uint64_t write_errors = 0;   ///< try_write failures (the connection is going down).
  std::size_t peak_bytes = 0;       ///< Largest depth of the ring seen.
};

/// One connection's ring of interleaved frames. Writes to `tcp`, or appends to `output` when
/// `tcp` is null (connections attached by tests and the fuzzer).
class InterleavedQueue final : public InterleavedOutput {
 public:
  /// `frames_total` and `dropped_total` are server-wide counters it adds to (they outlive it).
  InterleavedQueue(net::TcpConnection* tcp, std::string* output, std::size_t capacity,
                   std::uint64_t& frames_total, std::uint64_t& dropped_total);
  ~InterleavedQueue() override;
  InterleavedQueue(const InterleavedQueue&) = delete;
  InterleavedQueue& operator=(const InterleavedQueue&) = delete;

  bool write_frame(std::uint8_t channel, std::span<const std::uint8_t> data) override;
  std::size_t queued_bytes() const override { return size_; }

  /// Writes what the socket takes now.
  void flush();
  /// Removes and returns the unwritten rest of a frame that is partly written (empty if none):
  /// it must precede any other byte queued on the connection.
  std::string take_partial();
  const InterleavedQueueStats& stats() const { return stats_; }
  std::size_t capacity() const { return capacity_; }

 private:
  // Drops `n` written bytes from the head, keeping track of where the head frame ends.
  void consume(std::size_t n);
  std::uint8_t at(std::size_t offset) const { return ring_[(head_ + offset) % capacity_]; }

  net::TcpConnection* tcp_;
  std::string* output_;
  std::size_t capacity_;
  std::unique_ptr<std::uint8_t[]> ring_;
  std::size_t head_ = 0;        // first unwritten byte
  std::size_t size_ = 0;        // unwritten bytes
  std::size_t frame_left_ = 0;  // unwritten bytes of the head frame when it is partly written
  bool failed_ = false;
  InterleavedQueueStats stats_;
  std::uint64_t& frames_total_;
  std::uint64_t& dropped_total_;
};

}  // namespace predrop::server::detail

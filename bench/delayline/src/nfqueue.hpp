#pragma once
// libnetfilter_queue, wrapped once (STYLE.md: one RAII class per C handle, errors become text
// here). One NfQueues owns the netlink handle and one queue handle per delay class; packets are
// delivered metadata-only (NFQNL_COPY_META: the verdict needs the id, never the payload).
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "predrop/core/result.hpp"

struct nfq_handle;
struct nfq_q_handle;

namespace predrop::delayline {

/// The NFQUEUE queues of one delay line on one netlink socket.
class NfQueues {
 public:
  /// Called for each queued packet: the index of its queue (order given to open()) and its id.
  using OnPacket = std::function<void(std::size_t queue, std::uint32_t id)>;
  /// What libnetfilter_queue's C callback gets for each queue: where to deliver, which queue.
  struct Context {
    const OnPacket* on_packet;
    std::size_t queue;
  };

  /// Binds queue numbers `queue_nums` with `maxlen` packets each in the kernel, fail-open off (a
  /// full kernel queue drops, and the kernel counts it), and a large socket buffer.
  static core::Result<std::unique_ptr<NfQueues>> open(std::span<const std::uint16_t> queue_nums,
                                                      std::uint32_t maxlen, OnPacket on_packet);
  ~NfQueues();
  NfQueues(const NfQueues&) = delete;
  NfQueues& operator=(const NfQueues&) = delete;

  /// The netlink socket to poll for readability.
  int fd() const { return fd_; }
  /// Reads and dispatches every message waiting on the socket; errors other than "nothing more"
  /// come back as text (ENOBUFS means the kernel dropped messages: the socket buffer was full).
  core::Status read_pending();
  /// Accepts every held packet of queue index `queue` with id <= `last_id` (one batch verdict).
  core::Status accept_up_to(std::size_t queue, std::uint32_t last_id);
  /// Drops packet `id` of queue index `queue`.
  core::Status drop(std::size_t queue, std::uint32_t id);

 private:
  struct Closer {
    void operator()(nfq_handle* h) const;
  };
  struct QueueCloser {
    void operator()(nfq_q_handle* q) const;
  };
  NfQueues() = default;

  std::unique_ptr<nfq_handle, Closer> handle_;
  std::vector<std::unique_ptr<nfq_q_handle, QueueCloser>> queues_;
  std::vector<std::unique_ptr<Context>> contexts_;
  OnPacket on_packet_;
  int fd_ = -1;
  std::vector<char> buffer_;
};

}  // namespace predrop::delayline

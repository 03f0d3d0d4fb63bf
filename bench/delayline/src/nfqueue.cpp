#include "nfqueue.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <cerrno>
#include <cstring>
#include <string>

#include <libnetfilter_queue/libnetfilter_queue.h>
#include <libnfnetlink/libnfnetlink.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>

namespace predrop::delayline {

namespace {

// Enough for ~64 k metadata-only messages queued at once; the kernel doubles the value.
constexpr int kSocketBuffer = 16 * 1024 * 1024;

core::Error errno_error(const std::string& what) {
  return core::make_error(what + ": " + std::strerror(errno));
}

/// libnetfilter_queue's per-packet callback: hands the packet id to the queue's OnPacket.
int dispatch(nfq_q_handle*, nfgenmsg*, nfq_data* nfa, void* data) {
  const auto* ctx = static_cast<const NfQueues::Context*>(data);
  const nfqnl_msg_packet_hdr* ph = nfq_get_msg_packet_hdr(nfa);
  if (ph != nullptr) (*ctx->on_packet)(ctx->queue, ntohl(ph->packet_id));
  return 0;
}

}  // namespace

void NfQueues::Closer::operator()(nfq_handle* h) const {
  nfq_close(h);
}
void NfQueues::QueueCloser::operator()(nfq_q_handle* q) const {
  nfq_destroy_queue(q);
}

core::Result<std::unique_ptr<NfQueues>> NfQueues::open(std::span<const std::uint16_t> queue_nums,
                                                       std::uint32_t maxlen, OnPacket on_packet) {
  std::unique_ptr<NfQueues> self(new NfQueues());
  self->on_packet_ = std::move(on_packet);
  self->handle_.reset(nfq_open());
  if (!self->handle_) return errno_error("nfq_open (needs CAP_NET_ADMIN in this namespace)");
  // Before kernel 3.8 a protocol family had to be bound; harmless (ignored) since.
  nfq_bind_pf(self->handle_.get(), AF_INET);
  for (std::size_t i = 0; i < queue_nums.size(); ++i) {
    self->contexts_.push_back(std::make_unique<Context>(Context{&self->on_packet_, i}));
    nfq_q_handle* q = nfq_create_queue(self->handle_.get(), queue_nums[i], &dispatch,
                                       self->contexts_.back().get());
    if (q == nullptr) {
      return errno_error("nfq_create_queue " + std::to_string(queue_nums[i]) +
                         " (another process bound it?)");
    }
    self->queues_.emplace_back(q);
    if (nfq_set_mode(q, NFQNL_COPY_META, 0) < 0) return errno_error("nfq_set_mode");
    if (nfq_set_queue_maxlen(q, maxlen) < 0) return errno_error("nfq_set_queue_maxlen");
    // Fail-open off: when the kernel queue is full the packet is dropped (and counted in
    // /proc/net/netfilter/nfnetlink_queue), never let through undelayed out of order.
    if (nfq_set_queue_flags(q, NFQA_CFG_F_FAIL_OPEN, 0) < 0) {
      return errno_error("nfq_set_queue_flags");
    }
  }
  self->fd_ = nfq_fd(self->handle_.get());
  nfnl_rcvbufsiz(nfq_nfnlh(self->handle_.get()), kSocketBuffer);
  int on = 1;
  setsockopt(self->fd_, SOL_NETLINK, NETLINK_NO_ENOBUFS, &on, sizeof on);
  self->buffer_.resize(1 << 16);
  return self;
}

NfQueues::~NfQueues() {
  queues_.clear();  // destroy the queues before the handle they belong to
  handle_.reset();
}

core::Status NfQueues::read_pending() {
  for (;;) {
    const ssize_t n = recv(fd_, buffer_.data(), buffer_.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return core::Ok{};
      return errno_error("recv on the nfqueue socket");
    }
    if (n == 0) return core::Ok{};
    nfq_handle_packet(handle_.get(), buffer_.data(), static_cast<int>(n));
  }
}

core::Status NfQueues::accept_up_to(std::size_t queue, std::uint32_t last_id) {
  if (nfq_set_verdict_batch(queues_[queue].get(), last_id, NF_ACCEPT) < 0) {
    return errno_error("nfq_set_verdict_batch");
  }
  return core::Ok{};
}

core::Status NfQueues::drop(std::size_t queue, std::uint32_t id) {
  if (nfq_set_verdict(queues_[queue].get(), id, NF_DROP, 0, nullptr) < 0) {
    return errno_error("nfq_set_verdict");
  }
  return core::Ok{};
}

}  // namespace predrop::delayline

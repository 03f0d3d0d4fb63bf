#include "interleaved_queue.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace predrop::server::detail {

namespace {
constexpr std::size_t kFrameHeader = 4;  // '$', channel, 16-bit length (RFC 2326 §10.12)
}  // namespace

InterleavedQueue::InterleavedQueue(net::TcpConnection* tcp, std::string* output,
                                   std::size_t capacity, std::uint64_t& frames_total,
                                   std::uint64_t& dropped_total)
    : tcp_(tcp),
      output_(output),
      capacity_(std::max<std::size_t>(capacity, kFrameHeader + 1)),
      ring_(std::make_unique<std::uint8_t[]>(capacity_)),
      frames_total_(frames_total),
      dropped_total_(dropped_total) {}

InterleavedQueue::~InterleavedQueue() = default;

bool InterleavedQueue::write_frame(std::uint8_t channel, std::span<const std::uint8_t> data) {
  const std::size_t need = kFrameHeader + data.size();
  // Full: first hand the kernel what it takes now (a burst larger than the ring is not a slow
  // reader); only what still does not fit is dropped.
  if (size_ + need > capacity_) flush();
  if (failed_ || data.size() > 0xffff || size_ + need > capacity_) {
    ++stats_.dropped;
    ++dropped_total_;
    return false;
  }
  const std::array<std::uint8_t, kFrameHeader> header{'$', channel,
                                                      static_cast<std::uint8_t>(data.size() >> 8),
                                                      static_cast<std::uint8_t>(data.size())};
  std::size_t tail = (head_ + size_) % capacity_;
  const auto put = [&](const std::uint8_t* bytes, std::size_t n) {
    const std::size_t first = std::min(n, capacity_ - tail);
    std::memcpy(ring_.get() + tail, bytes, first);
    if (n > first) std::memcpy(ring_.get(), bytes + first, n - first);
    tail = (tail + n) % capacity_;
  };
  put(header.data(), header.size());
  if (!data.empty()) put(data.data(), data.size());
  size_ += need;
  ++stats_.frames;
  ++frames_total_;
  stats_.peak_bytes = std::max(stats_.peak_bytes, size_);
  return true;
}

void InterleavedQueue::flush() {
  if (size_ == 0 || failed_) return;
  const std::size_t first = std::min(size_, capacity_ - head_);
  const std::span<const std::uint8_t> a(ring_.get() + head_, first);
  const std::span<const std::uint8_t> b(ring_.get(), size_ - first);
  if (tcp_ == nullptr) {
    if (output_ != nullptr) {
      output_->append(reinterpret_cast<const char*>(a.data()), a.size());
      output_->append(reinterpret_cast<const char*>(b.data()), b.size());
    }
    consume(size_);
    return;
  }
  auto n = tcp_->try_write(a, b);
  if (!n) {
    // The connection is failing; its read side reports the close. Nothing more goes out.
    ++stats_.write_errors;
    failed_ = true;
    return;
  }
  consume(*n);
}

void InterleavedQueue::consume(std::size_t n) {
  stats_.bytes_written += n;
  while (n > 0) {
    if (frame_left_ == 0) {
      frame_left_ = kFrameHeader + ((static_cast<std::size_t>(at(2)) << 8) | at(3));
    }
    const std::size_t k = std::min(n, frame_left_);
    head_ = (head_ + k) % capacity_;
    size_ -= k;
    frame_left_ -= k;
    n -= k;
  }
  if (size_ == 0) head_ = 0;
}

std::string InterleavedQueue::take_partial() {
  std::string rest;
  if (frame_left_ == 0) return rest;
  rest.reserve(frame_left_);
  for (std::size_t i = 0; i < frame_left_; ++i) {
    rest.push_back(static_cast<char>(at(i)));
  }
  // Handed over: these bytes now go with the reply, in order.
  const std::size_t n = frame_left_;
  head_ = (head_ + n) % capacity_;
  size_ -= n;
  frame_left_ = 0;
  if (size_ == 0) head_ = 0;
  return rest;
}

}  // namespace predrop::server::detail

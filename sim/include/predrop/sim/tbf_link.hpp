#pragma once
// A Linux tbf bottleneck as the bed configures it (`tc qdisc ... tbf rate R burst B latency L`):
// a FIFO with tail drop at limit = R x L + B bytes, served by a token bucket of B bytes filled at
// R, so a burst of up to B bytes leaves at line rate after the link was idle and everything else
// leaves at R. A rate change keeps the queue (as `tc qdisc change` does) and re-derives the limit.
#include <cstdint>
#include <deque>
#include <functional>

#include "predrop/sim/event_queue.hpp"

namespace predrop::sim {

/// One packet in flight. `bytes` are link bytes (what a shaper counts).
struct Packet {
  std::uint32_t flow = 0;
  std::uint32_t bytes = 0;
  SimTime sent_us = 0;      ///< When the sender handed it to the network.
  SimTime enqueued_us = 0;  ///< When it reached the bottleneck's queue.
  std::uint64_t tag = 0;    ///< The flow's own (segment number, packet index, ...).
};

/// Settings of a tbf.
struct TbfConfig {
  double rate_bps = 2'000'000;
  std::uint32_t burst_bytes = 3'000;  ///< The bucket (1-2 MTU at these rates).
  SimTime latency_us = 300'000;       ///< Queue size in time at the rate.
};

class TbfLink {
 public:
  using OnDeparture = std::function<void(const Packet&, SimTime now)>;
  using OnDrop = std::function<void(const Packet&, SimTime now)>;

  TbfLink(EventQueue& events, TbfConfig config, OnDeparture on_departure, OnDrop on_drop);

  /// A packet arrives at the queue now.
  void enqueue(Packet p);
  /// Changes the rate now (tc qdisc change): the bucket is settled at the old rate first.
  void set_rate(double rate_bps);
  double rate_bps() const { return config_.rate_bps; }
  /// Bytes waiting.
  std::uint64_t backlog_bytes() const { return backlog_; }
  /// The queue's length in time at the current rate.
  SimTime backlog_us() const;
  std::uint64_t limit_bytes() const;

 private:
  void refill(SimTime now);
  void schedule();
  void depart(std::uint64_t generation);

  EventQueue& events_;
  TbfConfig config_;
  OnDeparture on_departure_;
  OnDrop on_drop_;
  std::deque<Packet> queue_;
  std::uint64_t backlog_ = 0;
  double tokens_;
  SimTime filled_at_ = 0;
  bool scheduled_ = false;
  std::uint64_t generation_ = 0;  ///< Invalidates a scheduled departure after a rate change.
};

}  // namespace predrop::sim

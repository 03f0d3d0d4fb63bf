#pragma once
// A TCP NewReno sender and receiver (RFC 5681 slow start and congestion avoidance, RFC 6582
// fast recovery, RFC 6298 retransmission timer), packet by packet: the responsive cross traffic
// of RFC 8867 §5.6 (one long flow) and §5.7 (short transfers). No SACK, no delayed ACKs, an
// unlimited receive window. A transfer is a fresh connection (a new epoch: packets of an old one
// are ignored), so one flow id serves a source of successive short transfers.
#include <cstdint>
#include <deque>
#include <functional>
#include <set>
#include <string>

#include "predrop/sim/network.hpp"

namespace predrop::sim {

struct TcpConfig {
  std::uint32_t mss = 1000;         ///< Payload bytes per segment (ns3-rmcat's 1000).
  std::uint32_t header_bytes = 54;  ///< IPv4 + TCP + Ethernet on the link.
  std::uint32_t ack_bytes = 66;     ///< An ACK on the link.
  double initial_window = 10;       ///< Segments (RFC 6928, Linux's default).
  SimTime min_rto_us = 200'000;     ///< Linux's minimum RTO.
  SimTime initial_rto_us = 1'000'000;
};

class TcpFlow final : public Endpoint {
 public:
  TcpFlow(Network& net, TcpConfig config, FlowPath path, std::string name);

  /// An unlimited transfer that sends new data from `from` until `until`.
  void bulk(SimTime from, SimTime until);
  /// A transfer of `bytes` starting now, on a fresh connection; `done` runs when the last byte
  /// reached the receiver.
  void transfer(std::uint64_t bytes, std::function<void()> done);

  std::uint32_t id() const { return id_; }
  Network& network() { return net_; }
  double cwnd() const { return cwnd_; }
  /// Payload bytes delivered in order to the receiver (goodput), over all transfers.
  std::uint64_t delivered_bytes() const { return delivered_bytes_; }

  void on_receive(const Packet& p) override;
  void on_feedback(const Packet& p) override;

 private:
  struct Sent {
    SimTime at = 0;
    bool retransmitted = false;
  };
  void begin(std::uint64_t segments, SimTime until);
  void pump();
  void send_segment(std::uint64_t seq, bool retransmit);
  void arm_timer();
  void on_timeout(std::uint64_t generation);
  void rtt_sample(SimTime rtt);
  std::uint64_t tag(std::uint64_t seq) const { return (epoch_ << 40) | seq; }

  Network& net_;
  TcpConfig config_;
  std::uint32_t id_;
  // Sender.
  std::uint64_t epoch_ = 0;
  bool active_ = false;
  SimTime stop_new_at_ = 0;
  std::uint64_t limit_ = 0;  ///< Segments of the transfer.
  std::uint64_t una_ = 0;    ///< Oldest unacknowledged segment.
  std::uint64_t next_ = 0;   ///< Next new segment.
  std::deque<Sent> sent_;    ///< [una_, next_) send records.
  double cwnd_ = 10;
  double ssthresh_ = 1e12;
  unsigned dupacks_ = 0;
  bool recovering_ = false;
  std::uint64_t recover_ = 0;
  SimTime srtt_ = 0;
  SimTime rttvar_ = 0;
  SimTime rto_ = 1'000'000;
  std::uint64_t timer_generation_ = 0;
  std::function<void()> done_;
  // Receiver.
  std::uint64_t rcv_epoch_ = 0;
  std::uint64_t rcv_next_ = 0;
  std::set<std::uint64_t> out_of_order_;
  std::uint64_t delivered_bytes_ = 0;
  bool done_signalled_ = false;
};

/// Successive short transfers with exponential idle times between them (RFC 8867 §5.7, after
/// ns3-rmcat: sizes uniform in [min, max] bytes, OFF exponential with the given mean).
class ShortTransfers {
 public:
  ShortTransfers(TcpFlow& flow, std::uint64_t seed, std::uint64_t min_bytes,
                 std::uint64_t max_bytes, SimTime mean_off_us, SimTime until);
  /// Starts with a transfer now (on = true) or with an idle period.
  void start(bool on);
  std::uint64_t transfers() const { return transfers_; }

 private:
  void next();
  void idle();
  double uniform();

  TcpFlow& flow_;
  std::uint64_t rng_;
  std::uint64_t min_bytes_;
  std::uint64_t max_bytes_;
  SimTime mean_off_us_;
  SimTime until_;
  std::uint64_t transfers_ = 0;
};

/// Unresponsive UDP at a constant rate (the RFC's CBR cross traffic, the bed's iperf3 -u).
class CbrFlow final : public Endpoint {
 public:
  CbrFlow(Network& net, FlowPath path, std::string name, std::uint32_t packet_bytes = 1242);
  /// Sends at `rate_bps` during [from, until).
  void run(double rate_bps, SimTime from, SimTime until);
  std::uint32_t id() const { return id_; }
  void on_receive(const Packet&) override {}
  void on_feedback(const Packet&) override {}

 private:
  void tick(double rate_bps, SimTime until);
  Network& net_;
  std::uint32_t id_;
  std::uint32_t packet_bytes_;
};

}  // namespace predrop::sim

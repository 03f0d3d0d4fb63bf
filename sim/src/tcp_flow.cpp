#include "predrop/sim/tcp_flow.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

namespace predrop::sim {

TcpFlow::TcpFlow(Network& net, TcpConfig config, FlowPath path, std::string name)
    : net_(net), config_(config), id_(net.add_flow(*this, path, std::move(name))) {}

void TcpFlow::bulk(SimTime from, SimTime until) {
  net_.events().at(from, [this, until] { begin(UINT64_MAX >> 24, until); });
}

void TcpFlow::transfer(std::uint64_t bytes, std::function<void()> done) {
  done_ = std::move(done);
  begin((bytes + config_.mss - 1) / config_.mss, INT64_MAX);
}

void TcpFlow::begin(std::uint64_t segments, SimTime until) {
  ++epoch_;
  active_ = true;
  stop_new_at_ = until;
  limit_ = segments;
  una_ = next_ = 0;
  sent_.clear();
  cwnd_ = config_.initial_window;
  ssthresh_ = 1e12;
  dupacks_ = 0;
  recovering_ = false;
  srtt_ = rttvar_ = 0;
  rto_ = config_.initial_rto_us;
  ++timer_generation_;
  done_signalled_ = false;
  pump();
}

void TcpFlow::pump() {
  if (!active_) return;
  const SimTime now = net_.events().now();
  while (next_ < limit_ && now < stop_new_at_ &&
         static_cast<double>(next_ - una_) < std::floor(cwnd_)) {
    send_segment(next_, false);
    ++next_;
  }
}

void TcpFlow::send_segment(std::uint64_t seq, bool retransmit) {
  const SimTime now = net_.events().now();
  const std::size_t i = seq - una_;
  if (i < sent_.size()) {
    sent_[i] = Sent{now, true};
  } else {
    sent_.push_back(Sent{now, retransmit});
  }
  net_.send(Packet{id_, config_.mss + config_.header_bytes, 0, 0, tag(seq)});
  if (una_ == seq || sent_.size() == 1) arm_timer();
}

void TcpFlow::arm_timer() {
  const std::uint64_t gen = ++timer_generation_;
  net_.events().at(net_.events().now() + rto_, [this, gen] { on_timeout(gen); });
}

void TcpFlow::rtt_sample(SimTime rtt) {
  if (srtt_ == 0) {
    srtt_ = rtt;
    rttvar_ = rtt / 2;
  } else {
    rttvar_ = (3 * rttvar_ + std::llabs(srtt_ - rtt)) / 4;
    srtt_ = (7 * srtt_ + rtt) / 8;
  }
  rto_ = std::max(config_.min_rto_us, srtt_ + 4 * rttvar_);
}

void TcpFlow::on_timeout(std::uint64_t generation) {
  if (generation != timer_generation_ || !active_ || una_ >= next_) return;
  // RFC 5681 §3.1 / RFC 6298 §5: back to one segment, go back N, back off the timer.
  ssthresh_ = std::max(static_cast<double>(next_ - una_) / 2.0, 2.0);
  cwnd_ = 1;
  recovering_ = false;
  dupacks_ = 0;
  rto_ = std::min<SimTime>(2 * rto_, 60'000'000);
  next_ = una_;
  send_segment(next_, true);
  ++next_;
  arm_timer();
}

void TcpFlow::on_receive(const Packet& p) {
  const std::uint64_t epoch = p.tag >> 40;
  const std::uint64_t seq = p.tag & ((1ull << 40) - 1);
  if (epoch < rcv_epoch_) return;
  if (epoch > rcv_epoch_) {
    rcv_epoch_ = epoch;
    rcv_next_ = 0;
    out_of_order_.clear();
  }
  if (seq == rcv_next_) {
    ++rcv_next_;
    delivered_bytes_ += config_.mss;
    while (!out_of_order_.empty() && *out_of_order_.begin() == rcv_next_) {
      out_of_order_.erase(out_of_order_.begin());
      ++rcv_next_;
      delivered_bytes_ += config_.mss;
    }
  } else if (seq > rcv_next_) {
    out_of_order_.insert(seq);
  }
  net_.send_back(Packet{id_, config_.ack_bytes, 0, 0, (epoch << 40) | rcv_next_});
}

void TcpFlow::on_feedback(const Packet& p) {
  const std::uint64_t epoch = p.tag >> 40;
  const std::uint64_t ack = p.tag & ((1ull << 40) - 1);
  if (epoch != epoch_ || !active_) return;
  const SimTime now = net_.events().now();
  if (ack > una_ && ack <= next_) {
    const std::uint64_t acked = ack - una_;
    const Sent& last = sent_[acked - 1];
    if (!last.retransmitted) rtt_sample(now - last.at);  // Karn's rule
    sent_.erase(sent_.begin(), sent_.begin() + static_cast<std::ptrdiff_t>(acked));
    una_ = ack;
    dupacks_ = 0;
    if (recovering_) {
      if (ack > recover_) {
        recovering_ = false;  // full acknowledgement: deflate (RFC 6582 §3.2 step 3)
        cwnd_ = ssthresh_;
      } else {
        // Partial acknowledgement: the next hole is lost too.
        send_segment(una_, true);
        cwnd_ = std::max(1.0, cwnd_ - static_cast<double>(acked) + 1.0);
      }
    } else if (cwnd_ < ssthresh_) {
      cwnd_ += static_cast<double>(acked);
    } else {
      cwnd_ += static_cast<double>(acked) / cwnd_;
    }
    if (una_ < next_) {
      arm_timer();
    } else {
      ++timer_generation_;
    }
    if (una_ >= limit_ && !done_signalled_) {
      done_signalled_ = true;
      active_ = false;
      if (done_) {
        auto done = std::move(done_);
        done_ = nullptr;
        done();
      }
      return;
    }
  } else if (ack == una_ && una_ < next_) {
    ++dupacks_;
    if (!recovering_ && dupacks_ == 3) {
      ssthresh_ = std::max(static_cast<double>(next_ - una_) / 2.0, 2.0);
      recover_ = next_ - 1;
      recovering_ = true;
      send_segment(una_, true);
      cwnd_ = ssthresh_ + 3;
    } else if (recovering_) {
      cwnd_ += 1;
    }
  }
  pump();
}

ShortTransfers::ShortTransfers(TcpFlow& flow, std::uint64_t seed, std::uint64_t min_bytes,
                               std::uint64_t max_bytes, SimTime mean_off_us, SimTime until)
    : flow_(flow),
      rng_(seed * 0x9E3779B97F4A7C15ull + 1),
      min_bytes_(min_bytes),
      max_bytes_(max_bytes),
      mean_off_us_(mean_off_us),
      until_(until) {}

double ShortTransfers::uniform() {
  // splitmix64: reproducible, independent of the standard library's distributions.
  rng_ += 0x9E3779B97F4A7C15ull;
  std::uint64_t z = rng_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / 9007199254740992.0;
}

void ShortTransfers::start(bool on) {
  if (on) {
    next();
  } else {
    idle();
  }
}

void ShortTransfers::next() {
  if (flow_.network().events().now() >= until_) return;
  const auto bytes = min_bytes_ + static_cast<std::uint64_t>(
                                      uniform() * static_cast<double>(max_bytes_ - min_bytes_));
  ++transfers_;
  flow_.transfer(bytes, [this] { idle(); });
}

void ShortTransfers::idle() {
  EventQueue& events = flow_.network().events();
  const double off = -static_cast<double>(mean_off_us_) * std::log(1.0 - uniform());
  events.at(events.now() + static_cast<SimTime>(off), [this] { next(); });
}

CbrFlow::CbrFlow(Network& net, FlowPath path, std::string name, std::uint32_t packet_bytes)
    : net_(net), id_(net.add_flow(*this, path, std::move(name))), packet_bytes_(packet_bytes) {}

void CbrFlow::run(double rate_bps, SimTime from, SimTime until) {
  net_.events().at(from, [this, rate_bps, until] { tick(rate_bps, until); });
}

void CbrFlow::tick(double rate_bps, SimTime until) {
  const SimTime now = net_.events().now();
  if (now >= until || rate_bps <= 0) return;
  net_.send(Packet{id_, packet_bytes_, 0, 0, 0});
  const auto gap = static_cast<SimTime>(packet_bytes_ * 8e6 / rate_bps);
  net_.events().at(now + std::max<SimTime>(1, gap),
                   [this, rate_bps, until] { tick(rate_bps, until); });
}

}  // namespace predrop::sim

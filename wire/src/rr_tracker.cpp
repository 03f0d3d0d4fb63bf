#include "predrop/wire/rr_tracker.hpp"

#include <algorithm>
#include <string>

namespace predrop::wire {

namespace {
// 1/65536 s units of the NTP compact format (RFC 3550 §4).
constexpr double kCompactUnitUs = 1'000'000.0 / 65'536.0;
// The 24-bit cumulative count can never exceed this many packets lost (RFC 3550 §6.4.1).
constexpr std::int64_t kMaxCumulativeLost = 0x7FFFFF;
}  // namespace

std::optional<std::uint32_t> rr_round_trip(std::uint32_t arrival_compact, std::uint32_t lsr,
                                           std::uint32_t dlsr) {
  if (lsr == 0) return std::nullopt;  // "If no SR has been received yet, the field is set to zero"
  // Unsigned arithmetic is modulo 2^32, which is what the compact format wraps at (18 h).
  const std::uint32_t since_sr = arrival_compact - lsr;
  if (dlsr > since_sr) return std::nullopt;
  return since_sr - dlsr;
}

std::optional<std::uint64_t> rr_packet_index(std::uint16_t initial_sequence,
                                             std::uint32_t extended_highest,
                                             std::uint64_t packets_sent) {
  if (packets_sent == 0) return std::nullopt;
  // Offset of the named packet from the first one, modulo 2^16, then the newest packet sent at
  // that offset: the receiver's cycle count starts wherever it started receiving, so only the
  // low 16 bits are comparable.
  const std::uint64_t offset =
      static_cast<std::uint16_t>(static_cast<std::uint16_t>(extended_highest) - initial_sequence);
  const std::uint64_t last = packets_sent - 1;
  if (offset > last) return std::nullopt;
  return last - ((last - offset) % 65'536U);
}

RrTracker::RrTracker(std::uint16_t initial_sequence, std::uint32_t clock_rate)
    : initial_sequence_(initial_sequence), clock_rate_(clock_rate == 0 ? 90'000 : clock_rate) {}

void RrTracker::note_sender_report(std::uint32_t ntp_compact_time) {
  sr_times_[sr_count_ % sr_times_.size()] = ntp_compact_time;
  ++sr_count_;
}

core::Result<RrInterval> RrTracker::measure(const ReportBlock& block, std::uint64_t packets_sent,
                                            std::uint32_t arrival_compact) {
  const auto index =
      rr_packet_index(initial_sequence_, block.extended_highest_sequence, packets_sent);
  if (!index) {
    return core::make_error("RR: extended highest sequence " +
                            std::to_string(block.extended_highest_sequence) +
                            " names a packet never sent");
  }
  if (has_baseline_ && *index + 1 < covered_) {
    return core::make_error("RR: highest sequence went backwards (stale or reordered report)");
  }
  if (block.cumulative_lost > kMaxCumulativeLost ||
      static_cast<std::int64_t>(block.cumulative_lost) > static_cast<std::int64_t>(*index + 1)) {
    return core::make_error("RR: cumulative lost " + std::to_string(block.cumulative_lost) +
                            " exceeds the packets sent");
  }
  RrInterval iv;
  iv.highest_index = *index;
  iv.fraction_lost = block.fraction_lost;
  iv.cumulative_lost = block.cumulative_lost;
  iv.jitter_us = static_cast<double>(block.jitter) * 1'000'000.0 / clock_rate_;
  const std::uint64_t from = has_baseline_ ? covered_ : 0;
  const std::uint64_t expected = *index + 1 - from;
  iv.expected = static_cast<std::uint32_t>(std::min<std::uint64_t>(expected, UINT32_MAX));
  const std::int64_t base_lost = has_baseline_ ? cumulative_lost_ : 0;
  const std::int64_t lost = static_cast<std::int64_t>(block.cumulative_lost) - base_lost;
  iv.lost = static_cast<std::uint32_t>(std::clamp<std::int64_t>(lost, 0, iv.expected));

  if (block.last_sr != 0) {
    const auto known =
        std::find(sr_times_.begin(), sr_times_.begin() + std::min(sr_count_, sr_times_.size()),
                  block.last_sr);
    if (known == sr_times_.begin() + std::min(sr_count_, sr_times_.size())) {
      return core::make_error("RR: LSR names no SR this track sent recently");
    }
    const auto rtt = rr_round_trip(arrival_compact, block.last_sr, block.delay_since_last_sr);
    if (!rtt) return core::make_error("RR: DLSR is longer than the time since the SR");
    rtts_[rtt_count_ % rtts_.size()] = *rtt;
    ++rtt_count_;
    const std::uint32_t base =
        *std::min_element(rtts_.begin(), rtts_.begin() + std::min(rtt_count_, rtts_.size()));
    iv.rtt_us = *rtt * kCompactUnitUs;
    iv.queue_delay_us = (*rtt - base) * kCompactUnitUs;
  }
  return iv;
}

void RrTracker::commit(const RrInterval& interval) {
  has_baseline_ = true;
  covered_ = interval.highest_index + 1;
  cumulative_lost_ = interval.cumulative_lost;
}

}  // namespace predrop::wire

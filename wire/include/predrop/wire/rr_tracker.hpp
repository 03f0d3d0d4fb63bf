#pragma once
// The sender's arithmetic on standard RTCP Receiver Reports (RFC 3550 §6.4.1 report blocks, as
// ffmpeg and GStreamer send them): what one report block says about the packets of one track
// since the last block the sender used, so that players without PDFB can drive the rate
// controller (docs/rtsp.md "Adaptation from Receiver Reports").
//
//   - Extended highest sequence (§6.4.1, A.1): the receiver counts cycles from the first packet
//     it saw, the sender from the track's initial sequence number. The tracker maps the low 16
//     bits onto the sender's own packet index: the newest packet sent whose sequence number has
//     those bits (sequence numbers are renumbered over the packets actually sent, so an index is
//     a packet that went on the wire). A block naming a packet never sent is refused.
//   - Cumulative number of packets lost (§6.4.1): 24-bit signed; the interval's loss is its
//     delta from the block last used, clamped to [0, expected] (duplicates make it negative).
//   - Round-trip time (§6.4.1, figure 2): A − LSR − DLSR in 1/65536 s, where A is the middle 32
//     bits of the NTP time the block arrived. LSR must be one of the last kRrSrHistory SRs this
//     track sent, else the block is refused (forged or from another session); LSR 0 means no SR
//     received yet (no RTT). DLSR longer than the time since that SR is refused.
//   - Queueing delay: RTT minus the smallest RTT of the last kRrRttHistory blocks (LEDBAT's base
//     delay, as the receiver-side meter does with one-way delay).
//   - Interarrival jitter (§6.4.1, A.8) is converted to µs with the track's clock rate; it is
//     shown, not a control input.
//
// measure() does not move the baseline: the caller commit()s the interval it used, so blocks
// that it could not use (no whole stage covered yet) add up into the next one.
//
// Contract: pure, no I/O, no clock (the caller passes the arrival time), no allocation except
// the error text of a refused block. Not thread-safe; one tracker per track.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "predrop/core/result.hpp"
#include "predrop/wire/rtcp.hpp"

namespace predrop::wire {

/// SR times (LSR values) remembered per track; at one SR per second, 16 s.
inline constexpr std::size_t kRrSrHistory = 16;
/// RTT samples the base RTT is the minimum of.
inline constexpr std::size_t kRrRttHistory = 16;

/// What one report block says, relative to the last committed block.
struct RrInterval {
  /// Sender's 0-based index of the highest packet the receiver saw on this track.
  std::uint64_t highest_index = 0;
  /// Packets covered by the interval: sent indices (last committed highest, highest_index].
  std::uint32_t expected = 0;
  /// Of those, lost (delta of the cumulative count, clamped to [0, expected]).
  std::uint32_t lost = 0;
  /// The receiver's own fraction lost since its previous report, in 1/256 (shown only).
  std::uint8_t fraction_lost = 0;
  /// Interarrival jitter in µs.
  double jitter_us = 0.0;
  /// Round-trip time in µs, when the block names a known SR.
  std::optional<double> rtt_us;
  /// RTT minus the base RTT of recent blocks, in µs, when the RTT is known.
  std::optional<double> queue_delay_us;
  /// The block's cumulative lost (the baseline commit() keeps).
  std::int32_t cumulative_lost = 0;

  /// Packets of the interval that arrived.
  std::uint32_t received() const { return expected - lost; }
};

/// RTT in 1/65536 s from the arrival time A and the block's LSR/DLSR (all NTP compact, RFC 3550
/// §6.4.1); nullopt if LSR is 0 or DLSR exceeds A − LSR (mod 2^32).
std::optional<std::uint32_t> rr_round_trip(std::uint32_t arrival_compact, std::uint32_t lsr,
                                           std::uint32_t dlsr);

/// The sender's packet index (0-based) of the newest packet among the first `packets_sent` whose
/// sequence number has the low 16 bits of `extended_highest`, with sequence numbers starting at
/// `initial_sequence`; nullopt if no packet sent has them.
std::optional<std::uint64_t> rr_packet_index(std::uint16_t initial_sequence,
                                             std::uint32_t extended_highest,
                                             std::uint64_t packets_sent);

/// Per-track state of the RR arithmetic (see the file comment).
class RrTracker {
 public:
  /// `initial_sequence` is the track's first RTP sequence number, `clock_rate` its RTP clock.
  RrTracker(std::uint16_t initial_sequence, std::uint32_t clock_rate);

  /// Remembers the compact NTP time of an SR this track sent (what a later LSR names).
  void note_sender_report(std::uint32_t ntp_compact_time);

  /// Reads one report block that arrived at NTP compact time `arrival_compact`, with
  /// `packets_sent` packets sent on the track so far. Errors name what is wrong (forged,
  /// stale or malformed); a valid RTT becomes a base-RTT sample even if the interval is not
  /// committed.
  core::Result<RrInterval> measure(const ReportBlock& block, std::uint64_t packets_sent,
                                   std::uint32_t arrival_compact);

  /// Makes `interval` the baseline of the next measure().
  void commit(const RrInterval& interval);

  /// True once an interval was committed.
  bool has_baseline() const { return has_baseline_; }

 private:
  std::uint16_t initial_sequence_;
  std::uint32_t clock_rate_;
  bool has_baseline_ = false;
  std::uint64_t covered_ = 0;  ///< Packets covered by committed intervals (highest index + 1).
  std::int32_t cumulative_lost_ = 0;
  std::array<std::uint32_t, kRrSrHistory> sr_times_{};
  std::size_t sr_count_ = 0;
  std::array<std::uint32_t, kRrRttHistory> rtts_{};
  std::size_t rtt_count_ = 0;
};

}  // namespace predrop::wire

#pragma once
// Pacing of one DDL path (the relay's aggregate to one worker, a worker's gradient to the relay)
// at that path's own rate: a token bucket whose rate is `gain` x the path's estimated delivery
// rate, the maximum of the last `window` samples (BBR's bottleneck-bandwidth filter). A sample is
// what the receiver's report of a stage says: packets received over its reception period L, first
// to last arrival. While no sample exists, and whenever the estimate is faster than
// `unlimited_above`, the bucket does not limit: a free path gets the whole stage at once (one
// sendmmsg per 64 packets), not one batch per 1 ms timer tick (docs/ddl-torch.md "Pacing at the
// path's rate").
//
// Why the maximum and a gain above 1: a sender paced at rate X sees samples of min(X, C) on a path
// of capacity C; only a rate above the estimate can show that C is higher, and the maximum keeps
// one slow stage (a preempted receiver reads late) from lowering the rate. A queue in front of
// the bottleneck grows by (1 - 1/gain) of a stage's bytes and drains before the stage's last
// packet arrives (the receiver waits for it), so it does not build up over stages.
//
// Pure: no clock or timer (times come in as µs), no allocation after construction, one thread.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace predrop::ddl {

/// What one tensor-chunk datagram adds on the wire to its chunk payload, for the pacing rate:
/// RTP header 12, stage extension 16, SRTP tag up to 16 (AES-GCM), UDP 8, IPv4 20.
inline constexpr std::size_t kChunkPacketOverheadBytes = 72;

/// How a PathPacer paces.
struct PathPacerConfig {
  double gain = 1.25;             ///< Pacing rate = gain x the estimated path rate.
  std::uint32_t window = 8;       ///< Samples (stages) the estimate is the maximum of (1..32).
  std::uint32_t min_packets = 8;  ///< A report of fewer packets is no sample (L says too little).
  double min_period_us = 300.0;   ///< Nor is one with a shorter L (a burst read in one go).
  /// Estimates above this (bytes/µs; 125 = 1 Gbit/s) do not limit: the host's own timer and
  /// sendmmsg granularity are coarser than such a path.
  double unlimited_above = 125.0;
  std::uint32_t burst_packets = 8;  ///< The bucket holds at least this many packets ...
  std::uint64_t burst_us = 2'000;   ///< ... and at least this long at the pacing rate (the timer
                                    ///< fires at 1 ms granularity).
};

/// Token-bucket pacing of one path at its estimated rate (see the file comment).
class PathPacer {
 public:
  /// Throws std::invalid_argument for a gain below 1, a window outside 1..32, no burst packets.
  explicit PathPacer(PathPacerConfig config = {});

  /// The receiver's report of a stage: `received` packets of about `packet_bytes` each (on the
  /// wire) arrived over `period_us` (first to last). Reports with too few packets or too short
  /// a period are ignored; returns whether the sample was taken.
  bool on_report(std::uint32_t received, std::size_t packet_bytes, double period_us);

  /// The estimated path rate (bytes/µs), nullopt before the first sample.
  std::optional<double> estimate() const;
  /// The pacing rate (bytes/µs); nullopt: not limited (no estimate, or a faster path than
  /// unlimited_above).
  std::optional<double> rate() const;

  /// How many of `want` packets of `packet_bytes` may go at `now_us` (refills the bucket first).
  std::size_t allowance(std::uint64_t now_us, std::size_t packet_bytes, std::size_t want);
  /// `packets` of `packet_bytes` went out (takes their tokens; may go below zero by less than
  /// one packet).
  void sent(std::size_t packets, std::size_t packet_bytes);
  /// When one more packet of `packet_bytes` may go (>= now_us; now_us when not limited).
  std::uint64_t next_due_us(std::uint64_t now_us, std::size_t packet_bytes) const;

  /// Samples taken so far.
  std::uint64_t samples() const { return samples_; }

 private:
  double depth(std::size_t packet_bytes) const;
  void refill(std::uint64_t now_us, std::size_t packet_bytes);

  PathPacerConfig config_;
  std::array<double, 32> window_{};
  std::uint64_t samples_ = 0;
  double tokens_ = 0.0;
  std::uint64_t last_us_ = 0;
  bool primed_ = false;  // the bucket was filled once (at the first limited allowance)
};

}  // namespace predrop::ddl

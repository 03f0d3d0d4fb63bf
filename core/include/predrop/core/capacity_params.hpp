#pragma once
// The capacity policy's parameters ([control.capacity] in TOML, docs/design.md §2.8): what each
// one means is documented where the policy uses it (capacity_policy.hpp's file comment).
#include <limits>
#include <optional>

#include "predrop/core/result.hpp"

namespace predrop::core {

/// Parameters of the capacity policy; defaults suit 0.5-2 s blocks of paced media.
struct CapacityParams {
  /// The largest leading burst (pacing_burst_bytes, repaid_burst_bytes) a config may set.
  static constexpr double kMaxBurstBytes = 1'000'000;

  double rmax = 0.9;          ///< Upper limit of R.
  double initial_rate = 0.0;  ///< R until the first congestion signal, and once it is over.
  /// R of the stages started before the first report whose blocks have disposable frames
  /// (StageStart::disposable_packets), instead of initial_rate: a start below the stream that
  /// thins out its frame rate, which the first report raises if the path carries more. A block
  /// without disposable frames starts at initial_rate: discarding would cut its GOP's tail.
  std::optional<double> start_rate;
  /// Send this fraction of Ĉ * T per block: the rest is idle time at the block's end, where the
  /// queue drains and a shaper's bucket refills before the next key frame.
  double margin = 0.97;
  double queue_ref_us = 0;        ///< NADA's reference queueing delay at a block's end.
  double queue_low_us = 15'000;   ///< A block ending at or below this queue (and no loss) is clean.
  double queue_high_us = 30'000;  ///< A block ending above this queue is overuse.
  double queue_grow_us = 20'000;  ///< Queue growth within one block that is overuse (gradient).
  /// The modelled queue never exceeds this (a queue beyond it would have dropped).
  double queue_limit_us = 1'000'000;
  /// A block ending with more queue than this kept the bottleneck busy to its end, so its
  /// delivery rate is the session's share of it.
  double busy_queue_us = 3'000;
  double loss_threshold = 0.01;  ///< Network loss above this is overuse.
  double clean_loss = 0.002;     ///< Network loss at or below this counts as clean.
  /// Additive increase per clean block near the rate of the last overuse, as a fraction of the
  /// stream's mean rate (the same step for every session of the stream: AIMD's fairness).
  double increase_step = 0.03;
  /// Multiplicative increase per clean block below the rate of the last overuse, well above it
  /// (3 deviations: the path changed), or when paced blocks' pairs stop queueing (room).
  double probe_gain = 1.5;
  /// On overuse with the bottleneck busy the estimate becomes this times the received rate.
  double decrease_factor = 0.9;
  /// Blocks planned to drain the queue that still report it standing above queue_high before
  /// the queue counts as another flow's (compete mode).
  unsigned compete_blocks = 3;
  /// Compete mode: network loss above this cuts the estimate by (1 - loss / 2) ...
  double compete_loss_high = 0.10;
  /// ... and below this raises it by compete_gain per block (GCC's loss-based controller).
  double compete_loss_low = 0.02;
  double compete_gain = 1.08;
  /// The sender paces a limited session at this multiple of the estimate (0: no pacing limit).
  double pacing_gain = 1.0;
  /// ... after letting this many bytes go back to back (a short burst at the block's start:
  /// its dispersion at the bottleneck measures the bottleneck's rate, not this session's
  /// share of it, whatever else crosses the bottleneck; larger than the token bucket of a
  /// shaper, which lets 1-3 packets through at line rate: the bed's tbf holds 3-4 kB).
  double pacing_burst_bytes = 6'000;
  /// In delay mode (the queue is this session's own), the leading burst is this many bytes and
  /// is paid back: the pace resumes only when the burst's bytes have had their time at the
  /// estimate, so the queue the burst builds at the bottleneck drains behind it instead of
  /// standing under a pace at the bottleneck's own rate (bench/README.md "Where the steady
  /// queue comes from"). Larger than pacing_burst_bytes, so that after a shaper's bucket
  /// (3-4 kB on the bed) a few packets still queue and read its rate. 0: off (the default).
  double repaid_burst_bytes = 0.0;
  /// Dispersion resting on fewer link bytes than this is ignored (about three full packets).
  double min_dispersion_bytes = 1'000;
  /// A burst of at least this many link bytes that crossed without dispersion proves its rate
  /// (smaller ones may have passed a shaper's token bucket whole: Linux tbf's is 4 kB on the
  /// bed; the bed clip's largest burst is 5.5-7.7 kB).
  double proof_bytes = 5'000;
  /// A received rate at overuse of at least this share of the dispersion rate means the session
  /// has the bottleneck to itself: from then on its estimate is the dispersion rate.
  double alone_share = 0.85;
  /// ... and the bottleneck is gone when the proven rate is this many times the stream's.
  double proof_factor = 1.5;
  /// ... and no packet of the block queued longer than this: a burst up to a shaper's bucket
  /// plus its rate times the burst's send span also crosses undispersed (measured: 5 kB at
  /// 2.46 Mbit/s behind the bed's 4 kB bucket), but then the rest of the key frame queues.
  double proof_queue_us = 15'000;
  /// A burst counts as undispersed when it arrived over at most its send span plus this (on the
  /// open bed the arrival span is within 0.1 ms of the send span; 1 ms is what 1 kB beyond a
  /// 4 kB bucket adds at 8 Mbit/s).
  double burst_jitter_us = 1'000;
  /// Without path measurements: clean reports of blocks sent at R = 0 that end the episode.
  unsigned release_stages = 2;
  double missing_backoff = 0.85;  ///< Ĉ factor per missing report after the first (GCC's 0.85).
  double quality_floor = -std::numeric_limits<double>::infinity();  ///< P below this: probe.
};

/// Checks ranges; errors name the parameter as configured (control.rmax, control.r0,
/// control.capacity.<name>).
Status validate(const CapacityParams& params);

}  // namespace predrop::core

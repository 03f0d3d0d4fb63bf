#pragma once
// Receiver-side stage bookkeeping: turns packet arrivals (stage id, index and count from the
// stage extension, arrival time, optional one-way delay, size) into one measurement per stage:
// the reception period L, packets received vs announced, the queueing delay at the stage's end,
// and what the path's bottleneck did to the stage (PathMeasurement, PDFB v1.1): bytes received,
// the largest queueing delay of any packet, the bottleneck rate from packet dispersion, and the
// stage's largest burst.
//
// Dispersion (packet pairs, as in capacity estimation since Keshav's packet pair): when packet i
// reaches the bottleneck before packet i-1 has left it (i-1's queueing delay exceeds the send gap
// between them), the two leave back to back, so i's arrival gap is its bytes at the bottleneck's
// rate (plus whatever other traffic was served in between). Such a pair also proves that the
// token bucket of a shaper was empty (i-1 waited), so the first packets of a burst, which a
// bucket lets through at line rate, never count. Each pair gives a rate sample; the stage's
// estimate is the sum of bytes over the sum of gaps of the samples within 25 % of their
// byte-weighted median, because single pairs on a loaded host are off both ways (a forwarding
// stall delays one packet by ms and lets the next follow it within µs).
//
// A stage closes when all its announced packets have arrived, when a later stage has been
// arriving for `reorder_grace_us` (its tail was lost), or when poll() finds it idle for
// `idle_timeout_us`. Late packets of a closed stage are counted and ignored. Time is passed in.
//
// Threading: one meter per received stream, one thread. Memory is fixed after construction.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "predrop/core/stage_report.hpp"

namespace predrop::core {

/// One packet as the meter needs it.
struct PacketArrival {
  std::uint32_t stage = 0;
  std::uint16_t index = 0;  ///< Index among the packets sent in the stage.
  std::uint16_t count = 0;  ///< Packets sent in the stage (0 = unknown).
  std::uint64_t arrival_us = 0;
  /// Sender-to-receiver delay including any clock offset (e.g. from abs-send-time); only its
  /// changes matter.
  std::optional<std::int64_t> one_way_delay_us;
  /// Bytes of the packet as a link counts them (UDP payload + kLinkOverheadBytes); 0 = unknown.
  std::uint32_t bytes = 0;
};

/// What the receiver measured of one stage.
struct StageMeasurement {
  std::uint32_t stage = 0;
  std::uint64_t first_arrival_us = 0;
  std::uint64_t last_arrival_us = 0;
  /// L = last - first arrival, µs.
  double reception_period_us = 0.0;
  std::uint32_t received = 0;
  /// Announced count from the stage extension (0 if never known).
  std::uint32_t announced = 0;
  std::uint32_t duplicates = 0;
  /// OWD of the last packets minus the base OWD (minimum over recent stages), µs.
  std::optional<double> queue_delay_us;
  /// Present when the packets carried one-way delays and sizes.
  std::optional<PathMeasurement> path;
};

/// Settings of the meter.
struct ReceptionMeterConfig {
  std::uint64_t reorder_grace_us = 50'000;    ///< How long a later stage may run before closing.
  std::uint64_t idle_timeout_us = 2'000'000;  ///< Close an open stage idle for this long.
  unsigned base_delay_stages = 32;            ///< Window of stages for the base (minimum) OWD.
  unsigned tail_packets = 4;                  ///< Last packets averaged for the end-of-stage OWD.
  /// A pair counts for dispersion when the first packet's queueing delay exceeds the send gap by
  /// this much (above the jitter of an idle path).
  std::uint64_t pair_margin_us = 1'000;
  /// Pairs sent at most this far apart were sent back to back (a sender's packet pair); when a
  /// stage has such pairs, only they make its dispersion rate (they measure the bottleneck,
  /// other pairs this stream's share of it).
  std::uint64_t back_to_back_us = 500;
  /// Packets sent at most this far apart belong to one burst (the server spreads a key frame's
  /// packets over a few ms, with gaps of up to ~3 ms between its send batches).
  std::uint64_t train_gap_us = 5'000;
};

/// Counters for metrics.
struct ReceptionMeterStats {
  std::uint64_t packets = 0;
  std::uint64_t late = 0;  ///< Packets of stages already closed.
  std::uint64_t duplicates = 0;
  std::uint64_t out_of_range = 0;  ///< Index >= count.
  std::uint64_t stages_closed = 0;
};

/// Builds per-stage measurements from packet arrivals.
class ReceptionMeter {
 public:
  using OnStage = std::function<void(const StageMeasurement&)>;

  ReceptionMeter(ReceptionMeterConfig config, OnStage on_stage);

  /// Accounts one packet; may close earlier stages (on_stage runs before this returns).
  void on_packet(const PacketArrival& p);
  /// Closes stages that are idle or whose grace passed; call from a timer.
  void poll(std::uint64_t now_us);
  /// Closes every open stage now (end of stream).
  void flush();
  /// Counters since construction.
  const ReceptionMeterStats& stats() const { return stats_; }
  /// The rate (bytes per µs) at which the back-to-back pairs of `stage` left the bottleneck so
  /// far, while the stage is still open; 0 when it has none yet (an interim alert's evidence of
  /// what the bottleneck itself serves now).
  double back_to_back_rate(std::uint32_t stage) const;
  /// Queueing delay of the latest packet accounted (its OWD minus the base OWD), µs; empty when
  /// it carried no OWD or fell outside the open stages (an interim alert's trigger).
  std::optional<std::int64_t> latest_queue_us() const { return latest_queue_us_; }

 private:
  /// One dispersion sample: a pair's second packet and its arrival gap.
  struct PairSample {
    float rate = 0;  ///< bytes / gap
    std::uint32_t bytes = 0;
    std::uint32_t gap_us = 0;
    bool back_to_back = false;  ///< Sent at most back_to_back_us apart.
  };
  static constexpr std::size_t kMaxPairs = 256;  ///< Samples kept per stage (fixed memory).
  /// A burst being followed or the largest one of a stage.
  struct Burst {
    std::uint64_t bytes = 0;  ///< After the first packet.
    std::int64_t first_send = 0;
    std::int64_t last_send = 0;
    std::uint64_t first_arrival = 0;
    std::uint64_t last_arrival = 0;
  };

  struct OpenStage {
    bool open = false;
    std::uint32_t stage = 0;
    std::uint32_t announced = 0;
    std::uint32_t received = 0;
    std::uint32_t duplicates = 0;
    std::uint64_t first_us = 0;
    std::uint64_t last_us = 0;
    std::uint64_t later_since_us = 0;  ///< When a later stage's first packet came (0 = not yet).
    std::int64_t min_owd = 0;
    bool has_owd = false;
    std::array<std::int64_t, 16> tail_owd{};  ///< Ring of the latest OWDs.
    unsigned tail_count = 0;
    std::int64_t max_owd = 0;
    std::uint64_t bytes = 0;
    bool sized = false;  ///< Some packet carried its size.
    std::size_t pair_count = 0;
    std::array<PairSample, kMaxPairs> pairs{};
    Burst burst;                      ///< The largest burst that ended in this stage.
    std::vector<std::uint64_t> seen;  ///< Bitmap of indices (65536 bits), sized once.
  };

  OpenStage* slot_for(std::uint32_t stage, std::uint64_t now_us);
  void account_path(OpenStage& s, const PacketArrival& p);
  void end_burst();
  void close(OpenStage& s);
  static PathMeasurement path_of(OpenStage& s, std::int64_t base);
  std::int64_t base_owd(const OpenStage& s) const;
  void note_later_stage(std::uint32_t stage, std::uint64_t now_us);

  ReceptionMeterConfig config_;
  OnStage on_stage_;
  std::array<OpenStage, 2> slots_;
  bool has_closed_ = false;
  std::uint32_t last_closed_ = 0;
  std::vector<std::int64_t> stage_min_owd_;  ///< Ring of per-stage minimum OWDs.
  std::size_t min_head_ = 0;
  std::size_t min_count_ = 0;
  std::int64_t window_base_ = 0;  ///< Minimum of stage_min_owd_ (valid when min_count_ > 0).
  // The previous packet (arrival order), for pairs and bursts.
  bool have_prev_ = false;
  std::uint64_t prev_arrival_ = 0;
  std::int64_t prev_owd_ = 0;
  std::optional<std::int64_t> latest_queue_us_;
  OpenStage* burst_stage_ = nullptr;  ///< Stage of the burst being followed.
  Burst burst_;
  ReceptionMeterStats stats_;
};

}  // namespace predrop::core

#pragma once
// "capacity": a model-based policy (issue 12, docs/design.md §2.8). It keeps a per-session model
// of the bottleneck — the rate Ĉ this session can send (link bytes per µs) and the queue in front
// of the bottleneck — and sizes each block from the model and the block's real byte count:
//
//   R = (1 - X / B) / beta,   X = margin * Ĉ * T - Ĉ * (q_pred - q_ref)
//
// with B the next block's link bytes, T its duration, q_pred the queue the model expects when the
// block starts (the last reported queue plus what the blocks in flight add at Ĉ) and beta the
// measured byte share of a discarded packet fraction (the priority planner drops small packets
// first, so discarding R of the packets removes less than R of the bytes). margin < 1 leaves the
// bottleneck idle for the rest of the block, so the queue is empty and a shaper's token bucket
// full when the next block's key frame comes as a burst. Without the sender's hook
// (rate_for_next not called, e.g. DDL) blocks count as one unit of bytes each and T is the base
// reception period.
//
// The receiver's PDFB v1.1 measurements (core::PathMeasurement) make the estimate conclusive:
//  - the dispersion rate d (packet pairs that left the bottleneck back to back) is the
//    bottleneck's own rate, measured in every block whose key frame queued at it; Ĉ never exceeds
//    it, and a session that has the bottleneck to itself takes it as its estimate;
//  - the smallest queueing delay of the block's packets is the queue that stood through it,
//    which other sessions' bursts at the block's end do not move;
//  - a large burst (the key frame) that crossed the path without dispersion proves the path
//    carries its send rate, several times the stream's: the bottleneck is gone and R = r0 from the
//    next block planned, without a probe.
// Without them (PDFB v1.0, RTCP RR from players) the policy probes for spare capacity instead.
//
// The estimate moves like an AIMD congestion controller whose output is a byte budget per block
// instead of an encoder rate (docs/design.md §2.8 states it as coded):
//  - Delay mode (the queue is this session's own doing): on overuse (network loss above
//    loss_threshold, a queue standing above queue_high through the block, or growing by more than
//    queue_grow in it: GCC's delay gradient) the estimate becomes the *received* rate. Under tail
//    drop every flow receives in proportion to what it sends, so this is a multiplicative
//    decrease by the same factor for every flow on the bottleneck. On a clean block (no loss, no
//    queue) that was cut by the plan, the estimate grows: additively by increase_step of the
//    bottleneck's rate while it is near the rate of the last overuse (equal absolute steps for
//    every flow: AIMD converges to equal shares, Chiu & Jain 1989), multiplicatively by
//    probe_gain when it is below that rate or has passed it for good (the path changed: GCC's
//    "far from the link capacity estimate", draft-ietf-rmcat-gcc-02 §5.5). So from any state a
//    clean path brings R down geometrically: a state where R stays high on an idle path cannot
//    exist (tests/sim/test_capacity_on_paths.cpp drives it there and out again).
//  - Compete mode (the queue is another flow's): a loss-based flow (TCP) keeps the queue standing
//    whatever this session sends. Once compete_blocks blocks planned to drain the queue still
//    report it standing above queue_high, the policy stops reading the queue (it would only cede
//    the link, block by block) and follows loss alone, as GCC's loss-based controller does
//    (§6: loss above compete_loss_high: x (1 - loss / 2); below compete_loss_low: x compete_gain).
//    It returns to delay mode when the queue is gone.
//  - BBR (Cardwell et al., ACM Queue 2016): the delivery rate of a block that left the bottleneck
//    idle is a lower bound of the capacity (max filter), and the sender paces at pacing_gain x the
//    estimate, so a key frame crosses the bottleneck spread out instead of as a queue; only a
//    packet pair at each block's start goes back to back, and its dispersion measures d.
//  - NADA (RFC 8698 §4.3): a queueing-delay reference q_ref (default 0: an empty queue at the
//    block's end) and the queue the blocks in flight will add are in the plan.
//  - Packet pair / packet train dispersion (Keshav 1991; Dovrolis et al., IEEE/ACM ToN 2004) for
//    d, measured on the key frame the stream sends anyway.
//
// Network loss is told apart from pre-discard by packets_received vs packets_announced (the
// announced count is after discard). P is only a guard: a report with P below `quality_floor`
// and no network loss forces a probe. The policy works with P = 0 throughout.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "predrop/core/capacity_params.hpp"
#include "predrop/core/dispersion_filter.hpp"
#include "predrop/core/rate_controller.hpp"
#include "predrop/core/sent_stages.hpp"

namespace predrop::core {

/// The capacity policy (see the file comment).
class CapacityPolicy final : public RateController {
 public:
  /// Which signal the estimate follows (see the file comment).
  enum class Mode : std::uint8_t {
    kOpen,     ///< No bottleneck known: R = initial rate.
    kDelay,    ///< The queue is this session's own: delay and loss drive the estimate.
    kCompete,  ///< Another flow holds the queue standing: loss alone drives it.
  };

  /// `params` must pass validate().
  explicit CapacityPolicy(const CapacityParams& params);
  ~CapacityPolicy() override;
  CapacityPolicy(const CapacityPolicy&) = delete;
  CapacityPolicy& operator=(const CapacityPolicy&) = delete;

  std::string_view name() const override { return "capacity"; }
  /// P is a guard only (quality_floor): a report is not held back for it.
  bool reads_performance() const override { return false; }
  double rate() const override { return rate_; }
  double rate_for_next(const StageStart& next) override;
  std::optional<double> rate_for_rest(const StageProgress& progress) override;
  std::optional<PacingLimit> pacing() const override;
  bool on_alert(const StageAlert& alert) override;
  void on_resume(double idle_us) override;
  void on_pause() override;
  /// From then on the estimate the plan uses is the session's share of the group's aggregate
  /// (every rule still moves the session's own estimate; the group turns the moves into shares).
  bool couple(const std::shared_ptr<SharedBottleneck>& group) override;

  /// Estimated rate this session can send, in link bytes per µs (0 before any sample).
  double capacity_estimate() const { return capacity_; }
  /// The bottleneck's rate from the last dispersion measurement (0 = none yet).
  double bottleneck_rate() const { return dispersion_.rate(); }
  /// True while a bottleneck is known (R is sized from the estimate); false: R = initial rate.
  bool limited() const { return mode_ != Mode::kOpen; }
  Mode mode() const { return mode_; }
  /// Queue (µs) the model expected at the start of the last stage planned.
  double predicted_queue_us() const { return predicted_queue_us_; }
  /// Byte share of a discarded packet fraction (1 = packets of equal size).
  double beta() const { return beta_; }
  /// Smallest change of R that re-plans the rest of a stage in flight, and after a report of
  /// congestion (overuse or a queue standing at the block's end).
  static constexpr double kReplanStep = 0.1;
  static constexpr double kReplanStepCongested = 0.02;
  /// Reports after compete mode during which alerts are ignored (on_alert).
  static constexpr unsigned kAlertQuietReports = 30;

 protected:
  Decision decide(const StageReport& report) override;
  Decision decide_missing(std::uint32_t stage) override;

 private:
  /// What one report says about the path (computed once, then the mode's rule applies it).
  struct Reading;
  Reading read(const StageReport& report);
  std::string_view on_overuse(const Reading& x);
  std::string_view on_clean(const Reading& x);
  std::string_view in_compete(const Reading& x);
  void forget_stale_dispersion(const Reading& x);
  bool dispersion_steady() const;
  /// In delay mode with repaid_burst_bytes set: the leading burst is paid back (pacing()).
  bool repays_burst() const;
  /// What increase_step is a fraction of (see the definition).
  double step_reference() const;

  double plan(double block_bytes, double duration_us) const;
  /// The same plan with the block's exact discard curve (StageStart::removable).
  double plan(double block_bytes, double duration_us, std::uint32_t packets,
              std::span<const std::uint64_t> removable) const;
  /// The queue the plan gives back at `q` (none in compete mode: it is not ours to give).
  double queue_to_drain(double q) const;
  /// The queue the model expects when `stage` starts (last report + the stages sent since).
  double queue_at_start(std::uint32_t stage) const;
  void raise_to(double estimate);
  double clamp(double r) const;
  /// R with no bottleneck known: initial_rate, or start_rate before the first report.
  double open_rate() const;
  /// Hands the estimate the rules just set to the coupled group and takes the share back.
  void share_estimate();

  CapacityParams params_;
  double rate_;
  Mode mode_ = Mode::kOpen;
  double capacity_ = 0.0;        ///< Ĉ, link bytes per µs.
  DispersionFilter dispersion_;  ///< d: the bottleneck's rate from the recent readings.
  /// The session had the bottleneck to itself at the last overuse (received rate ~ d): then the
  /// estimate is d itself.
  bool alone_ = false;
  /// The stage started last has disposable frames (open_rate's start rate may apply).
  bool start_thins_ = false;
  double limit_dispersion_ = 0;   ///< The dispersion rate at the last overuse.
  double limit_rate_ = 0.0;       ///< The estimate at the last overuse (BIC's W_max; 0 = none).
  unsigned clean_run_ = 0;        ///< Clean, plan-limited reports in a row.
  unsigned undispersed_run_ = 0;  ///< Clean reports in a row without a dispersion reading.
  unsigned stuck_run_ = 0;        ///< Drain blocks in a row whose queue still stood.
  /// The largest dispersion reading of those blocks (0: none read; a pair broken by heavy loss
  /// or swallowed by a shaper's bucket reads nothing).
  double stuck_dispersion_ = 0.0;
  unsigned quiet_run_ = 0;      ///< Compete mode: reports in a row without a standing queue.
  double onset_capacity_ = 0;   ///< Ĉ before the current run of overuse (compete restores it).
  double compete_floor_ = 0;    ///< Compete mode: loss cuts stop here (half the entry estimate).
  bool congested_ = false;      ///< The last report showed overuse or a standing queue.
  double beta_ = 1.0;           ///< (1 - sent bytes / block bytes) / R, learnt from stages.
  double last_queue_us_ = 0;    ///< Queue at the end of the last reported stage.
  double last_stand_us_ = 0;    ///< Queue that stood through the last reported stage.
  bool last_end_high_ = false;  ///< The last reported stage ended on a queue above queue_high.
  std::uint32_t last_report_stage_ = 0;
  bool has_report_ = false;
  double predicted_queue_us_ = 0;
  std::uint32_t alert_stage_ = UINT32_MAX;  ///< The stage of the last alert taken.
  double alert_queue_us_ = 0;               ///< Its queue: the re-plan gives it back.
  /// Reports since compete mode was left (alerts wait kAlertQuietReports after it).
  unsigned reports_since_compete_ = 1'000'000;
  unsigned release_run_ = 0;
  unsigned missing_run_ = 0;
  double base_period_us_ = 0;      ///< Without the hook: the smallest clean reception period.
  double stream_rate_ = 0.0;       ///< Mean block bytes per µs of the stream (with the hook).
  double block_floor_rate_ = 0.0;  ///< Bytes per µs the block planned last keeps, over 0.9 T.
  double last_block_bytes_ = 1.0;
  double last_duration_us_ = 0.0;
  SentStages stages_;
  std::shared_ptr<SharedBottleneck> group_;  ///< Coupled sessions (none: uncoupled).
  SharedBottleneck::Member member_ = 0;
};

}  // namespace predrop::core

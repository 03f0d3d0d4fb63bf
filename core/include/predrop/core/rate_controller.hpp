#pragma once
// The control unit (seed Fig. 2-4, docs/design.md §2): a pure state machine that takes one report
// per stage and returns the discard rate R for the next stage. It owns no socket, loop or clock.
//
// Threading: a controller belongs to one session and is used from one thread.
// Errors: invalid reports (NaN, negative) are rejected as values and leave the state unchanged.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/core/shared_bottleneck.hpp"
#include "predrop/core/stage_report.hpp"
#include "predrop/core/threshold.hpp"

namespace predrop::core {

/// Why the controller set the rate it returned.
enum class DecisionKind : std::uint8_t {
  kInitial,   ///< First report (stage 0): R set to Rp (seed S14).
  kDecrease,  ///< P worsened by more than T1: R -= Rp2 (seed S22).
  kIncrease,  ///< L grew by more than T2 against one of the last k stages: R += Rp1 (S23/S30).
  kKeep,      ///< Neither: R unchanged (seed S24).
  kFixed,     ///< A fixed-rate policy: R never changes.
  kAdapt,     ///< An improved policy changed or held R for a reason of its own (see reason).
  kStale,     ///< Report for a stage at or before the last one handled: ignored.
  kMissing,   ///< A stage's report never came: handled per policy (the exact rule keeps R).
  kPaused,    ///< The stage was cut by a pause (RTSP PAUSE): its report is no reading of the
              ///< path and the sender did not feed it to the policy (R unchanged).
};

/// Text name of a decision kind, for logs and CSV traces.
std::string_view to_string(DecisionKind kind);

/// The outcome of one report: the rate for the next stage and why.
struct Decision {
  double rate = 0.0;
  DecisionKind kind = DecisionKind::kKeep;
  /// Short static explanation for traces (never owns memory).
  std::string_view reason;
  /// The policy's path capacity estimate after this report, payload bytes per µs; NaN for
  /// policies without one (traces write it as an empty field).
  double capacity_estimate = std::numeric_limits<double>::quiet_NaN();
};

/// What the exact rule does for a stage whose report never came (the seed is silent on it).
enum class MissingReportAction : std::uint8_t {
  kHold,      ///< Keep R (default): no information, no change.
  kIncrease,  ///< R += Rp1: lost feedback read as congestion on the way back.
  kDecrease,  ///< R -= Rp2.
};

/// Parameters of the exact rule (names as in docs/design.md §2 and the seed).
struct RuleParams {
  double r0 = 0.0;                           ///< Rate of stage 0.
  double rp = 0.05;                          ///< Rate set after stage 0's report.
  double rp1 = 0.05;                         ///< Increase step.
  double rp2 = 0.05;                         ///< Decrease step.
  double rmax = 0.5;                         ///< Upper limit of R.
  Threshold t1 = Threshold::absolute(0.5);   ///< Performance threshold (P units or relative).
  Threshold t2 = Threshold::fraction(0.05);  ///< Delay threshold (µs or relative).
  unsigned k = 1;  ///< Delay history: compare L with the last k stages (1 = basic rule).
  MissingReportAction missing = MissingReportAction::kHold;  ///< For stages without a report.
};

/// Checks ranges: rates in [0, 1], r0 and rp within [0, rmax], steps >= 0, k in [1, 1024].
Status validate(const RuleParams& params);

/// Counters every controller keeps, for metrics.
struct ControllerStats {
  std::uint64_t reports = 0;    ///< Reports accepted.
  std::uint64_t rejected = 0;   ///< Reports rejected as invalid.
  std::uint64_t stale = 0;      ///< Duplicate or out-of-order reports ignored.
  std::uint64_t missing = 0;    ///< Stages whose report never came.
  std::uint64_t increases = 0;  ///< Decisions that raised R.
  std::uint64_t decreases = 0;  ///< Decisions that lowered R.
};

/// What the sender knows about a stage it is about to start (rate_for_next).
struct StageStart {
  std::uint32_t stage = 0;  ///< Index of the stage about to start.
  /// Bytes of its block before discard: payload, or (the stream server) link bytes (payload +
  /// per-packet headers + kLinkOverheadBytes, the unit of PDFB v1.1's byte counts).
  std::uint64_t block_bytes = 0;
  double block_duration_us = 0.0;  ///< Media duration of the block (the paced send time), µs.
  std::uint64_t bytes_before = 0;  ///< Bytes (same unit) the session sent before this stage.
  /// Packets of the block before discard (the count R is a fraction of).
  std::uint32_t packets = 0;
  /// Optional, when the sender's discard order is known (priority discard): removable[k] is the
  /// bytes (same unit) that discarding k packets removes, k = 0 .. the droppable count. Lets a
  /// policy turn a byte budget into R exactly instead of through a learnt byte share. Borrowed
  /// for the call.
  std::span<const std::uint64_t> removable;
  /// Packets of the block's disposable frames (no other frame refers to them: a temporal layer
  /// above the base, B-frames); 0 when there are none or it is unknown.
  std::uint32_t disposable_packets = 0;
};

/// What the sender knows about the stage it is sending when a report arrives (rate_for_rest).
struct StageProgress {
  std::uint32_t stage = 0;         ///< The stage in flight.
  double elapsed_us = 0.0;         ///< Since its scheduled start.
  double duration_us = 0.0;        ///< Its media duration (the paced send time).
  std::uint64_t sent_bytes = 0;    ///< Bytes it sent so far (StageStart's unit).
  std::uint64_t rest_bytes = 0;    ///< Bytes of its packets not handed over yet, before discard.
  double rate = 0.0;               ///< R its remaining packets would go with now.
  std::uint32_t rest_packets = 0;  ///< Its packets not handed over yet (R is a fraction of them).
  /// As StageStart::removable, for the packets not handed over yet.
  std::span<const std::uint64_t> removable;
};

/// A receiver's interim alert on the stage in flight: its packets started to queue at the
/// bottleneck (queueing delay above the receiver's alert threshold) before the stage ended.
struct StageAlert {
  std::uint32_t stage = 0;
  double queue_us = 0.0;  ///< Queueing delay of the packet that raised it.
  double rate = 0.0;      ///< Arrival rate of the stage's last packets, link bytes per µs.
  /// Rate at which the stage's back-to-back pairs left the bottleneck (0: none yet).
  double pair_rate = 0.0;
};

/// A token bucket for the sender's pacing: `burst_bytes` may leave back to back after an idle
/// time (a packet pair or two, whose dispersion at the bottleneck measures its rate), the rest
/// at `rate` (StageStart's byte unit per µs).
struct PacingLimit {
  double rate = 0.0;
  double burst_bytes = 0.0;
  /// The block's leading burst is paid back before the pace resumes (the bucket starts each
  /// block empty, not full): the queue the burst builds at the bottleneck drains behind it
  /// instead of standing under a pace at the bottleneck's own rate.
  bool repay_burst = false;
};

/// Earliest time a packet may go after one of `bytes` sent at `now_us`, given the previous
/// earliest time `free_us` (the bucket's state): what the sender keeps per peer.
inline double next_pacing_time(double free_us, double now_us, double bytes, const PacingLimit& l) {
  const double earliest = now_us - l.burst_bytes / l.rate;
  return (free_us > earliest ? free_us : earliest) + bytes / l.rate;
}

/// A rate policy. The sender asks rate() when it starts a stage and feeds each report in.
///
/// Reports may arrive while later stages are already in flight (paced streaming): R is the
/// controller's state, updated by reports in stage order, and applies to the next stage started.
class RateController {
 public:
  virtual ~RateController() = default;
  RateController() = default;
  RateController(const RateController&) = delete;
  RateController& operator=(const RateController&) = delete;

  /// Policy name as selected in configuration ("basic", "history", "fixed", ...).
  virtual std::string_view name() const = 0;
  /// The discard rate to use for the next stage started.
  virtual double rate() const = 0;
  /// The rate for the stage `next` describes, asked when it starts by senders that know its size
  /// (streaming). Model-based policies size R from it; the default is rate().
  virtual double rate_for_next(const StageStart& next) {
    (void)next;
    return rate();
  }
  /// After a report: R for the rest of the stage in flight, for senders that can re-plan it
  /// (streaming); nothing leaves its plan. The report on a stage arrives while the next one is
  /// on the wire, so without this a report acts on the stage after that at the earliest. The
  /// default leaves every plan alone.
  virtual std::optional<double> rate_for_rest(const StageProgress& progress) {
    (void)progress;
    return std::nullopt;
  }
  /// An interim alert on the stage in flight (StageAlert). True when the policy changed its
  /// estimate: the sender then re-plans the rest of that stage (rate_for_rest). The default
  /// ignores alerts.
  virtual bool on_alert(const StageAlert& alert) {
    (void)alert;
    return false;
  }
  /// The sender resumes after sending nothing for `idle_us` (RTSP PAUSE, then PLAY). What the
  /// policy read of the path before the pause is that old: other flows may have taken the share
  /// it had, and its queue has long drained. The default keeps everything.
  virtual void on_resume(double idle_us) { (void)idle_us; }
  /// The sender stops sending until on_resume (RTSP PAUSE). The default does nothing; a coupled
  /// policy gives its share back to the group meanwhile.
  virtual void on_pause() {}
  /// Couples the policy's estimate with the other sessions of `group` (sessions known to share
  /// one bottleneck, core/shared_bottleneck.hpp). False for policies without an estimate of the
  /// path (the default), which stay uncoupled. Called before the first report.
  virtual bool couple(const std::shared_ptr<SharedBottleneck>& group) {
    (void)group;
    return false;
  }
  /// How the sender should pace this peer's packets beyond the media's own schedule, or nothing
  /// for no limit. A policy that knows the path's rate paces a key frame out over time instead
  /// of queueing it at the bottleneck.
  virtual std::optional<PacingLimit> pacing() const { return std::nullopt; }
  /// True when the policy's decisions turn on P: a sender whose P comes later than the rest of
  /// a report (a browser's player page, docs/webrtc.md "Quality in the page") holds the report
  /// for it a while. False for policies that decide on the path alone and should get the
  /// report at once.
  virtual bool reads_performance() const { return true; }
  /// Feeds the report of one stage. Invalid reports are rejected and change nothing.
  Result<Decision> on_report(const StageReport& report);
  /// Tells the controller that `stage`'s report will never come (its deadline passed).
  Decision on_report_missing(std::uint32_t stage);
  /// Counters since construction.
  const ControllerStats& stats() const { return stats_; }

 protected:
  /// Policy-specific reaction to a validated, in-order report.
  virtual Decision decide(const StageReport& report) = 0;
  /// Policy-specific reaction to a missing report; the default keeps R.
  virtual Decision decide_missing(std::uint32_t stage);
  /// True once any report was accepted.
  bool has_reports() const { return has_last_stage_; }

 private:
  ControllerStats stats_;
  std::uint32_t last_stage_ = 0;
  bool has_last_stage_ = false;
};

/// Validates a report's values: finite, non-negative L; finite P; received <= 65535 etc.
Status validate(const StageReport& report);

}  // namespace predrop::core

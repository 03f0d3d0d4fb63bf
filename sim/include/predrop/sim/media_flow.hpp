#pragma once
// One predrop streaming session in the simulator, built from the server's and the client's own
// core pieces: the rate policy (core::make_rate_controller, the same configuration as the
// server), the discard planner with its priority order and discard curve (StageStart::removable),
// the sender's re-plan of the block in flight when a report arrives (rate_for_rest), the report
// deadline (missing reports), and at the receiver the core::ReceptionMeter that makes PDFB v1.1's
// path measurements. What is not the server's code: the pacing (every packet leaves at its due
// time, as the server's deadline pacer does within a quantum) and P, which is a model of PSNR:
// a block's pictures are intact, skipped (a discarded or lost frame: the previous picture
// repeated) or corrupt (a partial frame, or any frame after a damaged reference in its GOP), and
// P is the PSNR of the mean MSE with one MSE per kind (QualityModel; defaults fitted to the bed
// clip: R = 0.05 of disposable frames costs ~26 dB as on loopback, docs/design.md §2.9).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/core/discard_planner.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/core/reception_meter.hpp"
#include "predrop/core/stage_alert_detector.hpp"
#include "predrop/sim/clip.hpp"
#include "predrop/sim/network.hpp"

namespace predrop::sim {

struct QualityModel {
  double mse_intact = 0.065;  ///< 60 dB: the client's cap for an identical picture.
  /// A picture not shown (the previous one repeated), per picture of the freeze so far (up to 10).
  double mse_skipped = 150;
  double mse_corrupt = 800;  ///< A picture decoded from damaged data.
};

struct MediaConfig {
  std::shared_ptr<const Clip> clip;
  core::PolicyConfig policy;
  core::DiscardPolicy discard = core::DiscardPolicy::kPriority;
  SimTime start_us = 0;
  SimTime stop_us = INT64_MAX;  ///< No block starts at or after this.
  /// RTSP PAUSE at pause_from_us, PLAY at pause_until_us (blocks resume where they stopped).
  SimTime pause_from_us = -1;
  SimTime pause_until_us = -1;
  SimTime report_timeout_us = 2'000'000;  ///< control.report_timeout_stages x the block.
  SimTime settle_us = 80'000;             ///< Stage closed -> report sent (decode and score).
  std::uint32_t report_bytes = 130;       ///< SRTCP RR + PDFB v1.1 on the link.
  core::ReceptionMeterConfig meter;
  QualityModel quality;
  /// An experiment, not in the server yet (bench/README.md "The interim alert"): when a packet
  /// of the newest stage queued longer than this, the receiver sends one alert for that stage
  /// at once (core::StageAlert: its queue and the arrival rate of its last 8 packets) and the
  /// sender re-plans the rest of the stage if the policy takes it. 0 = off.
  SimTime alert_queue_us = 0;
  /// The group this session's capacity policy is coupled with (none: uncoupled).
  std::shared_ptr<core::SharedBottleneck> coupled;
};

/// What one stage did, for the metrics.
struct BlockRecord {
  std::uint32_t stage = 0;
  std::uint32_t block = 0;
  SimTime start_us = 0;
  SimTime end_us = 0;
  double planned_rate = 0;  ///< R at the stage's start.
  double rate = 0;          ///< Discarded / packets after any re-plan.
  std::uint32_t packets = 0;
  std::uint32_t discarded = 0;
  std::uint32_t sent = 0;
  std::uint32_t lost = 0;  ///< Sent, never arrived.
  std::uint64_t block_bytes = 0;
  std::uint64_t sent_bytes = 0;
  double psnr_db = 0;
  double reception_period_us = 0;
  double queue_us = 0;  ///< As reported (end of stage).
  bool reported = false;
  bool missing = false;
  SimTime report_at_us = -1;  ///< When the sender got the report.
  std::string_view reason;    ///< The decision on this stage's report.
  double estimate = 0;        ///< The policy's capacity estimate after it (bytes per µs).
};

class MediaFlow final : public Endpoint {
 public:
  /// Throws std::invalid_argument for a bad policy configuration.
  MediaFlow(Network& net, MediaConfig config, FlowPath path, std::string name);
  ~MediaFlow() override;

  /// Schedules the session's start.
  void start();
  std::uint32_t id() const { return id_; }
  const std::vector<BlockRecord>& blocks() const { return records_; }
  core::RateController& controller() { return *controller_; }

  void on_receive(const Packet& p) override;
  void on_feedback(const Packet& p) override;

 private:
  struct Stage;
  struct SendInfo {
    std::uint32_t packet = 0;  ///< Index in the block.
    std::uint16_t count = 0;   ///< Announced count when it was sent.
  };
  void begin_stage();
  /// Hands over the current block's packets that are due and that the pacing rate allows.
  void pump();
  void send_packet(std::uint32_t stage, std::uint32_t index);
  void replan_current();
  void maybe_alert(const core::PacketArrival& a);
  void check_missing();
  void poll();
  void on_measurement(const core::StageMeasurement& m);
  double quality_of(const Stage& s) const;
  std::span<const std::uint64_t> discard_curve(const ClipBlock& b, std::size_t first);
  Stage* stage_state(std::uint32_t stage);

  Network& net_;
  MediaConfig config_;
  std::uint32_t id_;
  std::unique_ptr<core::RateController> controller_;
  core::DiscardPlanner planner_;
  core::ReceptionMeter meter_;
  std::vector<std::unique_ptr<Stage>> ring_;
  std::vector<BlockRecord> records_;
  std::vector<core::StageReport> reports_;  ///< Reports in flight, by tag.
  std::uint32_t next_stage_ = 0;
  std::uint32_t current_ = 0;
  bool stage_open_ = false;
  SimTime next_start_us_ = 0;
  std::uint64_t bytes_sent_ = 0;
  std::uint32_t next_missing_check_ = 0;  ///< Oldest stage that may still be unsettled.
  std::vector<std::uint32_t> order_;
  std::vector<std::uint64_t> removable_;
  bool polling_ = false;
  bool pump_scheduled_ = false;
  SimTime next_free_us_ = 0;  ///< When the pacing rate lets the next packet go.
  double lead_bytes_ = 0.0;   ///< Bytes of the current block's leading burst sent.
  // Interim alerts (receiver side): the smallest one-way delay seen, the stage last alerted on,
  // the newest stage seen and its last arrivals (time, bytes) for the rate the alert carries.
  core::StageAlertDetector alert_detector_;
  std::vector<core::StageAlert> alerts_;  ///< Alerts in flight, by tag (with kAlertTag).
  static constexpr std::uint64_t kAlertTag = 1ull << 62;  // bit 63 is the network's
};

}  // namespace predrop::sim

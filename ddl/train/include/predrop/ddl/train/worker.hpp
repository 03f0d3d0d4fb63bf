#pragma once
// A DDL training worker (predrop-ddl-worker): trains ddl::train::Mlp on its shard of Fashion-MNIST
// in lock-step with the other workers of a job through the relay (predrop-server --mode ddl).
//
// Per stage (one training iteration) it computes the gradient of one mini-batch, sends it to the
// relay as SRTP packets of tensor chunks (optionally pre-discarding a fraction R of them with its
// own controller), receives the relay's aggregate, fills the chunks that did not come (zero or its
// own gradient, as the relay's job says), takes an SGD step, measures the loss on a fixed probe
// batch and reports L (the aggregate's reception period) and P = probe loss before minus after
// the step to the relay over SRTCP PDFB. It joins with a PDJN handshake (predrop/ddl/protocol.hpp)
// and leaves with an RTCP BYE. See docs/ddl-mode.md.
//
// Time: every decision that depends on time (join retries and time-outs, the stage deadline,
// reception periods, the relay's silence, abs-send-time stamps) reads the injected net::Clock; the
// loop's timers only say when to look again. A test driving a FakeClock calls poll().
//
// Threading: everything runs on the loop thread; the data set is shared read-only and may be used
// by several workers on several threads. Errors: start() returns set-up errors; errors while
// running (join refused, relay silent, removed) end the worker through on_done with a message.
// No exception leaves a UDP or timer callback: one caught at its boundary (net::CallbackGuard)
// is counted and logged, and the worker leaves the job (BYE) and ends with an error.
//
// Joining (docs/ddl-mode.md "Join handshake"): the first PDJN carries only this worker's random
// nonce; the relay's challenge gives the job's nonce, and the PDJN that echoes it is the join.
// Only answers that echo this worker's nonce, and this job's, are taken.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "predrop/chain/stage_receiver.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/core/rate_controller.hpp"
#include "predrop/core/result.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/ddl/train/dataset.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"

namespace predrop::ddl::train {

/// What a test may observe of one stage: the worker's own gradient and the aggregate it applied
/// (after filling missing chunks), both valid only during the call.
struct DdlGradientTap {
  std::uint32_t stage = 0;
  std::span<const float> own_gradient;
  std::span<const float> applied;
  std::span<const std::uint16_t> received;  ///< Per chunk: 1 if the aggregate chunk arrived.
};

/// Settings of one worker.
struct DdlWorkerOptions {
  net::SocketAddress relay;                                 ///< The relay's UDP address.
  net::SocketAddress bind = net::SocketAddress::any_v4(0);  ///< Local address (port 0: any).
  ddl::JobKey key;                                          ///< Shared SRTP key of the job.
  std::uint16_t rank = ddl::kAnyRank;                       ///< Shard index; any = relay picks.
  std::uint64_t seed = 1;         ///< Model and data seed; the same for every worker of a job.
  std::uint32_t stages = 300;     ///< Training iterations.
  std::uint32_t batch = 32;       ///< Mini-batch per worker and stage.
  float learning_rate = 0.05f;    ///< SGD.
  float momentum = 0.9f;          ///< SGD heavy-ball momentum.
  std::size_t train_subset = 0;   ///< Use this many training samples (seeded pick); 0 = all.
  std::size_t test_subset = 0;    ///< Evaluate on the first n test samples; 0 = all 10 000.
  std::size_t probe = 128;        ///< Fixed probe batch (training samples) for P.
  std::uint32_t eval_every = 25;  ///< Test accuracy every n stages (and after the last); 0 = last.
  core::PolicyConfig egress_policy;  ///< Controller of the worker's own egress (if the job says).
  core::DiscardPolicy egress_discard = core::DiscardPolicy::kPriority;
  std::uint64_t discard_seed = 1;
  std::uint32_t report_timeout_stages = 2;  ///< Egress: a relay report is missing this late.
  std::uint32_t join_timeout_ms = 10'000;   ///< No answer to PDJN for this long: give up.
  std::uint32_t relay_silence_ms = 30'000;  ///< Nothing from the relay for this long: give up.
  int socket_buffer_bytes = 4 << 20;        ///< SO_RCVBUF/SO_SNDBUF (capped by the kernel).
  /// Test and demo hook: at this stage the worker goes silent (closes its socket, sends no BYE)
  /// and ends with an error, as if the process had died.
  std::optional<std::uint32_t> vanish_at_stage;
  /// Test hook: impair the aggregate's packets on receipt (drop, or delay their arrival time).
  chain::ReceiveImpairment impairment;
  /// Test hook: called after each stage's aggregate is complete, before the SGD step.
  std::function<void(const DdlGradientTap&)> tap;
};

/// One stage as the worker saw it.
struct DdlWorkerStageRow {
  std::uint32_t stage = 0;
  std::uint16_t rank = 0;
  double train_loss = 0.0;      ///< Mini-batch loss before the step.
  double probe_loss = 0.0;      ///< Probe loss after the step.
  double performance = 0.0;     ///< P = probe loss before - after (reported).
  double test_accuracy = -1.0;  ///< After the step, when evaluated; -1 otherwise.
  // Downlink (the aggregate).
  double reception_period_us = 0.0;  ///< L reported.
  std::uint32_t received = 0;        ///< Aggregate chunks received.
  std::uint32_t announced = 0;       ///< Chunks the relay said it sent (after its pre-discard).
  std::uint32_t lost = 0;            ///< announced - received: network loss (and late).
  std::uint32_t filled = 0;          ///< Chunks filled by the missing-chunk policy.
  std::uint32_t partial = 0;         ///< Received chunks the relay averaged over fewer workers.
  std::uint8_t close_reason = 0;     ///< 0 complete, 1 deadline, 2 forced.
  std::uint64_t deadline_us = 0;     ///< The D that applied.
  // Uplink (the worker's gradient).
  double uplink_rate = 0.0;            ///< R of the worker's egress for this stage.
  std::uint32_t uplink_planned = 0;    ///< Chunks of the gradient.
  std::uint32_t uplink_discarded = 0;  ///< Pre-discarded by the worker.
  double uplink_period_us = -1.0;      ///< L of the uplink as the relay reported it; -1 unknown.
  std::uint32_t uplink_received = 0;   ///< Chunks the relay received from this worker.
  std::uint64_t stage_us = 0;          ///< Wall time from this stage's start to its end.
};

/// Totals at the end.
struct DdlWorkerSummary {
  std::uint16_t rank = ddl::kAnyRank;
  std::uint32_t stages = 0;           ///< Stages completed.
  double final_accuracy = -1.0;       ///< Last test accuracy measured.
  std::uint64_t late_chunks = 0;      ///< Aggregate chunks of closed stages (dropped).
  std::uint64_t srtp_failures = 0;    ///< Datagrams that failed SRTP/SRTCP authentication.
  std::uint64_t chunks_rejected = 0;  ///< Invalid aggregate chunks.
  std::uint64_t chunks_filled = 0;    ///< Sum of DdlWorkerStageRow::filled.
  std::uint64_t chunks_lost = 0;      ///< Sum of DdlWorkerStageRow::lost.
  std::uint64_t send_drops = 0;       ///< Datagrams the kernel refused.
  std::uint32_t join_requests = 0;    ///< PDJN sent (first, retries, keep-alives).
  std::uint64_t ssrc_mismatches = 0;  ///< From the relay's address, but not its SSRC: dropped.
  std::uint64_t stale_answers = 0;    ///< PDJA not to this worker's join in this job: ignored.
  std::uint64_t callback_errors = 0;  ///< Exceptions caught at a callback boundary.
};

/// One worker of a job.
class DdlWorker {
 public:
  using OnStage = std::function<void(const DdlWorkerStageRow&)>;
  using OnDone = std::function<void(const core::Status&, const DdlWorkerSummary&)>;

  /// `data` must hold Fashion-MNIST (or any 784-feature, 10-class set). Throws
  /// std::invalid_argument for options that cannot work (e.g. an empty shard). `clock` must
  /// outlive the worker.
  DdlWorker(net::EventLoop& loop, const net::Clock& clock,
            std::shared_ptr<const ddl::train::FashionMnist> data, DdlWorkerOptions options,
            OnStage on_stage, OnDone on_done);
  ~DdlWorker();
  DdlWorker(const DdlWorker&) = delete;
  DdlWorker& operator=(const DdlWorker&) = delete;

  /// Opens the socket and starts joining. on_done runs exactly once afterwards, on the loop
  /// thread, after the worker has closed its handles.
  core::Status start();
  /// Leaves the job now (BYE) and ends with an error "stopped"; for signal handlers.
  void stop();
  /// The local address once started.
  net::SocketAddress local_address() const;
  /// Re-evaluates every decision that depends on time at the clock's now, as the timers do when
  /// they fire (the stage deadline judged at once, without the timer's 1 ms grace for queued
  /// I/O). For tests that advance a FakeClock after the loop went idle.
  void poll();
  /// Datagrams handled so far (tests wait for the loop to go idle by it).
  std::uint64_t datagrams_received() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

/// Loads Fashion-MNIST from `dir` with an error that names the directory and the package.
core::Result<std::shared_ptr<const ddl::train::FashionMnist>> load_ddl_dataset(
    const std::string& dir);

}  // namespace predrop::ddl::train

#pragma once
// The worker side of the DDL relay protocol, once, for every trainer: the C++ trainer's worker
// (ddl/train DdlWorker) and the external trainer's peer (ddl/capi GradientPeer, PyTorch through
// the C ABI). It joins the job (PDJN/PDJA with the nonce challenge), stays in it (keep-alives),
// sends each stage's gradient as SRTP tensor chunks (burst, or paced at the uplink's measured
// rate; optionally pre-discarded at a rate the host gives), collects the relay's aggregate
// (deadline, skip-ahead, end of job: ddl::StagePeer), fills the missing chunks as the job says,
// reports each stage's L, counts and the host's P over SRTCP PDFB, and leaves with a BYE.
//
// A facade over units of plain rules, as DdlRelay is (relay.cpp): relay_client_join.hpp decides
// joining and keep-alives, stage_peer.hpp a stage's close, path_pacer.hpp the uplink's pace; the
// client owns the socket, the timers and the exception boundary and applies their verdicts. The
// host (the trainer) hears of the job through a RelayClientListener and drives the stages.
//
// Time: every decision that depends on time reads the injected net::Clock; the loop's timers only
// say when to look again, and poll() looks now (tests on a FakeClock).
// Threading: loop thread only. Errors: start() and the host's calls return what is wrong with
// the call; a failure of the job (join refused or unanswered, relay silent, removed, BYE) ends
// the client through on_ended. No exception leaves a UDP or timer callback, nor a host's call:
// one caught (net::CallbackGuard, the listener's own included) leaves the job with a BYE and ends
// the client with "internal error in a <kind> callback: <what>".
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "predrop/chain/stage_receiver.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/core/result.hpp"
#include "predrop/core/stage_report.hpp"
#include "predrop/ddl/aggregator.hpp"
#include "predrop/ddl/chunk.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/ddl/stage_collector.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/wire/rtcp.hpp"

namespace predrop::ddl {

/// Settings of one client.
struct RelayClientOptions {
  net::SocketAddress relay;                                 ///< The relay's UDP address.
  net::SocketAddress bind = net::SocketAddress::any_v4(0);  ///< Local address (port 0: any).
  JobKey key;                                               ///< Shared SRTP key of the job.
  std::uint16_t rank = kAnyRank;                            ///< Requested rank; any = relay picks.
  std::uint64_t model_seed = 1;            ///< Must be the same on every worker (the relay checks).
  std::uint32_t tensor_elements = 0;       ///< Length of the flat gradient, every stage.
  std::uint32_t join_timeout_ms = 10'000;  ///< No answer to PDJN for this long: give up.
  std::uint32_t start_timeout_ms = 0;      ///< Joined, the job has not started: give up (0: never).
  std::uint32_t relay_silence_ms = 5'000;  ///< Nothing from the relay (waiting, or in a stage).
  std::uint32_t keepalive_ms = 250;        ///< Running: a control message at least this often.
  /// Stages of the job from its start stage (0: not known). Stages past the last close at once
  /// (CloseReason::kEnded), so a worker that skipped ahead near the end does not wait for them.
  std::uint32_t stages = 0;
  /// Once a chunk of the aggregate came, nothing more for this long closes the stage before D
  /// (CloseReason::kIdle). 0: off.
  std::uint32_t idle_close_ms = 0;
  int socket_buffer_bytes = 4 << 20;  ///< SO_RCVBUF/SO_SNDBUF (capped by the kernel).
  bool gso = true;                    ///< The gradient's equal-sized packets as UDP GSO messages.
  /// The host pre-discards its uplink at the rate it passes to begin_stage() when the job asks
  /// for it (ddl.worker_egress_discard); without it such a job is refused at the join.
  bool egress_discard = false;
  core::DiscardPolicy discard = core::DiscardPolicy::kPriority;  ///< Which uplink chunks go.
  std::uint64_t discard_seed = 1;
  chain::ReceiveImpairment impairment;  ///< Test hook: drop or delay aggregate packets on receipt.
  const char* log_name = "ddl-client";  ///< Names the host in log lines (a literal).
};

/// The job as the relay described it when this worker joined.
struct RelayJob {
  std::uint16_t rank = 0;
  std::uint16_t workers = 0;
  std::uint32_t start_stage = 0;  ///< Known once started.
  ChunkPlan plan;                 ///< The gradient's chunks (the relay's chunk size).
  MissingPolicy fill = MissingPolicy::kZero;
  std::uint32_t stage_deadline_ms = 0;  ///< 0 = adaptive.
  bool egress_discard = false;          ///< The host pre-discards its uplink.
  bool paced = false;                   ///< The uplink goes at the path's measured pace.
};

/// One closed stage as this worker saw it. Spans are valid only during the listener's call.
struct RelayStage {
  std::uint32_t stage = 0;
  CloseReason close_reason = CloseReason::kComplete;
  std::uint64_t deadline_us = 0;     ///< The D that applied.
  std::uint32_t received = 0;        ///< Aggregate chunks received.
  std::uint32_t announced = 0;       ///< Chunks the relay sent (after its pre-discard).
  std::uint32_t lost = 0;            ///< announced - received: network loss (and late).
  std::uint32_t filled = 0;          ///< Chunks filled by the missing-chunk policy.
  std::uint32_t partial = 0;         ///< Chunks the relay averaged over fewer than all workers.
  std::uint32_t contributors = 0;    ///< Workers the relay's aggregate averages (from PDSC).
  double reception_period_us = 0.0;  ///< L of the aggregate (what the report carries).
  // Uplink.
  double uplink_rate = 0.0;            ///< R the host gave for this stage.
  std::uint32_t uplink_planned = 0;    ///< Chunks of the gradient.
  std::uint32_t uplink_discarded = 0;  ///< Pre-discarded.
  // The stage's timeline, clock µs (0: did not happen).
  std::uint64_t begin_us = 0;          ///< The stage opened.
  std::uint64_t uplink_sent_us = 0;    ///< The last gradient chunk was handed to the kernel.
  std::uint64_t pdsc_us = 0;           ///< The relay's "stage closed" (PDSC) arrived.
  std::uint64_t first_chunk_us = 0;    ///< The first chunk of the aggregate arrived.
  std::uint64_t last_chunk_us = 0;     ///< The last chunk of the aggregate arrived.
  std::uint64_t closed_us = 0;         ///< The stage closed.
  std::span<const float> gradient;     ///< The host's gradient of this stage.
  std::span<const float> aggregate;    ///< The average after the fill.
  std::span<const std::uint16_t> got;  ///< Per chunk: 1 if the aggregate chunk arrived.
};

/// Counters of one client.
struct RelayClientCounters {
  std::uint64_t datagrams = 0;          ///< Datagrams handled (tests wait for quiet by it).
  std::uint64_t foreign_datagrams = 0;  ///< From another address than the relay's: dropped.
  std::uint64_t ssrc_mismatches = 0;    ///< From the relay's address, not its SSRC: dropped.
  std::uint64_t stale_answers = 0;      ///< PDJA not to this worker's join in this job: ignored.
  std::uint64_t srtp_failures = 0;      ///< Datagrams that failed SRTP/SRTCP authentication.
  std::uint64_t chunks_rejected = 0;    ///< Invalid aggregate chunks.
  std::uint64_t late_chunks = 0;        ///< Aggregate chunks of closed stages (dropped).
  std::uint64_t send_drops = 0;         ///< Datagrams the kernel refused.
  std::uint32_t join_requests = 0;      ///< PDJN sent (first, retries, keep-alives while waiting).
  std::uint32_t keepalives = 0;         ///< Empty RRs sent while running.
  std::uint32_t reports = 0;            ///< Stage reports (PDFB) sent.
  std::uint64_t callback_errors = 0;    ///< Exceptions caught at the boundary.
};

/// What the client tells its host. Every call runs on the loop thread inside the client's
/// exception boundary; each may call the client back (begin_stage(), report(), leave()).
class RelayClientListener {
 public:
  RelayClientListener() = default;
  RelayClientListener(const RelayClientListener&) = delete;
  RelayClientListener& operator=(const RelayClientListener&) = delete;
  RelayClientListener(RelayClientListener&&) = delete;
  RelayClientListener& operator=(RelayClientListener&&) = delete;
  virtual ~RelayClientListener() = default;

  /// Joined: the host prepares its side of `job`; an error leaves the job (BYE) and ends with it.
  virtual core::Status on_joined(const RelayJob& job) = 0;
  /// The job started at job.start_stage; the host opens stages with begin_stage().
  virtual void on_started(const RelayJob& job) = 0;
  /// A stage closed (the aggregate filled); the host reports it (report()) now or later.
  virtual void on_stage_closed(const RelayStage& stage) = 0;
  /// The relay's report on this worker's uplink of one stage (for the host's egress control).
  virtual void on_uplink_report(const core::StageReport& report) { (void)report; }
  /// The client ended (handles closed): Ok after leave(Ok), else why. Runs once.
  virtual void on_ended(const core::Status& status) = 0;
};

/// One worker's connection to the relay.
class RelayClient {
 public:
  /// Closed stages whose report (P) may still come.
  static constexpr std::size_t kReportWindow = 16;

  /// Throws std::invalid_argument for options that cannot work (no tensor). `clock` and
  /// `listener` must outlive the client.
  RelayClient(net::EventLoop& loop, const net::Clock& clock, RelayClientOptions options,
              RelayClientListener& listener);
  ~RelayClient();
  RelayClient(const RelayClient&) = delete;
  RelayClient& operator=(const RelayClient&) = delete;
  RelayClient(RelayClient&&) = delete;
  RelayClient& operator=(RelayClient&&) = delete;

  /// Opens the socket and sends the first PDJN.
  core::Status start();
  /// Opens stage `s` (or, when the host fell further behind than the collector's window, the
  /// relay's current stage: the returned one) with `gradient` (tensor_elements values, copied)
  /// and sends it, pre-discarding `rate` of its chunks (the job must allow it). An error if the
  /// job has not started, a stage is open, the length is wrong or the client has ended.
  core::Result<std::uint32_t> begin_stage(std::uint32_t s, std::span<const float> gradient,
                                          double rate = 0.0);
  /// P of closed stage `stage`: sends its report (L, counts, queueing delay, P). Stages past the
  /// job's end are not reported (Ok). An error for a stage not among the last kReportWindow
  /// closed, or reported already.
  core::Status report(std::uint32_t stage, double performance);
  /// Leaves the job (BYE) and ends with `status`.
  void leave(const core::Status& status);
  /// Ends without a word, as if the process had died (test hook).
  void vanish(const core::Status& status);
  /// Re-evaluates every decision that depends on time at the clock's now, as the timers do when
  /// they fire (the stage deadline judged at once, without the timer's 1 ms grace for I/O).
  void poll();

  /// Whether the job runs and a stage is open.
  bool stage_open() const;
  /// The stage after the last one closed (the start stage before any).
  std::uint32_t next_stage() const;
  /// Whether on_ended has run.
  bool ended() const;
  /// The job, once joined.
  const RelayJob& job() const;
  /// The local address once started.
  net::SocketAddress local_address() const;
  /// Counters so far.
  RelayClientCounters counters() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace predrop::ddl

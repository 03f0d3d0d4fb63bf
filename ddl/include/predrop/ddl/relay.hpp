#pragma once
// The DDL relay (predrop-server --mode ddl): the aggregation point of one data-parallel training
// job. Workers join over UDP with an SRTCP PDJN handshake (protocol.hpp), then every
// stage (training iteration) each sends its gradient as SRTP packets of tensor chunks; the relay
// averages them per chunk (ddl::StageCollector / Aggregator), closes the stage when every worker's
// chunks are in or at the stage deadline (adaptive by default), and sends the average back to
// every worker through that worker's own egress chain (chain::StageTransmitter), which pre-discards
// a fraction R chosen by that worker's own controller (core::make_rate_controller). Workers report
// L and P per stage over SRTCP PDFB; the relay feeds each report to that worker's controller.
//
// Membership: the job starts when `workers` workers have joined; later joiners are refused. A
// worker that leaves (BYE), or is not heard from for `evict_after_stages` closed stages and at
// least `evict_min_silence_ms`, is removed and the job goes on with the others. (Until then the
// stages close at their deadline without it, so nobody waits longer than the deadline.) Details and
// wire formats: docs/ddl-mode.md.
//
// Time: every decision that depends on time (the stage deadline, reception periods, eviction
// silence, peer timeouts, abs-send-time stamps) reads the injected net::Clock. The loop's timers
// only say when to look again; a test that drives a FakeClock calls poll() after advancing it.
//
// Hardening (docs/ddl-mode.md "Join handshake", "Peer identity"): a join must echo this relay's
// fresh job nonce (a join recorded in an earlier job is challenged, never admitted); the job's
// tensor is bounded by max_tensor_elements; a worker is its source address *and* its SSRC, and
// datagrams from a member's address with another SSRC are counted and dropped; no exception
// leaves a UDP or timer callback (net::CallbackGuard: caught, counted, logged, and only the
// offending packet or peer is dropped).
//
// Threading: loop thread. The per-packet path (unprotect, parse, aggregate, protect, send)
// allocates nothing and logs nothing; joins, evictions and stage ends may.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "predrop/config/config.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/core/rate_controller.hpp"
#include "predrop/core/result.hpp"
#include "predrop/core/stage_report.hpp"
#include "predrop/ddl/aggregator.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"

namespace predrop::ddl {

/// Default of DdlRelayOptions::max_tensor_elements (`ddl.max_tensor_elements`): 64 Mi elements.
/// The relay holds about 24 bytes per element (two stage slots of double sums, the float average,
/// the encoded aggregate), so about 1.5 GiB at this bound.
inline constexpr std::uint32_t kDefaultMaxTensorElements = 64u << 20;
/// Most chunks a stage may have: the stage extension announces the count in 16 bits.
inline constexpr std::size_t kMaxStageChunks = 0xFFFF;

/// Settings of the relay (run_ddl_mode() builds them from the [ddl], [control], [discard] and
/// [server] sections).
struct DdlRelayOptions {
  net::SocketAddress listen = net::SocketAddress::any_v4(9000);
  std::uint32_t workers = 2;                       ///< Workers of the job.
  std::optional<std::uint32_t> stage_deadline_ms;  ///< nullopt = adaptive (docs/ddl.md).
  ddl::MissingPolicy missing_fill = ddl::MissingPolicy::kZero;  ///< Told to the workers.
  std::uint16_t chunk_elements = 256;                           ///< Values per tensor chunk.
  /// The largest tensor (model parameters) a job may have; a larger first join is refused.
  std::uint32_t max_tensor_elements = kDefaultMaxTensorElements;
  bool worker_egress_discard = false;  ///< Told to the workers.
  bool paced = false;                  ///< Pace the aggregate (and tell workers).
  core::PolicyConfig policy;           ///< One controller per worker.
  core::DiscardPolicy discard = core::DiscardPolicy::kPriority;
  std::uint64_t discard_seed = 1;
  ddl::JobKey key;                            ///< Shared SRTP key (suite nullopt: plain).
  std::uint32_t report_timeout_stages = 2;    ///< A report is missing this many stages later.
  std::uint32_t evict_after_stages = 3;       ///< Remove a worker silent for this many stages ...
  std::uint32_t evict_min_silence_ms = 1000;  ///< ... and for at least this long.
  std::uint32_t peer_timeout_ms = 60'000;     ///< Remove a worker silent for this long.
  int socket_buffer_bytes = 4 << 20;          ///< SO_RCVBUF/SO_SNDBUF (capped by the kernel).
  /// A stage's equal-sized packets to one worker leave as UDP GSO messages
  /// (net::UdpEndpoint::set_gso; plain sendmmsg where the kernel refuses).
  bool gso = true;
};

/// One worker's part of a closed stage.
struct DdlRelayPeerStage {
  std::uint16_t rank = 0;
  bool live = false;               ///< Still in the job at this stage.
  double rate = 0.0;               ///< R of the relay's egress to this worker.
  std::uint32_t planned = 0;       ///< Aggregate packets before discarding.
  std::uint32_t discarded = 0;     ///< Pre-discarded.
  std::uint32_t sent = 0;          ///< Handed to the kernel.
  std::uint32_t up_received = 0;   ///< Gradient chunks received from this worker.
  std::uint32_t up_announced = 0;  ///< Chunks it announced (0 = none heard).
  double up_period_us = 0.0;       ///< Its uplink L.
};

/// A closed stage.
struct DdlRelayStageRow {
  std::uint32_t stage = 0;
  std::uint8_t reason = 0;        ///< 0 complete, 1 deadline, 2 forced.
  double period_us = 0.0;         ///< Uplink L over all workers.
  std::uint64_t deadline_us = 0;  ///< The D that applied.
  std::uint32_t received = 0, expected = 0, lost = 0, missing = 0;
  std::uint32_t chunks_full = 0, chunks_partial = 0, chunks_empty = 0;
  std::uint16_t contributors = 0;        ///< Workers in the stage.
  std::uint64_t closed_us = 0;           ///< Monotonic time of closing.
  std::vector<DdlRelayPeerStage> peers;  ///< By rank.
};

/// When one worker's part of a stage happened at the relay (clock µs, 0: did not happen): with
/// the worker's own timeline it shows where the time of a stage goes (docs/ddl-torch.md).
struct DdlRelayStageTimes {
  std::uint64_t up_first_us = 0;   ///< Its first gradient chunk of the stage arrived.
  std::uint64_t up_last_us = 0;    ///< Its last one arrived.
  std::uint64_t closed_us = 0;     ///< The stage closed.
  std::uint64_t sent_done_us = 0;  ///< The last aggregate packet to it was handed to the kernel.
};

/// A worker's report for a stage, or the note that it never came, and the controller's answer.
struct DdlRelayReportRow {
  std::uint32_t stage = 0;
  std::uint16_t rank = 0;
  bool reported = false;     ///< False: the report is missing (decision from on_report_missing).
  core::StageReport report;  ///< As fed to the controller (rate_used filled in).
  core::Decision decision;
  double next_rate = 0.0;                              ///< The controller's R after the report.
  std::uint32_t planned = 0, discarded = 0, sent = 0;  ///< What the relay sent in that stage.
  DdlRelayStageTimes times;                            ///< Its timeline at the relay.
  double pace_kbps = 0.0;  ///< The pacing rate toward it after the report (0: not limited).
};

/// Membership events.
struct DdlRelayEvent {
  enum class Kind { kJoined, kRefused, kStarted, kLeft, kEvicted };
  Kind kind = Kind::kJoined;
  std::uint16_t rank = ddl::kAnyRank;
  net::SocketAddress peer;
  std::string text;  ///< Human-readable detail (refusal or eviction reason).
};

/// Counters since start().
struct DdlRelayStats {
  std::uint64_t datagrams = 0;  ///< Datagrams handled (every kind, from anyone).
  std::uint64_t stages = 0;
  std::uint64_t joined = 0, refused = 0, left = 0, evicted = 0;
  std::uint64_t chunks_received = 0, chunks_late = 0, chunks_too_early = 0, chunks_duplicate = 0;
  std::uint64_t chunks_rejected = 0;
  std::uint64_t reports = 0, reports_missing = 0, reports_rejected = 0;
  std::uint64_t srtp_failures = 0;      ///< RTP/RTCP that failed authentication.
  std::uint64_t foreign_datagrams = 0;  ///< RTP from addresses that are not in the job.
  std::uint64_t ssrc_mismatches = 0;    ///< From a member's address, but another SSRC: dropped.
  std::uint64_t challenges = 0;         ///< Joins without this job's nonce, challenged.
  std::uint64_t callback_errors = 0;    ///< Exceptions caught at a callback boundary.
  std::uint64_t send_drops = 0;         ///< Datagrams the kernel refused.
  std::uint64_t packets_sent = 0, packets_discarded = 0;
};

/// Receives the relay's events; every method has an empty default. Called on the loop thread.
class DdlRelayListener {
 public:
  DdlRelayListener() = default;
  DdlRelayListener(const DdlRelayListener&) = default;
  DdlRelayListener& operator=(const DdlRelayListener&) = default;
  DdlRelayListener(DdlRelayListener&&) = default;
  DdlRelayListener& operator=(DdlRelayListener&&) = default;
  virtual ~DdlRelayListener() = default;
  /// A stage closed and its aggregate went out.
  virtual void on_stage(const DdlRelayStageRow& /*row*/) {}
  /// A worker's report was handled (or declared missing).
  virtual void on_report(const DdlRelayReportRow& /*row*/) {}
  /// A worker joined, was refused, left or was evicted; the job started.
  virtual void on_event(const DdlRelayEvent& /*event*/) {}
  /// The job is over (every worker left or was removed, or stop()); handles are closed.
  virtual void on_finished(const core::Status& /*status*/) {}
};

/// The relay of one job.
class DdlRelay {
 public:
  /// Throws std::invalid_argument for options that cannot work (0 workers, bad policy). `clock`
  /// must outlive the relay.
  DdlRelay(net::EventLoop& loop, const net::Clock& clock, DdlRelayOptions options,
           DdlRelayListener* listener);
  ~DdlRelay();
  DdlRelay(const DdlRelay&) = delete;
  DdlRelay& operator=(const DdlRelay&) = delete;

  /// Binds the socket and waits for workers.
  core::Status start();
  /// Tells every worker it is removed (`reason`), closes the handles and finishes with an error.
  void stop(const std::string& reason);
  /// The bound address (resolves port 0).
  net::SocketAddress local_address() const;
  /// Counters.
  const DdlRelayStats& stats() const;
  /// Re-evaluates every decision that depends on time at the clock's now, as the timers do when
  /// they fire: peer timeouts, and the stage deadline (judged at once, without the timer's 1 ms
  /// grace for queued I/O). For tests that advance a FakeClock after the loop went idle.
  void poll();
  /// Handles `datagram` as if the socket had just received it from `from` (the same path and
  /// exception boundary); replies go out on the socket. For fuzz_ddl_relay and tests; start()
  /// must have succeeded.
  void inject_datagram(std::span<const std::uint8_t> datagram, const net::SocketAddress& from);
  /// This job's nonce (tests and fuzz_ddl_relay; it is no secret: every PDJA carries it).
  std::uint64_t job_nonce() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

/// Runs DDL mode (the relay) from the configuration until SIGINT/SIGTERM; returns the process
/// exit code. predrop-server's main dispatches here for mode = "ddl".
int run_ddl_mode(const config::ServerConfig& config);

}  // namespace predrop::ddl

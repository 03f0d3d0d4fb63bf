#pragma once
// The worker side of the DDL relay protocol for a trainer that is not ours (PyTorch's DDP through
// the C ABI in predrop_ddl.h, docs/ddl-torch.md): it joins the job with the PDJN handshake, and
// per stage takes one flat float32 gradient from the caller, sends it to the relay as SRTP tensor
// chunks, collects the relay's aggregate (the stage deadline and the missing-chunk fill as the
// relay's job says) and hands it back. P comes later from the caller (report()), once the trainer
// has taken its step and measured the loss; only then does the stage's PDFB (L, counts, P) go to
// the relay, whose controller for this peer sets the R of the next aggregate.
//
// Unlike ddl::train::DdlWorker it owns no model, data or optimiser: between two stages it is idle,
// and the relay's silence is only judged while a stage is open (the trainer may compute for as
// long as it likes). The worker egress pre-discard (`worker_egress_discard`) is not implemented
// here: a job that asks for it is refused at the join with a clear error.
//
// Time: every decision that depends on time reads the injected net::Clock; timers only say when to
// look again (poll() looks now). Threading: loop thread only; capi.cpp runs it on its own thread.
// Errors: start() and submit() return what is wrong with the call; a failure of the job (join
// refused or unanswered, relay silent during a stage, removed, BYE) ends the peer through on_done.
// No exception leaves a UDP or timer callback (net::CallbackGuard): one caught ends the peer.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "predrop/core/result.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"

namespace predrop::ddl::capi {

/// Settings of one peer.
struct GradientPeerOptions {
  net::SocketAddress relay;                                 ///< The relay's UDP address.
  net::SocketAddress bind = net::SocketAddress::any_v4(0);  ///< Local address (port 0: any).
  ddl::JobKey key;                                          ///< Shared SRTP key of the job.
  std::uint16_t rank = ddl::kAnyRank;                       ///< Requested rank; any = relay picks.
  std::uint64_t model_seed = 1;             ///< Must be the same on every peer (the relay checks).
  std::uint32_t tensor_elements = 0;        ///< Length of the flat gradient, every stage.
  std::uint32_t join_timeout_ms = 10'000;   ///< No answer to PDJN for this long: give up.
  std::uint32_t start_timeout_ms = 60'000;  ///< Joined, but the job has not started: give up.
  std::uint32_t relay_silence_ms = 5'000;   ///< Nothing from the relay in an open stage: give up.
  int socket_buffer_bytes = 4 << 20;        ///< SO_RCVBUF/SO_SNDBUF (capped by the kernel).
  /// Stages of the job from its start stage (0: not known). Stages past the last close at once
  /// (close_reason 3), so a peer that skipped ahead near the end does not wait for them.
  std::uint32_t stages = 0;
  /// Once a chunk of the aggregate came, nothing more for this long closes the stage before D
  /// (close_reason 4; ddl::StagePeerConfig::idle_close_us). 0: off.
  std::uint32_t idle_close_ms = 0;
  /// The gradient's equal-sized packets leave as UDP GSO messages (plain sendmmsg where the
  /// kernel refuses).
  bool gso = true;
};

/// The job as the relay described it when this peer joined.
struct GradientJob {
  std::uint16_t rank = 0;
  std::uint16_t workers = 0;
  std::uint32_t start_stage = 0;
  std::uint16_t chunk_elements = 0;
  std::uint32_t chunks = 0;             ///< Chunks per stage.
  bool fill_own = false;                ///< Missing-chunk fill: own gradient (else zero).
  std::uint32_t stage_deadline_ms = 0;  ///< 0 = adaptive.
};

/// One closed stage as this peer saw it.
struct GradientStage {
  std::uint32_t stage = 0;
  std::uint32_t received = 0;        ///< Aggregate chunks received.
  std::uint32_t announced = 0;       ///< Chunks the relay sent (after its pre-discard).
  std::uint32_t lost = 0;            ///< announced - received.
  std::uint32_t filled = 0;          ///< Chunks filled by the missing-chunk policy.
  std::uint32_t partial = 0;         ///< Chunks the relay averaged over fewer than all peers.
  std::uint32_t contributors = 0;    ///< Peers the relay's aggregate averages (from PDSC).
  std::uint8_t close_reason = 0;     ///< 0 complete, 1 deadline, 2 forced, 3 past the end, 4 idle.
  std::uint64_t deadline_us = 0;     ///< The D that applied.
  double reception_period_us = 0.0;  ///< L of the aggregate (reported with P).
  std::uint64_t stage_us = 0;        ///< From submit() to the close.
  // The stage's timeline, clock µs (CLOCK_MONOTONIC for the real clock; 0: did not happen), so
  // that a trainer can tell where the time of a stage went (docs/ddl-torch.md "Where a stage's
  // time goes").
  std::uint64_t begin_us = 0;        ///< The loop thread opened the stage.
  std::uint64_t uplink_sent_us = 0;  ///< The last gradient chunk was handed to the kernel.
  std::uint64_t pdsc_us = 0;         ///< The relay's "stage closed" (PDSC) arrived.
  std::uint64_t first_chunk_us = 0;  ///< The first chunk of the aggregate arrived.
  std::uint64_t last_chunk_us = 0;   ///< The last chunk of the aggregate arrived.
  std::uint64_t closed_us = 0;       ///< The stage closed (before the fill and the callback).
};

/// One peer of a job.
class GradientPeer {
 public:
  /// The job has started (the relay's PDJA "start").
  using OnStart = std::function<void(const GradientJob&)>;
  /// A stage closed; `average` (the aggregate after the fill) is valid only during the call.
  using OnStage = std::function<void(const GradientStage&, std::span<const float> average)>;
  /// The peer ended (Ok after close(), else why). Runs once, after the handles are closed.
  using OnDone = std::function<void(const core::Status&)>;

  /// Throws std::invalid_argument for options that cannot work (no tensor). `clock` must outlive
  /// the peer.
  GradientPeer(net::EventLoop& loop, const net::Clock& clock, GradientPeerOptions options,
               OnStart on_start, OnStage on_stage, OnDone on_done);
  ~GradientPeer();
  GradientPeer(const GradientPeer&) = delete;
  GradientPeer& operator=(const GradientPeer&) = delete;
  GradientPeer(GradientPeer&&) = delete;
  GradientPeer& operator=(GradientPeer&&) = delete;

  /// Opens the socket and starts joining.
  core::Status start();
  /// Starts the next stage with `gradient` (tensor_elements values, copied). An error if the job
  /// has not started, a stage is still open, the length is wrong, or the peer has ended.
  core::Result<std::uint32_t> submit(std::span<const float> gradient);
  /// P of a closed stage: sends that stage's report (L, counts, P) to the relay. Stages older
  /// than the last 16 closed are no longer known (an error).
  core::Status report(std::uint32_t stage, double performance);
  /// Leaves the job (BYE) and ends with Ok; an open stage ends with the error "closed".
  void close();
  /// Re-evaluates every time-dependent decision at the clock's now (for a FakeClock).
  void poll();
  /// True once on_done has run.
  bool done() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace predrop::ddl::capi

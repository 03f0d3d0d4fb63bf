// The DDL relay (relay.hpp): DdlRelay::Impl wires the relay's units to one socket and its timers
// and routes each event to the unit that owns it:
//   relay_membership.hpp    who is in the job, the admission rules of a join
//   relay_stage_control.hpp the stage receiver over the live workers, completion and deadline
//   relay_aggregate.hpp     the average of a closed stage, encoded once for every worker
//   relay_sender.hpp        per worker: discard plan, PDSC + uplink PDFB, burst or paced sending
//   relay_reports.hpp       a worker's reports to its controller, missing reports
//   relay_eviction.hpp      when a silent worker is evicted
//   control_channel.hpp     SRTCP in and out
//   net::CallbackGuard      the exception boundary of every UDP and timer callback
// The job's life (join with its nonce challenge, start, stages, removals, the end), peer identity
// (address + SSRC), and the events and counters are here.
// Wire formats and decisions: docs/ddl-mode.md. run_ddl_mode() is in ddl_mode.cpp.
#include "predrop/ddl/relay.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "predrop/core/byte_io.hpp"
#include "predrop/core/deadline_queue.hpp"
#include "predrop/core/log.hpp"
#include "predrop/ddl/chunk.hpp"
#include "predrop/ddl/control_channel.hpp"
#include "predrop/net/callback_guard.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "relay_aggregate.hpp"
#include "relay_eviction.hpp"
#include "relay_membership.hpp"
#include "relay_peer.hpp"
#include "relay_reports.hpp"
#include "relay_sender.hpp"
#include "relay_stage_control.hpp"

namespace predrop::ddl {

namespace {

constexpr const char* kLog = "ddl-relay";
constexpr std::uint64_t kHousekeepingMs = 250;
constexpr std::uint64_t kAuthWarningIntervalUs = 5'000'000;
// A peer whose pacer allows its next packet this close to now is sent to in this pass: the
// timer fires at 1 ms granularity and seldom early.
constexpr std::uint64_t kPaceSlackUs = 300;

// Checked before anything is sized by them.
DdlRelayOptions validated(DdlRelayOptions o) {
  if (o.workers < 1 || o.workers > 4096) {
    throw std::invalid_argument("ddl relay: workers must be 1 .. 4096");
  }
  if (o.chunk_elements == 0) throw std::invalid_argument("ddl relay: chunk_elements is 0");
  if (auto c = core::make_rate_controller(o.policy); !c) {
    throw std::invalid_argument("ddl relay: " + c.error().message);
  }
  return o;
}

// The SSRC a datagram says it is from, where both SRTP and SRTCP leave it in the clear: RTP
// bytes 8..11, RTCP (the first packet's sender) bytes 4..7. nullopt if it is too short to say.
std::optional<std::uint32_t> sender_ssrc(std::span<const std::uint8_t> d, bool rtcp) {
  const std::size_t at = rtcp ? 4 : 8;
  if (d.size() < at + 4) return std::nullopt;
  return core::load_u32_be(d.data() + at);
}

}  // namespace

class DdlRelay::Impl {
 public:
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;
  Impl(net::EventLoop& loop, const net::Clock& clock, DdlRelayOptions o, DdlRelayListener* listener)
      : loop_(loop),
        clock_(clock),
        o_(validated(std::move(o))),
        listener_(listener),
        control_ssrc_(generate_ssrc()),
        job_nonce_(generate_nonce()),
        members_(o_.workers),
        stages_(o_.stage_deadline_ms) {
    peer_settings_ =
        RelayPeerSettings{o_.chunk_elements, o_.key, o_.policy, o_.discard, o_.discard_seed};
  }

  ~Impl() { close_handles(); }

  core::Status start() {
    control_ = std::make_unique<ControlChannel>(o_.key);
    net::UdpOptions uo;
    uo.recv_buffer_bytes = o_.socket_buffer_bytes;
    uo.send_buffer_bytes = o_.socket_buffer_bytes;
    auto sock = net::UdpEndpoint::open(
        loop_, o_.listen, uo,
        [this](std::span<const std::uint8_t> d, const net::SocketAddress& from,
               std::uint64_t /*recv_time*/) { datagram(d, from); });
    if (!sock) {
      return core::make_error("cannot listen on " + o_.listen.to_string() + ": " +
                              sock.error().message);
    }
    socket_ = std::move(sock.value());
    socket_->set_gso(o_.gso);
    stages_.attach_timer(
        loop_, [this] { guarded(net::CallbackKind::kTimer, [this] { on_deadline_timer(); }); });
    pace_timer_ = std::make_unique<net::Timer>(
        loop_, [this] { guarded(net::CallbackKind::kTimer, [this] { on_pace_timer(); }); });
    housekeeping_ = std::make_unique<net::Timer>(
        loop_, [this] { guarded(net::CallbackKind::kTimer, [this] { on_housekeeping(); }); });
    housekeeping_->start(kHousekeepingMs, kHousekeepingMs);
    pace_queue_.reserve(o_.workers);
    pace_order_.reserve(o_.workers);
    running_ = true;
    return core::Ok{};
  }

  void stop(const std::string& reason) {
    guarded(net::CallbackKind::kCall, [&] {
      if (!running_) return;
      for (const auto& p : members_.peers()) {
        if (p && !p->gone) send_answer(*p, JoinStatus::kRemoved, reason);
      }
      finish(core::make_error("stopped: " + reason));
    });
  }

  net::SocketAddress local_address() const {
    return socket_ ? socket_->local_address() : net::SocketAddress{};
  }

  const DdlRelayStats& current_stats() {
    refresh_stats();
    return stats_;
  }

  void poll() {
    guarded(net::CallbackKind::kCall, [this] {
      if (!running_) return;
      const std::uint64_t now = clock_.now_us();
      check_timeouts(now);
      if (!running_) return;
      stages_.reset_grace();
      poll_stage(now, true);
    });
  }

  // Every UDP datagram, whichever way it came in.
  void datagram(std::span<const std::uint8_t> d, const net::SocketAddress& from) {
    guarded(net::CallbackKind::kUdpReceive, [&] { on_datagram(d, from, clock_.now_us()); });
  }

  void inject(std::span<const std::uint8_t> d, const net::SocketAddress& from) {
    if (socket_) datagram(d, from);
  }

  std::uint64_t job_nonce() const { return job_nonce_; }

 private:
  // ---- the exception boundary ----

  // Runs one callback's work. An exception is caught, counted and logged; then the peer being
  // worked on when it was thrown (blame_) is evicted, and the stage is polled again so that the
  // deadline timer is armed even if the failure interrupted a poll. A datagram without a peer to
  // blame is just dropped.
  template <class Fn>
  void guarded(net::CallbackKind kind, Fn&& fn) {
    blame_ = nullptr;
    boundary_.run(kind, std::forward<Fn>(fn), [this](const char* what) { recover(what); });
    blame_ = nullptr;
  }

  void recover(const char* what) {
    stats_.callback_errors = boundary_.total();
    RelayPeer* p = std::exchange(blame_, nullptr);
    if (!running_) return;
    const std::uint64_t now = clock_.now_us();
    if (p != nullptr && !p->gone) {
      remove_peer(*p, DdlRelayEvent::Kind::kEvicted,
                  std::string("internal error while handling it: ") + what, now);
    }
    if (running_ && started_) poll_stage(now, false);
  }

  // Work on behalf of `p`: blamed if it throws. Restored when it returns normally.
  template <class Fn>
  void for_peer(RelayPeer& p, Fn&& fn) {
    RelayPeer* outer = std::exchange(blame_, &p);
    std::forward<Fn>(fn)();
    blame_ = outer;
  }

  // A listener callback: a failure there is nobody's fault but the listener's.
  template <class Fn>
  void to_listener(Fn&& fn) {
    if (listener_ == nullptr) return;
    RelayPeer* outer = std::exchange(blame_, nullptr);
    std::forward<Fn>(fn)(*listener_);
    blame_ = outer;
  }

  // ---- datagrams ----

  // `t` is the clock's time when the loop handed the datagram over: every decision (deadline,
  // reception periods, silence) uses the injected clock, never the socket's own stamp.
  void on_datagram(std::span<const std::uint8_t> data, const net::SocketAddress& from,
                   std::uint64_t t) {
    if (!running_) return;
    ++stats_.datagrams;
    const bool rtcp = wire::looks_like_rtcp(data);
    RelayPeer* p = members_.find(from);
    // A worker is its address and its SSRC: another SSRC from its address is not it.
    if (p != nullptr) {
      if (const auto ssrc = sender_ssrc(data, rtcp); ssrc && *ssrc != p->ssrc) {
        ++stats_.ssrc_mismatches;
        return;
      }
    }
    if (rtcp) {
      on_control(data, from, t, p);
      return;
    }
    if (p == nullptr) {
      ++stats_.foreign_datagrams;
      return;
    }
    if (p->gone || !started_) return;
    for_peer(*p, [&] { p->rx->on_datagram(data, t); });
  }

  void on_control(std::span<const std::uint8_t> data, const net::SocketAddress& from,
                  std::uint64_t t, RelayPeer* peer) {
    if (!ControlChannel::fits(data.size())) return;
    auto m = control_->decode(data);
    if (!m) {
      ++control_failures_;
      if (!auth_warned_ || t - last_auth_warning_us_ > kAuthWarningIntervalUs) {
        auth_warned_ = true;
        last_auth_warning_us_ = t;
        core::log(core::LogLevel::kWarn, kLog,
                  "control datagram from %s rejected: %s (another job key or SRTP suite?)",
                  from.to_string().c_str(), m.error().message.c_str());
      }
      return;
    }
    if (m->join) {
      on_join(*m->join, m->sender_ssrc, from, t, peer);
      return;
    }
    if (peer == nullptr || peer->gone) return;
    // The SSRC in the clear was checked; the authenticated one must say the same.
    if (m->sender_ssrc != peer->ssrc) {
      ++stats_.ssrc_mismatches;
      return;
    }
    peer->last_heard_us = t;
    peer->heard_since_close = true;
    if (m->feedback) {
      for_peer(*peer, [&] { handle_report(*peer, *m->feedback, stats_, listener_); });
    }
    if (m->bye) remove_peer(*peer, DdlRelayEvent::Kind::kLeft, "left the job (BYE)", t);
  }

  // ---- membership ----

  void on_join(const JoinRequest& j, std::uint32_t ssrc, const net::SocketAddress& from,
               std::uint64_t now, RelayPeer* known) {
    // A join must echo this job's nonce. One that does not (a first join, or one recorded in an
    // earlier job with the same key) only learns the nonce: no state, no event, no log line.
    if (j.job_nonce != job_nonce_) {
      challenge(from, j.worker_nonce);
      return;
    }
    if (known != nullptr) {
      if (known->gone) {
        refuse(from, "this worker was removed from the job; it cannot rejoin", j.worker_nonce);
        return;
      }
      // A retry or keep-alive: answer again (the first answer may have been lost).
      known->last_heard_us = now;
      send_answer(*known, started_ ? JoinStatus::kStart : JoinStatus::kWaiting, {});
      return;
    }
    auto admission = members_.admit(j, ssrc, control_ssrc_, started_, stage_,
                                    {o_.chunk_elements, o_.max_tensor_elements});
    if (!admission) {
      refuse(from, admission.error().message, j.worker_nonce);
      return;
    }
    std::unique_ptr<RelayPeer> peer;
    try {
      peer = make_relay_peer(peer_settings_, *socket_, admission->rank, ssrc,
                             members_.new_downlink_ssrc(ssrc, control_ssrc_), from, now,
                             [this](RelayPeer& p, const wire::RtpPacketView& v,
                                    std::uint64_t arrival) { on_chunk_packet(p, v, arrival); });
    } catch (const std::exception& e) {
      refuse(from, std::string("the relay cannot set this worker up: ") + e.what(), j.worker_nonce);
      return;
    }
    if (admission->first_plan) members_.fix_tensor(*admission->first_plan, j.model_seed);
    const std::uint16_t rank = admission->rank;
    peer->worker_nonce = j.worker_nonce;
    RelayPeer& added = *peer;
    members_.add(std::move(peer));
    ++stats_.joined;
    emit_event(DdlRelayEvent::Kind::kJoined, rank, from,
               std::to_string(members_.joined()) + " of " + std::to_string(o_.workers) + " joined");
    if (members_.joined() == o_.workers) {
      start_job();
    } else {
      send_answer(added, JoinStatus::kWaiting, {});
    }
  }

  void refuse(const net::SocketAddress& to, const std::string& reason, std::uint64_t worker_nonce) {
    ++stats_.refused;
    ControlMessage m;
    m.sender_ssrc = control_ssrc_;
    JoinAnswer a = job_answer();
    a.status = JoinStatus::kRefused;
    a.worker_nonce = worker_nonce;
    a.set_reason(reason);
    m.answer = a;
    send_control(m, to);
    emit_event(DdlRelayEvent::Kind::kRefused, kAnyRank, to, reason);
  }

  void challenge(const net::SocketAddress& to, std::uint64_t worker_nonce) {
    ++stats_.challenges;
    ControlMessage m;
    m.sender_ssrc = control_ssrc_;
    JoinAnswer a = job_answer();
    a.status = JoinStatus::kChallenge;
    a.worker_nonce = worker_nonce;
    m.answer = a;
    send_control(m, to);
  }

  JoinAnswer job_answer() const {
    JoinAnswer a;
    a.workers = static_cast<std::uint16_t>(o_.workers);
    a.joined = static_cast<std::uint16_t>(members_.joined());
    a.start_stage = 0;
    a.chunk_elements = o_.chunk_elements;
    a.missing_fill = o_.missing_fill == MissingPolicy::kOwn ? 1 : 0;
    a.egress_discard = o_.worker_egress_discard;
    a.paced = o_.paced;
    a.stage_deadline_ms = o_.stage_deadline_ms.value_or(0);
    a.job_nonce = job_nonce_;
    return a;
  }

  void send_answer(const RelayPeer& p, JoinStatus status, const std::string& reason) {
    ControlMessage m;
    m.sender_ssrc = control_ssrc_;
    JoinAnswer a = job_answer();
    a.status = status;
    a.rank = p.rank;
    a.downlink_ssrc = p.downlink_ssrc;
    a.worker_nonce = p.worker_nonce;
    a.set_reason(reason);
    m.answer = a;
    send_control(m, p.address);
  }

  void send_control(const ControlMessage& m, const net::SocketAddress& to) {
    if (socket_) control_->send(*socket_, m, to);
  }

  void start_job() {
    started_ = true;
    stage_ = 0;
    try {
      aggregate_.allocate(members_.plan());
      rebuild_receiver(0);
    } catch (const std::bad_alloc&) {
      // max_tensor_elements bounds this, but the machine may still not have the memory.
      const std::string why = "the relay cannot allocate the aggregation buffers for a tensor of " +
                              std::to_string(members_.plan().total_elements()) + " elements";
      core::log(core::LogLevel::kError, kLog, "%s", why.c_str());
      for (const auto& p : members_.peers()) {
        if (p) send_answer(*p, JoinStatus::kRemoved, why);
      }
      finish(core::make_error(why));
      return;
    }
    for (const auto& p : members_.peers()) {
      if (p) send_answer(*p, JoinStatus::kStart, {});
    }
    const ChunkPlan& plan = members_.plan();
    emit_event(DdlRelayEvent::Kind::kStarted, kAnyRank, {},
               std::to_string(o_.workers) + " workers, " + std::to_string(plan.size()) +
                   " chunks of " + std::to_string(plan.chunk_elements()) + " values per stage");
  }

  // A new stage receiver over the live workers, collecting from stage `stage` on. Called at the
  // start and whenever a worker is removed, so that completion never waits for the gone.
  void rebuild_receiver(std::uint32_t stage) {
    live_ = members_.number_live();
    stages_.rebuild(members_.plan(), live_, stage);
  }

  void remove_peer(RelayPeer& p, DdlRelayEvent::Kind kind, const std::string& why,
                   std::uint64_t now) {
    if (p.gone) return;
    if (kind == DdlRelayEvent::Kind::kEvicted) {
      send_answer(p, JoinStatus::kRemoved, "evicted: " + why);
      ++stats_.evicted;
    } else {
      ++stats_.left;
      if (kind == DdlRelayEvent::Kind::kLeft) ++completed_;
    }
    p.gone = true;
    p.pace_next = p.pace_end = 0;
    emit_event(kind, p.rank, p.address, why);
    if (!started_) {
      members_.forget(p);  // before the start a leaving worker frees its rank
      return;
    }
    // Keep collecting the current stage from the others; what this worker sent of it is lost.
    rebuild_receiver(stages_.current_stage().value_or(stage_));
    if (live_ == 0) {
      finish(completed_ > 0 ? core::Status(core::Ok{})
                            : core::make_error("every worker is gone (" +
                                               std::to_string(stats_.evicted) + " evicted)"));
      return;
    }
    poll_stage(now, false);
  }

  // ---- stages ----

  void on_chunk_packet(RelayPeer& p, const wire::RtpPacketView& v, std::uint64_t arrival) {
    p.last_heard_us = arrival;
    p.heard_since_close = true;
    if (!v.stage || !stages_.active() || p.gone) return;
    auto chunk = parse_chunk(v.payload);
    if (!chunk) {
      ++chunks_unparsed_;
      return;
    }
    (void)stages_.on_chunk(v.stage->stage_id, p.contributor, v.stage->count, *chunk, arrival);
    poll_stage(arrival, false);
  }

  // `judge_deadline` false (after a chunk): only completion may close the stage
  // (relay_stage_control.hpp).
  void poll_stage(std::uint64_t now, bool judge_deadline) {
    if (!running_) return;
    stages_.poll(now, judge_deadline, aggregate_.average(), aggregate_.chunk_contributors(),
                 [this](const ClosedStage& r, std::uint64_t t) {
                   close_stage(r, t);
                   return running_;
                 });
  }

  void on_deadline_timer() {
    if (!running_) return;
    const std::uint64_t now = clock_.now_us();
    if (stages_.timer_fired(now)) poll_stage(now, true);
  }

  void close_stage(const ClosedStage& r, std::uint64_t now) {
    stages_.reset_grace();
    const std::uint32_t s = r.stage;
    stage_ = s + 1;
    ++stats_.stages;
    const std::uint32_t live = live_;
    aggregate_.encode(s, live, o_.discard == core::DiscardPolicy::kPriority);

    DdlRelayStageRow row;
    row.stage = s;
    row.reason = static_cast<std::uint8_t>(r.reason);
    row.period_us = static_cast<double>(r.period_us());
    row.deadline_us = r.deadline_budget_us;
    row.received = r.received;
    row.expected = r.expected;
    row.lost = r.lost;
    row.missing = r.missing;
    row.chunks_full = r.chunks_full;
    row.chunks_partial = r.chunks_partial;
    row.chunks_empty = r.chunks_empty;
    row.contributors = static_cast<std::uint16_t>(live);
    row.closed_us = now;
    const auto peers = members_.peers();
    row.peers.resize(peers.size());

    StageSend send;
    send.report = &r;
    send.packets = aggregate_.packets();
    send.importance = aggregate_.importance();
    send.live = live;
    send.control_ssrc = control_ssrc_;
    send.paced = o_.paced;
    send.now = now;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      if (!peers[i] || peers[i]->gone) {
        row.peers[i].rank = static_cast<std::uint16_t>(i);
        continue;
      }
      RelayPeer& p = *peers[i];
      for_peer(p, [&] {
        open_report_record(p, s, o_.report_timeout_stages, stats_, listener_);
        row.peers[i] = send_stage(p, send, *control_, *socket_);
        note_stage_liveness(p, r.contributors[p.contributor]);
      });
    }
    if (o_.paced) {
      pace_queue_.clear();
      pump_pacing(now, true);
    }
    to_listener([&](DdlRelayListener& l) { l.on_stage(row); });

    // Reports that did not come in time.
    for (const auto& p : members_.peers()) {
      if (!p || p->gone) continue;
      for_peer(*p, [&] { settle_missing_reports(*p, s, stats_, listener_); });
    }
    // Workers that went silent (relay_eviction.hpp).
    for (const auto& p : members_.peers()) {
      if (!p) continue;
      auto why = silence_eviction(*p, now, o_.evict_after_stages, o_.evict_min_silence_ms);
      if (!why) continue;
      remove_peer(*p, DdlRelayEvent::Kind::kEvicted, *why, now);
      if (!running_) return;
    }
  }

  // Sends to every peer whose pacer allows it now (`all`: every peer with packets to go, at a
  // stage's close; else those due in pace_queue_), then sleeps until the earliest next one. At a
  // close the peer behind the slowest path goes first: its stage takes longest to drain, and the
  // others' batches (SRTP and sendmmsg of a whole stage each) would delay its first packet.
  void pump_pacing(std::uint64_t now, bool all) {
    const auto peers = members_.peers();
    pace_order_.clear();
    for (std::size_t i = 0; i < peers.size() && pace_order_.size() < pace_order_.capacity(); ++i) {
      pace_order_.push_back(static_cast<std::uint32_t>(i));
    }
    if (all) {
      const auto slowness = [&](std::uint32_t i) {
        const RelayPeer* p = peers[i].get();
        const auto e = p != nullptr ? p->pacer.estimate() : std::nullopt;
        return e ? *e : std::numeric_limits<double>::infinity();
      };
      // std::sort, not stable_sort: it allocates nothing (ties go by rank).
      std::sort(pace_order_.begin(), pace_order_.end(), [&](std::uint32_t a, std::uint32_t b) {
        const double sa = slowness(a), sb = slowness(b);
        return sa < sb || (sa == sb && a < b);
      });
    }
    for (const std::uint32_t key : pace_order_) {
      RelayPeer* p = peers[key].get();
      if (p == nullptr || p->gone || p->pace_next >= p->pace_end) {
        pace_queue_.remove(key);
        continue;
      }
      if (!all && pace_queue_.due(key) > now + kPaceSlackUs) continue;
      std::optional<std::uint64_t> due;
      for_peer(*p, [&] { due = pace_peer(*p, aggregate_.packets(), stage_ - 1, now); });
      if (due) {
        pace_queue_.schedule(key, *due);
      } else {
        pace_queue_.remove(key);
      }
    }
    if (pace_queue_.empty()) {
      pace_timer_->stop();
      return;
    }
    // At least 1 ms ahead: libuv runs a timer due now in the same pass again (a loop that never
    // polls; the streaming server's pacer re-arms the same way).
    const std::uint64_t next = pace_queue_.next_due();
    const std::uint64_t ms = next > now ? std::max<std::uint64_t>(1, (next - now + 999) / 1000) : 1;
    pace_timer_->start(ms);
  }

  void on_pace_timer() {
    if (!running_) return;
    pump_pacing(clock_.now_us(), false);
  }

  void on_housekeeping() {
    if (running_) check_timeouts(clock_.now_us());
  }

  // Workers silent for peer_timeout_ms, joined or waiting (relay_eviction.hpp).
  void check_timeouts(std::uint64_t now) {
    for (const auto& p : members_.peers()) {
      if (!p) continue;
      auto why = timeout_eviction(*p, now, o_.peer_timeout_ms);
      if (!why) continue;
      remove_peer(*p, DdlRelayEvent::Kind::kEvicted, *why, now);
      if (!running_) return;
    }
  }

  // ---- events, counters, the end ----

  void emit_event(DdlRelayEvent::Kind kind, std::uint16_t rank, const net::SocketAddress& peer,
                  std::string text) {
    const char* names[] = {"joined", "refused", "started", "left", "evicted"};
    const auto level =
        kind == DdlRelayEvent::Kind::kRefused || kind == DdlRelayEvent::Kind::kEvicted
            ? core::LogLevel::kWarn
            : core::LogLevel::kInfo;
    if (kind == DdlRelayEvent::Kind::kStarted) {
      core::log(level, kLog, "job started: %s", text.c_str());
    } else if (rank == kAnyRank) {
      core::log(level, kLog, "%s %s: %s", names[static_cast<int>(kind)], peer.to_string().c_str(),
                text.c_str());
    } else {
      core::log(level, kLog, "rank %u (%s) %s: %s", unsigned{rank}, peer.to_string().c_str(),
                names[static_cast<int>(kind)], text.c_str());
    }
    to_listener([&](DdlRelayListener& l) {
      l.on_event(DdlRelayEvent{kind, rank, peer, std::move(text)});
    });
  }

  void refresh_stats() {
    const ReceiverCounters c = stages_.counters();
    stats_.chunks_received = c.received;
    stats_.chunks_late = c.late;
    stats_.chunks_too_early = c.too_early;
    stats_.chunks_duplicate = c.duplicate;
    stats_.chunks_rejected = c.rejected + chunks_unparsed_;
    std::uint64_t auth = 0, drops = 0, sent = 0, discarded = 0;
    for (const auto& p : members_.peers()) {
      if (!p) continue;
      auth += p->rx->stats().srtp_auth_failed + p->rx->stats().srtp_replay;
      drops += p->tx->stats().send_drops;
      sent += p->tx->stats().packets_sent;
      discarded += p->tx->stats().packets_discarded;
    }
    stats_.srtp_failures = control_failures_ + auth;
    stats_.callback_errors = boundary_.total();
    stats_.send_drops = drops;
    stats_.packets_sent = sent;
    stats_.packets_discarded = discarded;
  }

  void close_handles() {
    stages_.stop_timer();
    if (pace_timer_) pace_timer_->stop();
    if (housekeeping_) housekeeping_->stop();
    if (socket_) socket_->close();
  }

  void finish(const core::Status& st) {
    if (!running_) return;
    running_ = false;
    refresh_stats();
    close_handles();
    to_listener([&](DdlRelayListener& l) { l.on_finished(st); });
  }

  net::EventLoop& loop_;
  const net::Clock& clock_;
  DdlRelayOptions o_;
  DdlRelayListener* listener_;
  std::uint32_t control_ssrc_;
  std::uint64_t job_nonce_;  // fresh per relay: binds every join to this job
  RelayPeerSettings peer_settings_;
  bool running_ = false;
  bool started_ = false;

  std::unique_ptr<net::UdpEndpoint> socket_;
  std::unique_ptr<net::Timer> pace_timer_, housekeeping_;
  core::DeadlineQueue pace_queue_;         // per peer index: when its pacer allows its next packet
  std::vector<std::uint32_t> pace_order_;  // peer indices in sending order (reserved: workers)
  std::unique_ptr<ControlChannel> control_;
  bool auth_warned_ = false;
  std::uint64_t last_auth_warning_us_ = 0;
  std::uint64_t control_failures_ = 0;

  RelayMembership members_;
  RelayStageControl stages_;
  RelayAggregate aggregate_;
  std::uint32_t live_ = 0;
  std::uint32_t completed_ = 0;
  std::uint32_t stage_ = 0;
  std::uint64_t chunks_unparsed_ = 0;

  DdlRelayStats stats_;
  net::CallbackGuard boundary_{kLog};
  RelayPeer* blame_ = nullptr;  // the peer being worked on (see guarded())
};

DdlRelay::DdlRelay(net::EventLoop& loop, const net::Clock& clock, DdlRelayOptions options,
                   DdlRelayListener* listener)
    : impl_(std::make_unique<Impl>(loop, clock, std::move(options), listener)) {}

DdlRelay::~DdlRelay() = default;

core::Status DdlRelay::start() {
  return impl_->start();
}

void DdlRelay::stop(const std::string& reason) {
  impl_->stop(reason);
}

net::SocketAddress DdlRelay::local_address() const {
  return impl_->local_address();
}

const DdlRelayStats& DdlRelay::stats() const {
  return impl_->current_stats();
}

void DdlRelay::poll() {
  impl_->poll();
}

void DdlRelay::inject_datagram(std::span<const std::uint8_t> datagram,
                               const net::SocketAddress& from) {
  impl_->inject(datagram, from);
}

std::uint64_t DdlRelay::job_nonce() const {
  return impl_->job_nonce();
}

}  // namespace predrop::ddl

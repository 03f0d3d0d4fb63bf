// DDL mode of predrop-server: the relay (ddl_relay.hpp) and run_ddl_mode(), which builds it from
// the configuration. Wire formats and decisions: docs/ddl-mode.md.
#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "predrop/chain/feedback.hpp"
#include "predrop/chain/stage_receiver.hpp"
#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/config/config.hpp"
#include "predrop/core/log.hpp"
#include "predrop/ddl/chunk.hpp"
#include "predrop/ddl/importance.hpp"
#include "predrop/ddl/relay.hpp"
#include "predrop/ddl/stage_receiver.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"

namespace predrop::ddl {

namespace {

constexpr const char* kLog = "ddl-relay";
constexpr std::size_t kPaceBatch = net::UdpEndpoint::kMaxSendBatch;
constexpr std::size_t kPlanRing = 64;  // per-peer record of recent stages, for late reports
constexpr std::uint8_t kPayloadType = 96;
constexpr std::uint64_t kHousekeepingMs = 250;

std::uint32_t random_u32() {
  std::random_device rd;
  std::uint32_t v = 0;
  while (v == 0)
    v = rd();
  return v;
}

ddl::DeadlineConfig deadline_config(std::optional<std::uint32_t> ms) {
  if (!ms) {
    ddl::DeadlineConfig c;
    c.min_deadline_us = ddl::kAdaptiveDeadlineFloorUs;
    return c;
  }
  return ddl::DeadlineConfig::fixed(std::uint64_t{*ms} * 1000);
}

}  // namespace

class DdlRelay::Impl {
 public:
  Impl(net::EventLoop& loop, DdlRelayOptions o, DdlRelayListener* listener)
      : loop_(loop), o_(std::move(o)), listener_(listener), control_ssrc_(random_u32()) {
    if (o_.workers < 1 || o_.workers > 4096) {
      throw std::invalid_argument("ddl relay: workers must be 1 .. 4096");
    }
    if (o_.chunk_elements == 0) throw std::invalid_argument("ddl relay: chunk_elements is 0");
    if (auto c = core::make_rate_controller(o_.policy); !c) {
      throw std::invalid_argument("ddl relay: " + c.error().message);
    }
    peers_.resize(o_.workers);
  }

  ~Impl() { close_handles(); }

  core::Status start() {
    if (o_.key.suite) {
      control_out_.emplace(net::SrtpDirection::Outbound, *o_.key.suite, o_.key.key);
      control_in_.emplace(net::SrtpDirection::Inbound, *o_.key.suite, o_.key.key);
    }
    net::UdpOptions uo;
    uo.recv_buffer_bytes = o_.socket_buffer_bytes;
    uo.send_buffer_bytes = o_.socket_buffer_bytes;
    auto sock = net::UdpEndpoint::open(
        loop_, o_.listen, uo,
        [this](std::span<const std::uint8_t> d, const net::SocketAddress& from, std::uint64_t t) {
          on_datagram(d, from, t);
        });
    if (!sock) {
      return core::make_error("cannot listen on " + o_.listen.to_string() + ": " +
                              sock.error().message);
    }
    socket_ = std::move(sock.value());
    deadline_timer_ = std::make_unique<net::Timer>(loop_, [this] { on_deadline_timer(); });
    pace_timer_ = std::make_unique<net::Timer>(loop_, [this] { on_pace_timer(); });
    housekeeping_ = std::make_unique<net::Timer>(loop_, [this] { on_housekeeping(); });
    housekeeping_->start(kHousekeepingMs, kHousekeepingMs);
    running_ = true;
    return core::Ok{};
  }

  void stop(const std::string& reason) {
    if (!running_) return;
    for (auto& p : peers_) {
      if (p && !p->gone) send_answer(*p, ddl::JoinStatus::kRemoved, reason);
    }
    finish(core::make_error("stopped: " + reason));
  }

  net::SocketAddress local_address() const {
    return socket_ ? socket_->local_address() : net::SocketAddress{};
  }
  const DdlRelayStats& stats() const { return stats_; }

 private:
  // What the relay sent one worker in one stage, kept until its report comes or is missing.
  struct PlanRecord {
    std::uint32_t stage = 0;
    bool used = false;
    bool settled = false;  // reported or declared missing
    double rate = 0.0;
    std::uint32_t planned = 0, discarded = 0, sent = 0;
  };

  struct Peer {
    std::uint16_t rank = 0;
    net::SocketAddress address;
    std::uint32_t ssrc = 0;           // the worker's SSRC (its RTP and RTCP)
    std::uint32_t downlink_ssrc = 0;  // the relay's RTP SSRC towards it
    bool gone = false;                // left or evicted
    std::uint32_t contributor = 0;    // index in the current ddl::StageReceiver
    bool heard_since_close = false;
    std::uint32_t missed_stages = 0;
    std::uint64_t last_heard_us = 0;
    std::unique_ptr<chain::StageReceiver> rx;
    std::unique_ptr<chain::StageTransmitter> tx;
    std::unique_ptr<core::RateController> controller;
    std::array<PlanRecord, kPlanRing> plans{};
    std::uint32_t oldest_unsettled = 0;
    std::array<core::StageMeasurement, 4> metered{};
    std::size_t pace_next = 0;
    std::size_t pace_end = 0;
  };

  // ---- datagrams ----

  void on_datagram(std::span<const std::uint8_t> data, const net::SocketAddress& from,
                   std::uint64_t t) {
    if (!running_) return;
    if (wire::looks_like_rtcp(data)) {
      on_control(data, from, t);
      return;
    }
    const auto it = by_address_.find(from);
    if (it == by_address_.end()) {
      ++stats_.foreign_datagrams;
      return;
    }
    Peer& p = *peers_[it->second];
    if (p.gone || !started_) return;
    p.rx->on_datagram(data, t);
  }

  void on_control(std::span<const std::uint8_t> data, const net::SocketAddress& from,
                  std::uint64_t t) {
    if (data.size() > control_buf_.size() - net::kSrtpMaxTrailer) return;
    std::copy(data.begin(), data.end(), control_buf_.begin());
    auto m = ddl::decode_control(control_buf_, data.size(), control_in_ ? &*control_in_ : nullptr);
    if (!m) {
      ++control_failures_;
      if (t - last_auth_warning_us_ > 5'000'000) {
        last_auth_warning_us_ = t;
        core::log(core::LogLevel::kWarn, kLog,
                  "control datagram from %s rejected: %s (another job key or SRTP suite?)",
                  from.to_string().c_str(), m.error().message.c_str());
      }
      return;
    }
    const auto it = by_address_.find(from);
    Peer* peer = it == by_address_.end() ? nullptr : peers_[it->second].get();
    if (m->join) {
      on_join(*m->join, m->sender_ssrc, from, t, peer);
      return;
    }
    if (peer == nullptr || peer->gone) return;
    peer->last_heard_us = t;
    peer->heard_since_close = true;
    if (m->feedback) on_peer_report(*peer, *m->feedback);
    if (m->bye) remove_peer(*peer, DdlRelayEvent::Kind::kLeft, "left the job (BYE)", t);
  }

  // ---- membership ----

  void on_join(const ddl::JoinRequest& j, std::uint32_t ssrc, const net::SocketAddress& from,
               std::uint64_t now, Peer* known) {
    if (known != nullptr) {
      if (known->gone) {
        refuse(from, "this worker was removed from the job; it cannot rejoin");
        return;
      }
      // A retry or keep-alive: answer again (the first answer may have been lost).
      known->last_heard_us = now;
      send_answer(*known, started_ ? ddl::JoinStatus::kStart : ddl::JoinStatus::kWaiting, {});
      return;
    }
    if (started_) {
      refuse(from, "the job is already running (stage " + std::to_string(stage_) +
                       "); late joiners are not admitted: start every worker before the job "
                       "begins");
      return;
    }
    if (joined_ >= o_.workers) {
      refuse(from, "the job is full (" + std::to_string(o_.workers) + " workers)");
      return;
    }
    std::uint16_t rank = j.rank;
    if (rank == ddl::kAnyRank) {
      rank = 0;
      while (rank < o_.workers && peers_[rank])
        ++rank;
    } else if (rank >= o_.workers) {
      refuse(from, "rank " + std::to_string(rank) + " is out of range: the job has " +
                       std::to_string(o_.workers) + " workers (ranks 0.." +
                       std::to_string(o_.workers - 1) + ")");
      return;
    } else if (peers_[rank]) {
      refuse(from,
             "rank " + std::to_string(rank) + " is taken by " + peers_[rank]->address.to_string());
      return;
    }
    if (tensor_elements_ != 0 && j.tensor_elements != tensor_elements_) {
      refuse(from, "the worker's model has " + std::to_string(j.tensor_elements) +
                       " parameters, the job's has " + std::to_string(tensor_elements_));
      return;
    }
    if (tensor_elements_ != 0 && j.model_seed != model_seed_) {
      refuse(from, "the worker's model seed " + std::to_string(j.model_seed) +
                       " differs from the job's " + std::to_string(model_seed_) +
                       ": every worker must start from the same model");
      return;
    }
    if (ssrc == control_ssrc_ || ssrc_in_use(ssrc)) {
      refuse(from, "SSRC collision; restart the worker");
      return;
    }
    if (tensor_elements_ == 0) {
      auto plan = ddl::chunk_tensor(j.tensor_elements, o_.chunk_elements);
      if (!plan) {
        refuse(from, "cannot cut the worker's tensor into chunks: " + plan.error().message);
        return;
      }
      plan_ = *plan;
      tensor_elements_ = j.tensor_elements;
      model_seed_ = j.model_seed;
    }
    auto peer = make_peer(rank, ssrc, from, now);
    by_address_[from] = rank;
    peers_[rank] = std::move(peer);
    ++joined_;
    ++stats_.joined;
    emit_event(DdlRelayEvent::Kind::kJoined, rank, from,
               std::to_string(joined_) + " of " + std::to_string(o_.workers) + " joined");
    if (joined_ == o_.workers) {
      start_job(now);
    } else {
      send_answer(*peers_[rank], ddl::JoinStatus::kWaiting, {});
    }
  }

  bool ssrc_in_use(std::uint32_t ssrc) const {
    for (const auto& p : peers_) {
      if (p && (p->ssrc == ssrc || p->downlink_ssrc == ssrc)) return true;
    }
    return false;
  }

  std::unique_ptr<Peer> make_peer(std::uint16_t rank, std::uint32_t ssrc,
                                  const net::SocketAddress& from, std::uint64_t now) {
    auto p = std::make_unique<Peer>();
    p->rank = rank;
    p->address = from;
    p->ssrc = ssrc;
    do {
      p->downlink_ssrc = random_u32();
    } while (p->downlink_ssrc == control_ssrc_ || p->downlink_ssrc == ssrc ||
             ssrc_in_use(p->downlink_ssrc));
    p->last_heard_us = now;
    Peer* raw = p.get();
    chain::ReceiverConfig rc;
    rc.max_datagram = 2048 + ddl::chunk_payload_size(o_.chunk_elements);
    std::optional<net::SrtpSession> in;
    if (o_.key.suite) in.emplace(net::SrtpDirection::Inbound, *o_.key.suite, o_.key.key);
    p->rx = std::make_unique<chain::StageReceiver>(
        rc, std::move(in),
        [this, raw](const wire::RtpPacketView& v, std::uint64_t arrival) {
          on_chunk_packet(*raw, v, arrival);
        },
        [raw](const core::StageMeasurement& m) { raw->metered[m.stage % 4] = m; });
    chain::TransmitterConfig tc;
    tc.max_payload_size = ddl::chunk_payload_size(o_.chunk_elements);
    tc.tracks.push_back(
        chain::TrackConfig{p->downlink_ssrc, kPayloadType, 0, 0, from, std::nullopt});
    std::optional<net::SrtpSession> out;
    if (o_.key.suite) out.emplace(net::SrtpDirection::Outbound, *o_.key.suite, o_.key.key);
    p->tx = std::make_unique<chain::StageTransmitter>(
        *socket_, tc, std::move(out), core::DiscardPlanner(o_.discard, o_.discard_seed + rank));
    p->controller = std::move(core::make_rate_controller(o_.policy).value());
    return p;
  }

  void refuse(const net::SocketAddress& to, const std::string& reason) {
    ++stats_.refused;
    ddl::ControlMessage m;
    m.sender_ssrc = control_ssrc_;
    ddl::JoinAnswer a = job_answer();
    a.status = ddl::JoinStatus::kRefused;
    a.set_reason(reason);
    m.answer = a;
    send_control(m, to);
    emit_event(DdlRelayEvent::Kind::kRefused, ddl::kAnyRank, to, reason);
  }

  ddl::JoinAnswer job_answer() const {
    ddl::JoinAnswer a;
    a.workers = static_cast<std::uint16_t>(o_.workers);
    a.joined = static_cast<std::uint16_t>(joined_);
    a.start_stage = 0;
    a.chunk_elements = o_.chunk_elements;
    a.missing_fill = o_.missing_fill == ddl::MissingPolicy::kOwn ? 1 : 0;
    a.egress_discard = o_.worker_egress_discard;
    a.paced = o_.paced;
    a.stage_deadline_ms = o_.stage_deadline_ms.value_or(0);
    return a;
  }

  void send_answer(const Peer& p, ddl::JoinStatus status, const std::string& reason) {
    ddl::ControlMessage m;
    m.sender_ssrc = control_ssrc_;
    ddl::JoinAnswer a = job_answer();
    a.status = status;
    a.rank = p.rank;
    a.downlink_ssrc = p.downlink_ssrc;
    a.set_reason(reason);
    m.answer = a;
    send_control(m, p.address);
  }

  void send_control(const ddl::ControlMessage& m, const net::SocketAddress& to) {
    if (!socket_) return;
    auto n = ddl::encode_control(control_buf_, m, control_out_ ? &*control_out_ : nullptr);
    if (!n) return;
    socket_->send(std::span<const std::uint8_t>(control_buf_.data(), *n), to);
  }

  void start_job(std::uint64_t now) {
    started_ = true;
    stage_ = 0;
    average_.assign(plan_.total_elements(), 0.0f);
    chunk_contributors_.assign(plan_.size(), 0);
    importance_full_.assign(plan_.size(), 0);
    importance_.assign(plan_.size(), 0);
    payload_size_ = ddl::chunk_payload_size(plan_.chunk_elements());
    down_payloads_.assign(payload_size_ * plan_.size(), 0);
    down_packets_.resize(plan_.size());
    rebuild_receiver(0);
    for (auto& p : peers_) {
      if (p) send_answer(*p, ddl::JoinStatus::kStart, {});
    }
    emit_event(DdlRelayEvent::Kind::kStarted, ddl::kAnyRank, {},
               std::to_string(o_.workers) + " workers, " + std::to_string(plan_.size()) +
                   " chunks of " + std::to_string(plan_.chunk_elements()) + " values per stage");
    (void)now;
  }

  // A new ddl::StageReceiver over the live workers, collecting from stage `stage` on. Called at
  // the start and whenever a worker is removed, so that completion never waits for the gone.
  void rebuild_receiver(std::uint32_t stage) {
    if (rx_) accumulate_counters();
    std::uint32_t live = 0;
    for (auto& p : peers_) {
      if (p && !p->gone) p->contributor = live++;
    }
    live_ = live;
    if (live == 0) {
      rx_.reset();
      return;
    }
    rx_ = std::make_unique<ddl::StageReceiver>(plan_, live, deadline_config(o_.stage_deadline_ms));
    rx_->start(stage);
  }

  void accumulate_counters() {
    const ddl::ReceiverCounters& c = rx_->counters();
    base_counters_.received += c.received;
    base_counters_.late += c.late;
    base_counters_.too_early += c.too_early;
    base_counters_.duplicate += c.duplicate;
    base_counters_.rejected += c.rejected;
  }

  void refresh_stats() {
    stats_.chunks_received = base_counters_.received;
    stats_.chunks_late = base_counters_.late;
    stats_.chunks_too_early = base_counters_.too_early;
    stats_.chunks_duplicate = base_counters_.duplicate;
    stats_.chunks_rejected = base_counters_.rejected + chunks_unparsed_;
    if (rx_) {
      const ddl::ReceiverCounters& c = rx_->counters();
      stats_.chunks_received += c.received;
      stats_.chunks_late += c.late;
      stats_.chunks_too_early += c.too_early;
      stats_.chunks_duplicate += c.duplicate;
      stats_.chunks_rejected += c.rejected;
    }
    std::uint64_t auth = 0, drops = 0, sent = 0, discarded = 0;
    for (const auto& p : peers_) {
      if (!p) continue;
      auth += p->rx->stats().srtp_auth_failed + p->rx->stats().srtp_replay;
      drops += p->tx->stats().send_drops;
      sent += p->tx->stats().packets_sent;
      discarded += p->tx->stats().packets_discarded;
    }
    stats_.srtp_failures = control_auth_failures() + auth;
    stats_.send_drops = drops;
    stats_.packets_sent = sent;
    stats_.packets_discarded = discarded;
  }

  std::uint64_t control_auth_failures() const { return control_failures_; }

  void remove_peer(Peer& p, DdlRelayEvent::Kind kind, const std::string& why, std::uint64_t now) {
    if (p.gone) return;
    if (kind == DdlRelayEvent::Kind::kEvicted) {
      send_answer(p, ddl::JoinStatus::kRemoved, "evicted: " + why);
      ++stats_.evicted;
    } else {
      ++stats_.left;
      if (kind == DdlRelayEvent::Kind::kLeft) ++completed_;
    }
    p.gone = true;
    p.pace_next = p.pace_end = 0;
    emit_event(kind, p.rank, p.address, why);
    if (!started_) {
      // Before the start a leaving worker frees its rank.
      by_address_.erase(p.address);
      const std::uint16_t rank = p.rank;
      --joined_;
      peers_[rank].reset();
      return;
    }
    // Keep collecting the current stage from the others; what this worker sent of it is lost.
    const std::uint32_t current = rx_ && rx_->current_stage() ? *rx_->current_stage() : stage_;
    rebuild_receiver(current);
    if (live_ == 0) {
      finish(completed_ > 0 ? core::Status(core::Ok{})
                            : core::make_error("every worker is gone (" +
                                               std::to_string(stats_.evicted) + " evicted)"));
      return;
    }
    poll_stage(now);
  }

  // ---- stages ----

  void on_chunk_packet(Peer& p, const wire::RtpPacketView& v, std::uint64_t arrival) {
    p.last_heard_us = arrival;
    p.heard_since_close = true;
    if (!v.stage || !rx_ || p.gone) return;
    auto chunk = ddl::parse_chunk(v.payload);
    if (!chunk) {
      ++chunks_unparsed_;
      return;
    }
    (void)rx_->on_chunk(v.stage->stage_id, p.contributor, v.stage->count, *chunk, arrival);
    poll_stage(arrival);
  }

  // `judge_deadline` false (after a chunk): only completion may close the stage. A chunk's
  // arrival time is when this thread read it; after a preemption the rest of the stage may be
  // queued on the socket, so deadlines are judged by the timer after one more I/O pass.
  void poll_stage(std::uint64_t now, bool judge_deadline = false) {
    while (running_ && rx_) {
      std::uint64_t t = now;
      if (!judge_deadline) {
        if (const auto at = rx_->deadline_at_us(); at && t >= *at) t = *at - 1;
      }
      auto r = rx_->poll(t, average_, chunk_contributors_);
      if (!r) break;
      close_stage(*r, now);
    }
    arm_deadline(now);
  }

  void arm_deadline(std::uint64_t now) {
    if (!running_ || !rx_) return;
    const auto at = rx_->deadline_at_us();
    if (!at) {
      deadline_timer_->stop();
      armed_at_ = 0;
      return;
    }
    if (*at == armed_at_ && deadline_timer_->is_active()) return;
    armed_at_ = *at;
    deadline_timer_->start(*at > now ? (*at - now + 999) / 1000 : 0);
  }

  void on_deadline_timer() {
    armed_at_ = 0;
    if (!running_ || !rx_) return;
    const std::uint64_t now = net::monotonic_now_us();
    const auto at = rx_->deadline_at_us();
    if (at && now >= *at && !grace_given_) {
      // libuv runs timers before polling I/O: re-arm for 1 ms so that what is already queued on
      // the socket is read before the deadline is judged.
      grace_given_ = true;
      armed_at_ = *at;
      deadline_timer_->start(1);
      return;
    }
    grace_given_ = false;
    poll_stage(now, true);
  }

  void close_stage(const ddl::StageReport& r, std::uint64_t now) {
    grace_given_ = false;
    const std::uint32_t s = r.stage;
    stage_ = s + 1;
    ++stats_.stages;
    const std::uint32_t live = live_;

    // The aggregate, encoded once and shared by every worker's egress: only chunks some worker
    // contributed, PARTIAL when fewer than all did.
    if (o_.discard == core::DiscardPolicy::kPriority) {
      ddl::tensor_importance(average_, plan_, importance_full_);
    }
    std::size_t k = 0;
    for (std::size_t c = 0; c < plan_.size(); ++c) {
      const std::uint16_t n = chunk_contributors_[c];
      if (n == 0) continue;
      const ddl::ChunkRange range = plan_[c];
      const std::uint16_t flags = n < live ? ddl::kChunkFlagPartial : 0;
      const std::span<std::uint8_t> slot(down_payloads_.data() + k * payload_size_, payload_size_);
      auto len = ddl::encode_chunk(
          {flags, 0, range.count, plan_.total_elements(), range.offset},
          std::span<const float>(average_).subspan(range.offset, range.count), slot);
      down_packets_[k] = chain::OutgoingPacket{0, false, s, slot.first(len ? *len : 0)};
      importance_[k] = importance_full_[c];
      ++k;
    }
    if (k > 0) down_packets_[k - 1].marker = true;
    packets_in_stage_ = k;

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
    row.peers.resize(peers_.size());

    const auto importance = std::span<const std::uint8_t>(importance_).first(k);
    for (auto& pp : peers_) {
      if (!pp || pp->gone) continue;
      Peer& p = *pp;
      const ddl::ContributorReport& c = r.contributors[p.contributor];
      const double rate = p.controller->rate();
      const chain::StagePlan plan = p.tx->begin_stage(s, rate, importance);
      PlanRecord& rec = p.plans[s % kPlanRing];
      rec = PlanRecord{s,
                       true,
                       false,
                       rate,
                       static_cast<std::uint32_t>(plan.packets),
                       static_cast<std::uint32_t>(plan.discarded),
                       0};
      // Stage closed + the relay's report on this worker's uplink, before the aggregate itself.
      core::StageMeasurement m;
      m.stage = s;
      m.first_arrival_us = c.first_us;
      m.last_arrival_us = c.last_us;
      m.reception_period_us = static_cast<double>(c.period_us());
      m.received = c.received;
      m.announced = c.announced;
      const core::StageMeasurement& metered = p.metered[s % 4];
      if (metered.stage == s && metered.received != 0) m.queue_delay_us = metered.queue_delay_us;
      ddl::ControlMessage msg;
      msg.sender_ssrc = control_ssrc_;
      msg.feedback = chain::make_feedback(m, std::numeric_limits<double>::quiet_NaN(),
                                          wire::PdfbMetric::kLossDelta, p.ssrc);
      msg.stage_closed = ddl::StageClosed{s, static_cast<std::uint8_t>(r.reason),
                                          static_cast<std::uint16_t>(plan.to_send),
                                          static_cast<std::uint16_t>(live)};
      send_control(msg, p.address);
      if (o_.paced) {
        p.pace_next = 0;
        p.pace_end = k;
      } else {
        rec.sent =
            static_cast<std::uint32_t>(p.tx->send(std::span(down_packets_).first(k), 0, now));
      }
      DdlRelayPeerStage& ps = row.peers[p.rank];
      ps.rank = p.rank;
      ps.live = true;
      ps.rate = rate;
      ps.planned = rec.planned;
      ps.discarded = rec.discarded;
      ps.sent = o_.paced ? static_cast<std::uint32_t>(plan.to_send) : rec.sent;
      ps.up_received = c.received;
      ps.up_announced = c.announced;
      ps.up_period_us = static_cast<double>(c.period_us());
      // Liveness: a worker that sent nothing at all since the last close missed this stage.
      if (p.heard_since_close || c.received > 0) {
        p.missed_stages = 0;
      } else {
        ++p.missed_stages;
      }
      p.heard_since_close = false;
    }
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      if (!peers_[i] || peers_[i]->gone) row.peers[i].rank = static_cast<std::uint16_t>(i);
    }
    if (o_.paced) {
      on_pace_timer();
      if (pace_pending()) pace_timer_->start(1, 1);
    }
    if (listener_ != nullptr) listener_->on_stage(row);

    // Reports that did not come in time.
    for (auto& pp : peers_) {
      if (!pp || pp->gone) continue;
      settle_missing(*pp, s);
    }
    // Workers that went silent: for some stages *and* for some time, because with stages of a
    // few ms a worker busy for a moment (a test evaluation, a preemption) misses several.
    for (auto& pp : peers_) {
      if (!pp || pp->gone || pp->missed_stages < o_.evict_after_stages) continue;
      const std::uint64_t silent = now > pp->last_heard_us ? now - pp->last_heard_us : 0;
      if (silent < std::uint64_t{o_.evict_min_silence_ms} * 1000) continue;
      remove_peer(*pp, DdlRelayEvent::Kind::kEvicted,
                  "nothing received from it for " + std::to_string(pp->missed_stages) +
                      " stages (" + std::to_string(silent / 1000) + " ms)",
                  now);
      if (!running_) return;
    }
  }

  bool pace_pending() const {
    for (const auto& p : peers_) {
      if (p && !p->gone && p->pace_next < p->pace_end) return true;
    }
    return false;
  }

  void on_pace_timer() {
    if (!running_) return;
    const std::uint64_t now = net::monotonic_now_us();
    // One batch per worker per tick, interleaved, so that no worker waits for the others.
    for (auto& pp : peers_) {
      if (!pp || pp->gone || pp->pace_next >= pp->pace_end) continue;
      Peer& p = *pp;
      const std::size_t n = std::min(kPaceBatch, p.pace_end - p.pace_next);
      const std::size_t sent =
          p.tx->send(std::span(down_packets_).subspan(p.pace_next, n), p.pace_next, now);
      PlanRecord& rec = p.plans[(stage_ - 1) % kPlanRing];
      rec.sent += static_cast<std::uint32_t>(sent);
      p.pace_next += n;
    }
    if (!pace_pending()) pace_timer_->stop();
  }

  void on_peer_report(Peer& p, const wire::PdfbFeedback& fb) {
    const std::uint32_t s = fb.stage_id;
    PlanRecord& rec = p.plans[s % kPlanRing];
    core::StageReport report = chain::to_stage_report(fb);
    if (rec.used && rec.stage == s) report.rate_used = rec.rate;
    auto d = p.controller->on_report(report);
    if (!d) {
      ++stats_.reports_rejected;
      return;
    }
    if (d->kind == core::DecisionKind::kStale) return;
    ++stats_.reports;
    if (rec.used && rec.stage == s) rec.settled = true;
    if (listener_ != nullptr) {
      DdlRelayReportRow row;
      row.stage = s;
      row.rank = p.rank;
      row.reported = true;
      row.report = report;
      row.decision = *d;
      row.next_rate = p.controller->rate();
      row.planned = rec.planned;
      row.discarded = rec.discarded;
      row.sent = rec.sent;
      listener_->on_report(row);
    }
  }

  // Declares missing every report of a stage at least report_timeout_stages before `closed`.
  void settle_missing(Peer& p, std::uint32_t closed) {
    if (closed < o_.report_timeout_stages) return;
    const std::uint32_t limit = closed - o_.report_timeout_stages;
    while (static_cast<std::int32_t>(limit - p.oldest_unsettled) >= 0) {
      PlanRecord& rec = p.plans[p.oldest_unsettled % kPlanRing];
      if (rec.used && rec.stage == p.oldest_unsettled && !rec.settled) {
        rec.settled = true;
        const core::Decision d = p.controller->on_report_missing(rec.stage);
        ++stats_.reports_missing;
        if (listener_ != nullptr) {
          DdlRelayReportRow row;
          row.stage = rec.stage;
          row.rank = p.rank;
          row.reported = false;
          row.report.stage = rec.stage;
          row.report.rate_used = rec.rate;
          row.decision = d;
          row.next_rate = p.controller->rate();
          row.planned = rec.planned;
          row.discarded = rec.discarded;
          row.sent = rec.sent;
          listener_->on_report(row);
        }
      }
      ++p.oldest_unsettled;
    }
  }

  void on_housekeeping() {
    if (!running_) return;
    const std::uint64_t now = net::monotonic_now_us();
    const std::uint64_t limit = std::uint64_t{o_.peer_timeout_ms} * 1000;
    for (auto& pp : peers_) {
      if (!pp || pp->gone || now - pp->last_heard_us < limit) continue;
      remove_peer(*pp, DdlRelayEvent::Kind::kEvicted,
                  "silent for " + std::to_string(o_.peer_timeout_ms) + " ms", now);
      if (!running_) return;
    }
  }

  void emit_event(DdlRelayEvent::Kind kind, std::uint16_t rank, const net::SocketAddress& peer,
                  std::string text) {
    const char* names[] = {"joined", "refused", "started", "left", "evicted"};
    const auto level =
        kind == DdlRelayEvent::Kind::kRefused || kind == DdlRelayEvent::Kind::kEvicted
            ? core::LogLevel::kWarn
            : core::LogLevel::kInfo;
    if (kind == DdlRelayEvent::Kind::kStarted) {
      core::log(level, kLog, "job started: %s", text.c_str());
    } else if (rank == ddl::kAnyRank) {
      core::log(level, kLog, "%s %s: %s", names[static_cast<int>(kind)], peer.to_string().c_str(),
                text.c_str());
    } else {
      core::log(level, kLog, "rank %u (%s) %s: %s", unsigned{rank}, peer.to_string().c_str(),
                names[static_cast<int>(kind)], text.c_str());
    }
    if (listener_ != nullptr) listener_->on_event(DdlRelayEvent{kind, rank, peer, std::move(text)});
  }

  void close_handles() {
    if (deadline_timer_) deadline_timer_->stop();
    if (pace_timer_) pace_timer_->stop();
    if (housekeeping_) housekeeping_->stop();
    if (socket_) socket_->close();
  }

  void finish(const core::Status& st) {
    if (!running_) return;
    running_ = false;
    refresh_stats();
    close_handles();
    if (listener_ != nullptr) listener_->on_finished(st);
  }

 public:
  const DdlRelayStats& current_stats() {
    refresh_stats();
    return stats_;
  }

 private:
  net::EventLoop& loop_;
  DdlRelayOptions o_;
  DdlRelayListener* listener_;
  std::uint32_t control_ssrc_;
  bool running_ = false;
  bool started_ = false;

  std::unique_ptr<net::UdpEndpoint> socket_;
  std::unique_ptr<net::Timer> deadline_timer_, pace_timer_, housekeeping_;
  std::optional<net::SrtpSession> control_out_, control_in_;
  std::array<std::uint8_t, ddl::kMaxControlDatagram> control_buf_{};
  std::uint64_t last_auth_warning_us_ = 0;
  std::uint64_t control_failures_ = 0;

  std::vector<std::unique_ptr<Peer>> peers_;  // by rank
  std::unordered_map<net::SocketAddress, std::uint16_t> by_address_;
  std::uint32_t joined_ = 0;
  std::uint32_t live_ = 0;
  std::uint32_t completed_ = 0;
  std::uint32_t tensor_elements_ = 0;
  std::uint64_t model_seed_ = 0;

  ddl::ChunkPlan plan_;
  std::unique_ptr<ddl::StageReceiver> rx_;
  ddl::ReceiverCounters base_counters_;
  std::uint64_t chunks_unparsed_ = 0;
  std::uint32_t stage_ = 0;
  std::uint64_t armed_at_ = 0;
  bool grace_given_ = false;
  std::vector<float> average_;
  std::vector<std::uint16_t> chunk_contributors_;
  std::vector<std::uint8_t> importance_full_, importance_;
  std::size_t payload_size_ = 0;
  std::vector<std::uint8_t> down_payloads_;
  std::vector<chain::OutgoingPacket> down_packets_;
  std::size_t packets_in_stage_ = 0;

  DdlRelayStats stats_;
};

DdlRelay::DdlRelay(net::EventLoop& loop, DdlRelayOptions options, DdlRelayListener* listener)
    : impl_(std::make_unique<Impl>(loop, std::move(options), listener)) {}

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

// ---- predrop-server --mode ddl ----

namespace {

// The relay's per-(stage, worker) trace: one row per report (or missing report).
class RelayTrace final : public DdlRelayListener {
 public:
  explicit RelayTrace(std::FILE* csv) : csv_(csv) {
    if (csv_ != nullptr) {
      std::fprintf(csv_,
                   "stage,rank,reported,rate,planned,discarded,sent,L_us,P,received,announced,"
                   "queue_delay_us,decision,next_rate\n");
    }
  }

  void on_stage(const DdlRelayStageRow& row) override {
    std::string rates;
    for (const auto& ps : row.peers) {
      char b[32];
      std::snprintf(b, sizeof b, ps.live ? " %.2f" : " -", ps.rate);
      rates += b;
    }
    core::log(core::LogLevel::kInfo, "ddl-relay",
              "stage %u %s: uplink L %.1f ms, %u/%u chunks, %u partial, %u empty; R [%s ]",
              row.stage,
              row.reason == 0   ? "complete"
              : row.reason == 1 ? "deadline"
                                : "forced",
              row.period_us / 1000.0, row.received, row.expected, row.chunks_partial,
              row.chunks_empty, rates.c_str());
  }

  void on_report(const DdlRelayReportRow& r) override {
    if (csv_ == nullptr) return;
    std::fprintf(csv_, "%u,%u,%d,%.4f,%u,%u,%u,%.0f,%.6g,%u,%u,%s,%s,%.4f\n", r.stage,
                 unsigned{r.rank}, r.reported ? 1 : 0, r.report.rate_used.value_or(0.0), r.planned,
                 r.discarded, r.sent, r.report.reception_period_us, r.report.performance,
                 r.report.packets_received, r.report.packets_announced,
                 r.report.queue_delay_us ? std::to_string(*r.report.queue_delay_us).c_str() : "",
                 std::string(core::to_string(r.decision.kind)).c_str(), r.next_rate);
  }

  void on_finished(const core::Status& st) override {
    status_ = st;
    done_ = true;
  }

  bool done_ = false;
  core::Status status_ = core::Ok{};

 private:
  std::FILE* csv_;
};

}  // namespace

int run_ddl_mode(const config::ServerConfig& config) {
  DdlRelayOptions o;
  auto listen = net::SocketAddress::from_ip(config.ddl.listen.host, config.ddl.listen.port);
  if (!listen && config.ddl.listen.host == "localhost") {
    listen = net::SocketAddress::loopback_v4(config.ddl.listen.port);
  }
  if (!listen) {
    core::log(core::LogLevel::kError, kLog, "ddl.listen: %s", listen.error().message.c_str());
    return 2;
  }
  o.listen = *listen;
  o.workers = config.ddl.workers;
  if (o.workers > config.server.max_sessions) {
    core::log(core::LogLevel::kError, kLog, "ddl.workers (%u) exceeds server.max_sessions (%u)",
              o.workers, config.server.max_sessions);
    return 2;
  }
  o.stage_deadline_ms = config.ddl.stage_deadline_ms;
  o.missing_fill = config.ddl.missing_chunk_fill == config::MissingChunkFill::kOwn
                       ? ddl::MissingPolicy::kOwn
                       : ddl::MissingPolicy::kZero;
  o.chunk_elements = static_cast<std::uint16_t>(config.ddl.chunk_bytes / 4);
  o.worker_egress_discard = config.ddl.worker_egress_discard;
  o.paced = config.ddl.pacing == config::Pacing::kPaced;
  auto policy = config::make_policy_config(config.control);
  if (!policy) {
    core::log(core::LogLevel::kError, kLog, "control: %s", policy.error().message.c_str());
    return 2;
  }
  o.policy = *policy;
  auto discard = core::parse_discard_policy(to_string(config.discard.policy));
  if (!discard) {
    core::log(core::LogLevel::kError, kLog, "discard: %s", discard.error().message.c_str());
    return 2;
  }
  o.discard = *discard;
  o.discard_seed = config.discard.seed;
  o.report_timeout_stages = config.control.report_timeout_stages;
  o.peer_timeout_ms = config.server.session_timeout_s * 1000;

  // The job key: PREDROP_DDL_KEY (an a=crypto line, or base64 of the configured suite), else a
  // fresh one, printed for the workers.
  std::optional<wire::SrtpSuite> suite;
  if (config.server.srtp != config::SrtpSuite::kNone) {
    suite = wire::suite_from_name(to_string(config.server.srtp));
  }
  if (const char* env = std::getenv(ddl::kKeyEnvironment); env != nullptr && *env != '\0') {
    auto key = ddl::parse_job_key(env, suite);
    if (!key) {
      core::log(core::LogLevel::kError, kLog, "%s: %s", ddl::kKeyEnvironment,
                key.error().message.c_str());
      return 2;
    }
    if (key->suite != suite) {
      core::log(core::LogLevel::kError, kLog, "%s is a key for %s but server.srtp is %s",
                ddl::kKeyEnvironment,
                key->suite ? std::string(wire::suite_name(*key->suite)).c_str() : "none",
                std::string(to_string(config.server.srtp)).c_str());
      return 2;
    }
    o.key = *key;
  } else {
    o.key = ddl::generate_job_key(suite);
    std::printf("%s=%s\n", ddl::kKeyEnvironment, ddl::format_job_key(o.key).c_str());
    std::fflush(stdout);
  }

  std::FILE* csv = nullptr;
  if (!config.server.trace_csv.empty()) {
    csv = std::fopen(config.server.trace_csv.c_str(), "w");
    if (csv == nullptr) {
      core::log(core::LogLevel::kError, kLog, "cannot write %s: %s",
                config.server.trace_csv.c_str(), std::strerror(errno));
      return 2;
    }
  }
  RelayTrace trace(csv);
  net::SrtpLibraryGuard srtp_library;
  net::EventLoop loop;
  int code = 0;
  {
    std::unique_ptr<DdlRelay> relay;
    try {
      relay = std::make_unique<DdlRelay>(loop, o, &trace);
    } catch (const std::exception& e) {
      core::log(core::LogLevel::kError, kLog, "%s", e.what());
      if (csv != nullptr) std::fclose(csv);
      return 2;
    }
    if (auto st = relay->start(); !st) {
      core::log(core::LogLevel::kError, kLog, "%s", st.error().message.c_str());
      if (csv != nullptr) std::fclose(csv);
      return 1;
    }
    core::log(
        core::LogLevel::kInfo, kLog,
        "listening on %s for %u workers; SRTP %s, policy %s, discard %s, deadline %s, %s",
        relay->local_address().to_string().c_str(), o.workers,
        std::string(to_string(config.server.srtp)).c_str(), o.policy.policy.c_str(),
        std::string(core::to_string(o.discard)).c_str(),
        o.stage_deadline_ms ? (std::to_string(*o.stage_deadline_ms) + " ms").c_str() : "adaptive",
        o.paced ? "paced" : "burst");
    net::SignalWatcher signals(loop, {SIGINT, SIGTERM}, [&](int signum) {
      core::log(core::LogLevel::kInfo, kLog, "signal %d: ending the job", signum);
      relay->stop("the relay was interrupted");
    });
    signals.keep_loop_alive(false);
    loop.run();
    const DdlRelayStats& s = relay->stats();
    core::log(core::LogLevel::kInfo, kLog,
              "job over after %llu stages: %llu joined, %llu left, %llu evicted, %llu refused; "
              "chunks %llu received, %llu late; %llu reports, %llu missing",
              static_cast<unsigned long long>(s.stages), static_cast<unsigned long long>(s.joined),
              static_cast<unsigned long long>(s.left), static_cast<unsigned long long>(s.evicted),
              static_cast<unsigned long long>(s.refused),
              static_cast<unsigned long long>(s.chunks_received),
              static_cast<unsigned long long>(s.chunks_late),
              static_cast<unsigned long long>(s.reports),
              static_cast<unsigned long long>(s.reports_missing));
    if (!trace.status_) {
      core::log(core::LogLevel::kError, kLog, "%s", trace.status_.error().message.c_str());
      code = 1;
    }
  }
  if (csv != nullptr) std::fclose(csv);
  return code;
}

}  // namespace predrop::ddl

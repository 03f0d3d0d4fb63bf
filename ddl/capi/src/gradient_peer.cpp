// The worker side of the relay protocol for external trainers (gradient_peer.hpp). The join
// follows ddl/train/src/worker.cpp; the stage receive path and the deadline handling are
// ddl::StagePeer, shared with it; docs/ddl-torch.md says what differs.
#include "predrop/ddl/capi/gradient_peer.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "predrop/chain/feedback.hpp"
#include "predrop/chain/stage_receiver.hpp"
#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/core/byte_io.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/core/log.hpp"
#include "predrop/ddl/aggregator.hpp"
#include "predrop/ddl/chunk.hpp"
#include "predrop/ddl/control_channel.hpp"
#include "predrop/ddl/paced_send.hpp"
#include "predrop/ddl/path_pacer.hpp"
#include "predrop/ddl/stage_collector.hpp"
#include "predrop/ddl/stage_peer.hpp"
#include "predrop/net/callback_guard.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"

namespace predrop::ddl::capi {

namespace {

constexpr const char* kLog = "ddl-peer";
// Gradient packets per sendmmsg call.
// A PDJN without an answer is sent again after this long.
constexpr std::uint64_t kJoinRetryUs = 250'000;
// Closed stages whose report (P) may still come.
constexpr std::size_t kReportRing = 16;
// Stages of aggregate the collector keeps ahead of the open one. The relay is no barrier: a
// peer that fell behind (a slow step, a preempted process) finds the aggregates of the stages
// the relay closed without it already here, applies them at once and so catches up, as long as
// it is fewer than this many stages behind.
constexpr std::uint32_t kCollectorWindow = 8;
// Between stages the trainer computes (an evaluation may take seconds) and this peer sends
// nothing, while the others' stages close at their deadline; and a peer that fell behind sends
// only chunks of stages the relay has closed (late, not counted as heard). The relay evicts a
// member not heard for 3 closed stages and 1 s (docs/ddl-mode.md). So a running peer sends an
// authenticated RR (control SSRC only) this often, from its own thread: the relay counts it as
// heard, and only a peer whose process stopped is evicted.
constexpr std::uint64_t kKeepAliveMs = 250;

}  // namespace

class GradientPeer::Impl {
 public:
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;
  Impl(net::EventLoop& loop, const net::Clock& clock, GradientPeerOptions o, OnStart on_start,
       OnStage on_stage, OnDone on_done)
      : loop_(loop),
        clock_(clock),
        o_(o),
        on_start_(std::move(on_start)),
        on_stage_(std::move(on_stage)),
        on_done_(std::move(on_done)),
        ssrc_(ddl::generate_ssrc()),
        worker_nonce_(ddl::generate_nonce()) {
    if (o_.tensor_elements == 0) {
      throw std::invalid_argument("ddl peer: the gradient has no elements");
    }
    gradient_.resize(o_.tensor_elements);
  }

  ~Impl() { close_handles(); }

  core::Status start() {
    if (state_ != State::kIdle) return core::make_error("the peer was already started");
    control_ = std::make_unique<ddl::ControlChannel>(o_.key);
    net::UdpOptions uo;
    uo.recv_buffer_bytes = o_.socket_buffer_bytes;
    uo.send_buffer_bytes = o_.socket_buffer_bytes;
    auto sock = net::UdpEndpoint::open(
        loop_, o_.bind, uo,
        [this](std::span<const std::uint8_t> d, const net::SocketAddress& from,
               std::uint64_t /*recv_time*/) {
          guarded(net::CallbackKind::kUdpReceive, [&] { on_datagram(d, from, clock_.now_us()); });
        });
    if (!sock) {
      return core::make_error("cannot open the peer's UDP socket: " + sock.error().message);
    }
    socket_ = std::move(sock.value());
    socket_->set_gso(o_.gso);
    join_timer_ = std::make_unique<net::Timer>(loop_, [this] {
      guarded(net::CallbackKind::kTimer, [this] { check_join(clock_.now_us()); });
    });
    stage_timer_ = std::make_unique<net::Timer>(loop_, [this] {
      guarded(net::CallbackKind::kTimer, [this] {
        if (stage_open()) check_stage(clock_.now_us(), true);
      });
    });
    pace_timer_ = std::make_unique<net::Timer>(
        loop_, [this] { guarded(net::CallbackKind::kTimer, [this] { on_pace_timer(); }); });
    keepalive_timer_ = std::make_unique<net::Timer>(loop_, [this] {
      guarded(net::CallbackKind::kTimer, [this] {
        if (state_ == State::kRunning) send_keepalive();
      });
    });
    state_ = State::kJoining;
    join_started_us_ = clock_.now_us();
    last_from_relay_us_ = join_started_us_;
    send_join(join_started_us_);
    arm_join_timer(join_started_us_);
    return core::Ok{};
  }

  core::Result<std::uint32_t> submit(std::span<const float> gradient) {
    if (state_ == State::kDone) {
      return core::make_error(end_reason_.empty() ? "the peer has ended" : end_reason_);
    }
    if (state_ != State::kRunning) return core::make_error("the job has not started yet");
    if (stage_open()) {
      return core::make_error("stage " + std::to_string(sp_->stage()) + " is still open");
    }
    if (gradient.size() != gradient_.size()) {
      return core::make_error("the gradient has " + std::to_string(gradient.size()) +
                              " elements, the job's " + std::to_string(gradient_.size()));
    }
    std::copy(gradient.begin(), gradient.end(), gradient_.begin());
    std::uint32_t s = next_stage_;
    guarded(net::CallbackKind::kCall, [&] { begin_stage(s); });
    if (state_ == State::kDone) return core::make_error(end_reason_);
    return s;
  }

  core::Status report(std::uint32_t stage, double performance) {
    if (state_ == State::kDone) return core::make_error(end_reason_);
    ReportEntry& e = reports_[stage % kReportRing];
    if (!e.used || e.stage != stage) {
      return core::make_error("stage " + std::to_string(stage) +
                              " is not a closed stage of the last " + std::to_string(kReportRing));
    }
    if (e.sent) return core::make_error("stage " + std::to_string(stage) + " was already reported");
    e.sent = true;
    // The relay never ran a stage past the job's end; it has no use for its report.
    if (const auto last = sp_->last_stage(); last && static_cast<std::int32_t>(stage - *last) > 0) {
      return core::Ok{};
    }
    ddl::ControlMessage msg;
    msg.sender_ssrc = ssrc_;
    msg.feedback = chain::make_feedback(e.measurement, performance, wire::PdfbMetric::kLossDelta,
                                        downlink_ssrc_);
    guarded(net::CallbackKind::kCall, [&] { send_control(msg); });
    return core::Ok{};
  }

  void close() {
    guarded(net::CallbackKind::kCall, [this] {
      if (state_ == State::kDone) return;
      send_bye();
      finish(core::Ok{}, "closed");
    });
  }

  void poll() {
    guarded(net::CallbackKind::kCall, [this] {
      const std::uint64_t now = clock_.now_us();
      if (state_ == State::kJoining || state_ == State::kWaiting) check_join(now);
      if (state_ == State::kRunning && stage_open()) check_stage(now, false);
    });
  }

  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kIdle, kJoining, kWaiting, kRunning, kDone };

  struct ReportEntry {
    std::uint32_t stage = 0;
    bool used = false;
    bool sent = false;
    core::StageMeasurement measurement;
  };

  // A failure leaves the caller's stage half done, so an exception ends the peer (BYE first, so
  // that the relay removes it at once and the others go on).
  template <class Fn>
  void guarded(net::CallbackKind kind, Fn&& fn) {
    boundary_.run(kind, std::forward<Fn>(fn), [this, kind](const char* what) {
      if (state_ == State::kDone) return;
      send_bye();
      fail(std::string("internal error in a ") + net::to_string(kind) + " callback: " + what);
    });
  }

  // ---- datagrams ----

  void on_datagram(std::span<const std::uint8_t> data, const net::SocketAddress& from,
                   std::uint64_t t) {
    if (state_ == State::kDone || !(from == o_.relay)) return;
    if (wire::looks_like_rtcp(data)) {
      on_control(data, t);
      return;
    }
    if (!rx_) return;
    if (data.size() >= 12 && core::load_u32_be(data.data() + 8) != downlink_ssrc_) return;
    last_from_relay_us_ = t;
    rx_->on_datagram(data, t);
  }

  void on_control(std::span<const std::uint8_t> data, std::uint64_t t) {
    if (!ddl::ControlChannel::fits(data.size())) return;
    auto m = control_->decode(data);
    if (!m) return;
    if (relay_ssrc_ && m->sender_ssrc != *relay_ssrc_) return;
    if (m->answer) {
      if (!on_answer(*m->answer, m->sender_ssrc, t)) return;
      if (state_ == State::kDone) return;
    }
    last_from_relay_us_ = t;
    if (sp_ && state_ == State::kRunning) sp_->heard(t);
    // The relay's report on this peer's uplink (sent with each PDSC): the path's delivery rate.
    if (m->feedback && m->feedback->media_ssrc == ssrc_) {
      (void)up_pacer_.on_report(m->feedback->packets_received, packet_bytes_,
                                m->feedback->reception_period_us);
    }
    if (m->stage_closed) on_stage_closed(*m->stage_closed, t);
    if (m->bye && state_ != State::kDone) fail("the relay ended the job (BYE)");
  }

  // ---- joining ----

  void send_join(std::uint64_t now) {
    last_join_sent_us_ = now;
    ddl::ControlMessage m;
    m.sender_ssrc = ssrc_;
    m.join =
        ddl::JoinRequest{o_.rank, o_.tensor_elements, o_.model_seed, job_nonce_, worker_nonce_};
    send_control(m);
  }

  void send_keepalive() {
    ddl::ControlMessage m;
    m.sender_ssrc = ssrc_;
    send_control(m);
  }

  void send_bye() {
    ddl::ControlMessage m;
    m.sender_ssrc = ssrc_;
    m.bye = true;
    send_control(m);
  }

  void send_control(const ddl::ControlMessage& m) {
    if (socket_ && control_) control_->send(*socket_, m, o_.relay);
  }

  void check_join(std::uint64_t now) {
    if (state_ == State::kJoining && now - join_started_us_ > o_.join_timeout_ms * 1000ULL) {
      fail("no answer from the relay at " + o_.relay.to_string() + " within " +
           std::to_string(o_.join_timeout_ms) +
           " ms: it is not running or not reachable, or it uses another key or SRTP suite");
      return;
    }
    if (state_ == State::kWaiting && now - join_started_us_ > o_.start_timeout_ms * 1000ULL) {
      fail("joined the relay at " + o_.relay.to_string() + ", but the job did not start within " +
           std::to_string(o_.start_timeout_ms) + " ms (the other workers did not join)");
      return;
    }
    if (state_ == State::kWaiting && now - last_from_relay_us_ > o_.relay_silence_ms * 1000ULL) {
      fail("the relay went silent while waiting for the other workers");
      return;
    }
    if (state_ != State::kJoining && state_ != State::kWaiting) return;
    if (now - last_join_sent_us_ >= kJoinRetryUs) send_join(now);
    arm_join_timer(now);
  }

  void arm_join_timer(std::uint64_t now) {
    std::uint64_t due = last_join_sent_us_ + kJoinRetryUs;
    if (state_ == State::kJoining) {
      due = std::min<std::uint64_t>(due, join_started_us_ + o_.join_timeout_ms * 1000ULL + 1);
    } else {
      due = std::min<std::uint64_t>(due, last_from_relay_us_ + o_.relay_silence_ms * 1000ULL + 1);
      due = std::min<std::uint64_t>(due, join_started_us_ + o_.start_timeout_ms * 1000ULL + 1);
    }
    join_timer_->start(due > now ? (due - now + 999) / 1000 : 0);
  }

  // False for an answer that is not to this peer's join in this job (ignored).
  bool on_answer(const ddl::JoinAnswer& a, std::uint32_t relay_ssrc, std::uint64_t now) {
    using ddl::JoinStatus;
    if (a.worker_nonce != worker_nonce_ ||
        (a.status != JoinStatus::kChallenge && (job_nonce_ == 0 || a.job_nonce != job_nonce_))) {
      return false;
    }
    switch (a.status) {
      case JoinStatus::kChallenge:
        if (state_ == State::kJoining) {
          job_nonce_ = a.job_nonce;
          relay_ssrc_ = relay_ssrc;
          send_join(now);
          arm_join_timer(now);
        } else if (state_ == State::kWaiting && a.job_nonce != job_nonce_) {
          fail("the relay at " + o_.relay.to_string() +
               " started another job while this peer waited for the others");
        }
        return true;
      case JoinStatus::kRefused:
        if (state_ == State::kJoining) {
          fail("the relay at " + o_.relay.to_string() +
               " refused to let this peer join: " + std::string(a.reason()));
        }
        return true;
      case JoinStatus::kRemoved:
        fail("removed from the job by the relay: " + std::string(a.reason()));
        return true;
      case JoinStatus::kWaiting:
      case JoinStatus::kStart:
        break;
    }
    if (state_ == State::kJoining) {
      if (auto st = setup_job(a); !st) {
        send_bye();
        fail(st.error().message);
        return true;
      }
      state_ = State::kWaiting;
      core::log(core::LogLevel::kInfo, kLog, "joined %s as rank %u of %u (%u joined)",
                o_.relay.to_string().c_str(), unsigned{a.rank}, unsigned{a.workers},
                unsigned{a.joined});
    }
    if (a.status == JoinStatus::kStart && state_ == State::kWaiting) {
      join_timer_->stop();
      state_ = State::kRunning;
      keepalive_timer_->start(kKeepAliveMs, kKeepAliveMs);
      next_stage_ = a.start_stage;
      job_.start_stage = a.start_stage;
      if (o_.stages != 0) sp_->set_last_stage(a.start_stage + o_.stages - 1);
      if (on_start_) on_start_(job_);
    }
    return true;
  }

  core::Status setup_job(const ddl::JoinAnswer& a) {
    if (a.workers == 0 || a.rank >= a.workers) {
      return core::make_error("the relay sent an invalid rank " + std::to_string(a.rank) + " of " +
                              std::to_string(a.workers));
    }
    if (a.egress_discard) {
      return core::make_error(
          "the relay's job asks for worker egress pre-discard (ddl.worker_egress_discard = "
          "true), which this peer does not implement; set it to false for torch jobs");
    }
    auto plan = ddl::chunk_tensor(o_.tensor_elements, a.chunk_elements);
    if (!plan) return core::make_error("the relay's chunk size: " + plan.error().message);
    plan_ = *plan;
    downlink_ssrc_ = a.downlink_ssrc;
    paced_ = a.paced;
    fill_ = a.missing_fill == 1 ? ddl::MissingPolicy::kOwn : ddl::MissingPolicy::kZero;
    job_.rank = a.rank;
    job_.workers = a.workers;
    job_.chunk_elements = a.chunk_elements;
    job_.chunks = static_cast<std::uint32_t>(plan_.size());
    job_.fill_own = fill_ == ddl::MissingPolicy::kOwn;
    job_.stage_deadline_ms = a.stage_deadline_ms;

    chain::ReceiverConfig rc;
    rc.max_datagram = 2048;
    std::optional<net::SrtpSession> in;
    if (o_.key.suite) in.emplace(net::SrtpDirection::Inbound, *o_.key.suite, o_.key.key);
    rx_ = std::make_unique<chain::StageReceiver>(
        rc, std::move(in),
        [this](const wire::RtpPacketView& v, std::uint64_t arrival) {
          on_aggregate_packet(v, arrival);
        },
        [this](const core::StageMeasurement& m) { measurements_[m.stage % 4] = m; });
    sp_ = std::make_unique<ddl::StagePeer>(
        plan_, ddl::StagePeerConfig{a.stage_deadline_ms, kCollectorWindow,
                                    std::uint64_t{o_.relay_silence_ms} * 1000,
                                    std::uint64_t{o_.idle_close_ms} * 1000});

    payload_size_ = ddl::chunk_payload_size(plan_.chunk_elements());
    packet_bytes_ = payload_size_ + ddl::kChunkPacketOverheadBytes;
    up_payloads_.assign(payload_size_ * plan_.size(), 0);
    up_packets_.resize(plan_.size());
    chain::TransmitterConfig tc;
    tc.max_payload_size = payload_size_;
    tc.tracks.push_back(
        chain::TrackConfig{ssrc_, ddl::kChunkPayloadType, 0, 0, o_.relay, std::nullopt});
    std::optional<net::SrtpSession> out;
    if (o_.key.suite) out.emplace(net::SrtpDirection::Outbound, *o_.key.suite, o_.key.key);
    tx_ = std::make_unique<chain::StageTransmitter>(
        *socket_, tc, std::move(out), core::DiscardPlanner(core::DiscardPolicy::kPriority, 1));
    return core::Ok{};
  }

  // ---- one stage ----

  bool stage_open() const { return sp_ && sp_->open(); }

  void begin_stage(std::uint32_t s) {
    // A peer that fell further behind than the collector's window skips to the relay's current
    // stage (ddl::StagePeer; its model misses the skipped stages' updates, as with chunks lost
    // under zero fill).
    const std::uint32_t opened = sp_->begin(s, clock_.now_us());
    if (sp_->skipped() != 0) {
      core::log(core::LogLevel::kWarn, kLog,
                "stage %u: %u stages behind the relay (it closed stage %u); skipping to %u", s,
                sp_->skipped(), opened - 1, opened);
    }
    s = opened;
    if (sp_->ended()) {
      // The job is over for everyone else: nothing to send, nothing to wait for.
      if (!warned_ended_) {
        warned_ended_ = true;
        core::log(core::LogLevel::kWarn, kLog,
                  "stage %u is past the job's last stage %u: closed at once, nothing received", s,
                  *sp_->last_stage());
      }
      after_io(clock_.now_us());
      return;
    }
    for (std::size_t c = 0; c < plan_.size(); ++c) {
      const ddl::ChunkRange r = plan_[c];
      const std::span<std::uint8_t> slot(up_payloads_.data() + c * payload_size_, payload_size_);
      auto n =
          ddl::encode_chunk({0, 0, r.count, plan_.total_elements(), r.offset},
                            std::span<const float>(gradient_).subspan(r.offset, r.count), slot);
      up_packets_[c] = chain::OutgoingPacket{0, c + 1 == plan_.size(), s, slot.first(n ? *n : 0)};
    }
    (void)tx_->begin_stage(s, 0.0, {});
    pace_next_ = 0;
    uplink_sent_us_ = 0;
    if (paced_) {
      on_pace_timer();
    } else {
      tx_->send(up_packets_, 0, clock_.now_us());
      pace_next_ = up_packets_.size();
      uplink_sent_us_ = clock_.now_us();
    }
    // The relay may have closed this stage without us already (its aggregate waits in the
    // collector's next slot), so look now rather than at the next chunk.
    after_io(clock_.now_us());
  }

  // Sends what the uplink's pacer allows now (everything while the path is free or not yet
  // measured), then sleeps until it allows more (ddl::PathPacer).
  void on_pace_timer() {
    if (state_ != State::kRunning || !stage_open()) return;
    const std::uint64_t now = clock_.now_us();
    if (const auto wait_us =
            ddl::send_paced(up_pacer_, *tx_, up_packets_, pace_next_, packet_bytes_, now)) {
      // At least 1 ms ahead (libuv would run a timer due now again in the same pass).
      pace_timer_->start(std::max<std::uint64_t>(1, (*wait_us + 999) / 1000));
      return;
    }
    uplink_sent_us_ = now;
    pace_timer_->stop();
  }

  void on_aggregate_packet(const wire::RtpPacketView& v, std::uint64_t arrival) {
    if (state_ != State::kRunning || !v.stage) return;
    auto chunk = ddl::parse_chunk(v.payload);
    if (!chunk) return;
    (void)sp_->on_chunk(v.stage->stage_id, v.stage->count, *chunk, arrival);
    after_io(arrival);
  }

  void on_stage_closed(const ddl::StageClosed& c, std::uint64_t t) {
    if (state_ != State::kRunning) return;
    if (auto r = sp_->on_stage_closed(c, t)) {
      finish_stage(*r, t);
      return;
    }
    arm_stage_timer(t);
  }

  // After a chunk or a PDSC only completion may close the stage; deadlines are judged by the
  // timer (ddl::StagePeer::poll_io).
  void after_io(std::uint64_t now) {
    if (state_ != State::kRunning || !stage_open()) return;
    if (auto r = sp_->poll_io(now)) {
      finish_stage(*r, now);
      return;
    }
    arm_stage_timer(now);
  }

  void arm_stage_timer(std::uint64_t now) {
    const auto at = sp_->timer_due_us();
    if (!at) {
      stage_timer_->stop();
      armed_ms_ = ~0ULL;
      return;
    }
    const std::uint64_t ms = *at > now ? (*at - now + 999) / 1000 : 0;
    if (ms != armed_ms_ || !stage_timer_->is_active()) {
      stage_timer_->start(ms);
      armed_ms_ = ms;
    }
  }

  void check_stage(std::uint64_t now, bool allow_grace) {
    const ddl::StageCheck c = sp_->on_timer(now, allow_grace);
    if (c.closed) {
      finish_stage(*c.closed, now);
      return;
    }
    if (c.silent) {
      fail("nothing from the relay at " + o_.relay.to_string() + " for stage " +
           std::to_string(sp_->stage()) + " in " + std::to_string(o_.relay_silence_ms) + " ms: " +
           (c.heard_other_stages ? std::string("the relay is at other stages")
                                 : std::string("the relay is gone or unreachable")));
      return;
    }
    armed_ms_ = ~0ULL;
    arm_stage_timer(now);
  }

  void finish_stage(const ddl::ClosedStage& r, std::uint64_t now) {
    stage_timer_->stop();
    pace_timer_->stop();
    armed_ms_ = ~0ULL;
    next_stage_ = r.stage + 1;
    const auto& closed_info = sp_->closed_info();
    GradientStage row;
    row.stage = r.stage;
    row.received = r.received;
    const ddl::ContributorReport& c = r.contributors[0];
    row.announced =
        c.announced != 0 ? c.announced : (closed_info ? closed_info->downlink_packets : 0U);
    row.lost = row.announced > row.received ? row.announced - row.received : 0;
    row.partial = sp_->partial();
    row.contributors = closed_info ? closed_info->contributors : 0U;
    row.close_reason = static_cast<std::uint8_t>(r.reason);
    row.deadline_us = r.deadline_budget_us;
    row.reception_period_us = static_cast<double>(c.period_us());
    row.stage_us = now > sp_->stage_started_us() ? now - sp_->stage_started_us() : 0;
    row.begin_us = sp_->stage_started_us();
    row.uplink_sent_us = uplink_sent_us_;
    row.pdsc_us = closed_info ? sp_->closed_info_at_us() : 0;
    row.first_chunk_us = r.received != 0 ? c.first_us : 0;
    row.last_chunk_us = r.received != 0 ? c.last_us : 0;
    row.closed_us = now;
    row.filled = static_cast<std::uint32_t>(
        ddl::fill_missing(fill_, plan_, sp_->received(), sp_->aggregate(), gradient_));

    // Kept for the report, which goes out when the trainer gives P.
    ReportEntry& e = reports_[r.stage % kReportRing];
    e = ReportEntry{};
    e.stage = r.stage;
    e.used = true;
    core::StageMeasurement& m = e.measurement;
    const core::StageMeasurement& metered = measurements_[r.stage % 4];
    if (metered.stage == r.stage && metered.received != 0) {
      m.queue_delay_us = metered.queue_delay_us;
    }
    m.stage = r.stage;
    m.first_arrival_us = c.first_us;
    m.last_arrival_us = c.last_us;
    m.reception_period_us = row.reception_period_us;
    m.received = row.received;
    m.announced = row.announced;
    if (on_stage_) on_stage_(row, sp_->aggregate());
  }

  // ---- the end ----

  void fail(const std::string& why) {
    core::log(core::LogLevel::kError, kLog, "%s", why.c_str());
    finish(core::make_error(why), why);
  }

  void close_handles() {
    if (join_timer_) join_timer_->stop();
    if (stage_timer_) stage_timer_->stop();
    if (pace_timer_) pace_timer_->stop();
    if (keepalive_timer_) keepalive_timer_->stop();
    if (socket_) socket_->close();
  }

  void finish(const core::Status& st, std::string reason) {
    if (state_ == State::kDone) return;
    state_ = State::kDone;
    end_reason_ = std::move(reason);
    close_handles();
    if (on_done_) on_done_(st);
  }

  net::EventLoop& loop_;
  const net::Clock& clock_;
  GradientPeerOptions o_;
  OnStart on_start_;
  OnStage on_stage_;
  OnDone on_done_;

  State state_ = State::kIdle;
  std::string end_reason_;
  std::uint32_t ssrc_;
  std::uint64_t worker_nonce_;
  std::uint64_t job_nonce_ = 0;
  std::optional<std::uint32_t> relay_ssrc_;
  std::uint32_t downlink_ssrc_ = 0;
  GradientJob job_;
  ddl::ChunkPlan plan_;
  ddl::MissingPolicy fill_ = ddl::MissingPolicy::kZero;
  bool paced_ = false;
  bool warned_ended_ = false;
  std::uint64_t join_started_us_ = 0;
  std::uint64_t last_join_sent_us_ = 0;
  std::uint64_t last_from_relay_us_ = 0;

  std::unique_ptr<net::UdpEndpoint> socket_;
  std::unique_ptr<net::Timer> join_timer_, stage_timer_, pace_timer_, keepalive_timer_;
  std::unique_ptr<ddl::ControlChannel> control_;
  std::unique_ptr<chain::StageReceiver> rx_;
  std::unique_ptr<ddl::StagePeer> sp_;
  std::unique_ptr<chain::StageTransmitter> tx_;
  std::array<core::StageMeasurement, 4> measurements_{};
  std::size_t payload_size_ = 0;
  std::size_t packet_bytes_ = 0;  // one gradient datagram on the wire (for the pacer)
  ddl::PathPacer up_pacer_;       // the uplink's pacing at its path's rate
  std::vector<std::uint8_t> up_payloads_;
  std::vector<chain::OutgoingPacket> up_packets_;
  std::size_t pace_next_ = 0;
  std::uint64_t uplink_sent_us_ = 0;  // the open stage's last gradient chunk left (0: not yet)
  std::uint64_t armed_ms_ = ~0ULL;

  std::vector<float> gradient_;
  std::uint32_t next_stage_ = 0;
  std::array<ReportEntry, kReportRing> reports_{};
  net::CallbackGuard boundary_{kLog};
};

GradientPeer::GradientPeer(net::EventLoop& loop, const net::Clock& clock,
                           GradientPeerOptions options, OnStart on_start, OnStage on_stage,
                           OnDone on_done)
    : impl_(std::make_unique<Impl>(loop, clock, options, std::move(on_start), std::move(on_stage),
                                   std::move(on_done))) {}

GradientPeer::~GradientPeer() = default;

core::Status GradientPeer::start() {
  return impl_->start();
}

core::Result<std::uint32_t> GradientPeer::submit(std::span<const float> gradient) {
  return impl_->submit(gradient);
}

core::Status GradientPeer::report(std::uint32_t stage, double performance) {
  return impl_->report(stage, performance);
}

void GradientPeer::close() {
  impl_->close();
}

void GradientPeer::poll() {
  impl_->poll();
}

bool GradientPeer::done() const {
  return impl_->done();
}

}  // namespace predrop::ddl::capi

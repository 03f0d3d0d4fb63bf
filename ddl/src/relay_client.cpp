// The relay client (relay_client.hpp): RelayClient::Impl wires the client's units to one socket
// and three timers and applies what they decide:
//   relay_client_join.hpp     joining, waiting, keep-alives, giving up (the control timer)
//   relay_client_downlink.hpp the aggregate's chunks and what a closed stage was
//   stage_peer.hpp            one stage of the aggregate: its close, deadline, silence, skipping
//   relay_client_uplink.hpp   the gradient's chunks, their pre-discard and pace (the pace timer)
//   relay_client_reports.hpp  closed stages waiting for the host's P
//   control_channel.hpp       SRTCP in and out
//   net::CallbackGuard        the exception boundary of every callback and host call
// Peer identity (the relay's address and SSRCs), the host's calls and events are here.
#include "predrop/ddl/relay_client.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "predrop/chain/feedback.hpp"
#include "predrop/core/byte_io.hpp"
#include "predrop/core/log.hpp"
#include "predrop/ddl/control_channel.hpp"
#include "predrop/ddl/relay_client_join.hpp"
#include "predrop/ddl/stage_peer.hpp"
#include "predrop/net/callback_guard.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "relay_client_downlink.hpp"
#include "relay_client_reports.hpp"
#include "relay_client_uplink.hpp"

namespace predrop::ddl {

namespace {

// Stages of aggregate the collector keeps ahead of the open one. The relay is no barrier: a
// worker that fell behind (a slow step, a preempted process) finds the aggregates of the stages
// the relay closed without it already here, applies them at once and so catches up, as long as
// it is fewer than this many stages behind (StagePeer skips it ahead otherwise).
constexpr std::uint32_t kCollectorWindow = 8;

RelayClientOptions validated(RelayClientOptions o) {
  if (o.tensor_elements == 0) {
    throw std::invalid_argument("ddl relay client: the gradient has no elements");
  }
  return o;
}

JoinLimits limits_of(const RelayClientOptions& o) {
  JoinLimits l;
  l.join_timeout_us = std::uint64_t{o.join_timeout_ms} * 1000;
  l.start_timeout_us = std::uint64_t{o.start_timeout_ms} * 1000;
  l.relay_silence_us = std::uint64_t{o.relay_silence_ms} * 1000;
  l.keepalive_us = std::uint64_t{o.keepalive_ms} * 1000;
  return l;
}

// Timer delay in whole ms (rounded up) from `now` to `due`.
std::uint64_t ms_until(std::uint64_t due, std::uint64_t now) {
  return due > now ? (due - now + 999) / 1000 : 0;
}

static_assert(RelayClient::kReportWindow == ClientReports::kWindow);

}  // namespace

class RelayClient::Impl {
 public:
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;
  Impl(net::EventLoop& loop, const net::Clock& clock, RelayClientOptions o,
       RelayClientListener& listener)
      : loop_(loop),
        clock_(clock),
        o_(validated(std::move(o))),
        listener_(listener),
        limits_(limits_of(o_)),
        relay_name_(o_.relay.to_string()),
        ssrc_(generate_ssrc()),
        worker_nonce_(generate_nonce()),
        boundary_(o_.log_name) {
    gradient_.resize(o_.tensor_elements);
    join_.phase = JoinPhase::kEnded;  // until start()
  }

  ~Impl() { close_handles(); }

  core::Status start() {
    if (started_) return core::make_error("the relay client was already started");
    control_ = std::make_unique<ControlChannel>(o_.key);
    net::UdpOptions uo;
    uo.recv_buffer_bytes = o_.socket_buffer_bytes;
    uo.send_buffer_bytes = o_.socket_buffer_bytes;
    auto sock = net::UdpEndpoint::open(
        loop_, o_.bind, uo,
        [this](std::span<const std::uint8_t> d, const net::SocketAddress& from,
               std::uint64_t /*recv_time*/) {
          guarded(net::CallbackKind::kUdpReceive, [&] { on_datagram(d, from, clock_.now_us()); });
        });
    if (!sock) return core::make_error("cannot open the UDP socket: " + sock.error().message);
    socket_ = std::move(sock.value());
    socket_->set_gso(o_.gso);
    control_timer_ = timer([this] { check_control(clock_.now_us()); });
    stage_timer_ = timer([this] { on_stage_timer(); });
    pace_timer_ = timer([this] { on_pace_timer(); });
    started_ = true;
    const std::uint64_t now = clock_.now_us();
    join_ = begin_join(worker_nonce_, now);
    send_join(now);
    arm_control_timer(now);
    return core::Ok{};
  }

  core::Result<std::uint32_t> begin_stage(std::uint32_t s, std::span<const float> gradient,
                                          double rate) {
    if (done_) return core::make_error(end_reason_);
    if (join_.phase != JoinPhase::kRunning) return core::make_error("the job has not started yet");
    if (stage_open()) {
      return core::make_error("stage " + std::to_string(stages().stage()) + " is still open");
    }
    if (gradient.size() != gradient_.size()) {
      return core::make_error("the gradient has " + std::to_string(gradient.size()) +
                              " elements, the job's " + std::to_string(gradient_.size()));
    }
    if (rate > 0.0 && !job_.egress_discard) {
      return core::make_error("the job does not pre-discard the uplink (rate " +
                              std::to_string(rate) + ")");
    }
    std::copy(gradient.begin(), gradient.end(), gradient_.begin());
    std::uint32_t opened = s;
    guarded(net::CallbackKind::kCall, [&] { opened = open_stage(s, rate); });
    if (done_) return core::make_error(end_reason_);
    return opened;
  }

  core::Status report(std::uint32_t stage, double performance) {
    if (done_) return core::make_error(end_reason_);
    auto measured = reports_.take(stage);
    if (!measured) return measured.error();
    // The relay never ran a stage past the job's end; it has no use for its report.
    if (const auto last = stages().last_stage();
        last && static_cast<std::int32_t>(stage - *last) > 0) {
      return core::Ok{};
    }
    ControlMessage m;
    m.sender_ssrc = ssrc_;
    m.feedback =
        chain::make_feedback(*measured, performance, wire::PdfbMetric::kLossDelta, downlink_ssrc_);
    guarded(net::CallbackKind::kCall, [&] {
      send_control(m);
      ++counters_.reports;
    });
    return core::Ok{};
  }

  void leave(const core::Status& status) {
    guarded(net::CallbackKind::kCall, [&] {
      if (done_) return;
      send_bye();
      finish(status);
    });
  }

  void vanish(const core::Status& status) {
    guarded(net::CallbackKind::kCall, [&] { finish(status); });
  }

  void poll() {
    guarded(net::CallbackKind::kCall, [this] {
      if (done_ || !started_) return;
      const std::uint64_t now = clock_.now_us();
      check_control(now);
      if (done_ || !stage_open()) return;
      if (std::exchange(look_now_, false)) after_io(now);
      if (stage_open()) check_stage(now, false);
    });
  }

  bool stage_open() const {
    return join_.phase == JoinPhase::kRunning && down_ && down_->stages().open();
  }
  std::uint32_t next_stage() const { return next_stage_; }
  bool ended() const { return done_; }
  const RelayJob& job() const { return job_; }

  net::SocketAddress local_address() const {
    return socket_ ? socket_->local_address() : net::SocketAddress{};
  }

  RelayClientCounters counters() const {
    RelayClientCounters c = counters_;
    c.srtp_failures = control_errors_ + (down_ ? down_->srtp_failures() : 0);
    c.chunks_rejected = down_ ? down_->chunks_rejected() : 0;
    c.late_chunks = down_ ? down_->late_chunks() : 0;
    c.send_drops = uplink_ ? uplink_->stats().send_drops : 0;
    c.callback_errors = boundary_.total();
    return c;
  }

 private:
  // The stage engine (set up with the job).
  StagePeer& stages() { return down_->stages(); }

  // ---- the exception boundary ----

  // Runs one callback's (or host call's) work. A failure leaves a stage half applied, so an
  // exception ends the client: BYE first, so that the relay removes this worker at once and the
  // others go on.
  template <class Fn>
  void guarded(net::CallbackKind kind, Fn&& fn) {
    boundary_.run(kind, std::forward<Fn>(fn), [this, kind](const char* what) {
      if (done_) return;
      send_bye();
      fail(std::string("internal error in a ") + net::to_string(kind) + " callback: " + what);
    });
  }

  template <class Fn>
  std::unique_ptr<net::Timer> timer(Fn fn) {
    return std::make_unique<net::Timer>(
        loop_, [this, fn = std::move(fn)] { guarded(net::CallbackKind::kTimer, fn); });
  }

  // ---- datagrams ----

  // `t` is the clock's time when the loop handed the datagram over: every decision uses the
  // injected clock, never the socket's own stamp.
  void on_datagram(std::span<const std::uint8_t> data, const net::SocketAddress& from,
                   std::uint64_t t) {
    if (done_) return;
    ++counters_.datagrams;
    if (!(from == o_.relay)) {
      ++counters_.foreign_datagrams;
      return;
    }
    if (wire::looks_like_rtcp(data)) {
      on_control(data, t);
      return;
    }
    if (!down_) return;  // RTP before the job was set up: nothing to do with it
    // The relay is its address and, for the aggregate, the downlink SSRC it gave this worker.
    if (data.size() >= 12 && core::load_u32_be(data.data() + 8) != downlink_ssrc_) {
      ++counters_.ssrc_mismatches;
      return;
    }
    join_.last_heard_us = t;
    const auto arrival = down_->on_datagram(data, t);
    if (arrival && join_.phase == JoinPhase::kRunning) after_io(*arrival);
  }

  void on_control(std::span<const std::uint8_t> data, std::uint64_t t) {
    if (!ControlChannel::fits(data.size())) return;
    auto m = control_->decode(data);
    if (!m) {
      ++control_errors_;
      return;
    }
    // Once the challenge to this worker's own join named the relay's control SSRC, that is the
    // relay.
    if (join_.relay_ssrc && m->sender_ssrc != *join_.relay_ssrc) {
      ++counters_.ssrc_mismatches;
      return;
    }
    if (m->answer) {
      if (!on_answer(*m->answer, m->sender_ssrc, t)) return;  // not an answer to this worker
      if (done_) return;
    }
    join_.last_heard_us = t;
    if (down_ && join_.phase == JoinPhase::kRunning) stages().heard(t);
    // The relay's report on this worker's uplink (sent with each PDSC).
    if (m->feedback && m->feedback->media_ssrc == ssrc_) on_uplink_report(*m->feedback);
    if (done_) return;
    if (m->stage_closed) on_stage_closed(*m->stage_closed, t);
    if (m->bye && !done_) fail("the relay ended the job (BYE)");
  }

  // ---- joining and staying ----

  // Returns false for a stale answer (ignored).
  bool on_answer(const JoinAnswer& a, std::uint32_t relay_ssrc, std::uint64_t now) {
    const AnswerVerdict v = judge_answer(join_, a, relay_ssrc);
    if (v.stale) {
      ++counters_.stale_answers;
      return false;
    }
    if (v.failure) {
      fail(join_failure_text(*v.failure, relay_name_, limits_, a.reason()));
      return true;
    }
    if (v.send_join) {
      send_join(now);
      arm_control_timer(now);
    }
    if (v.joined) {
      core::Status st = setup_job(a);
      if (st) st = listener_.on_joined(job_);
      if (!st) {
        send_bye();
        fail(st.error().message);
        return true;
      }
      core::log(core::LogLevel::kInfo, o_.log_name, "joined %s as rank %u of %u (%u joined)",
                relay_name_.c_str(), unsigned{a.rank}, unsigned{a.workers}, unsigned{a.joined});
    }
    if (v.started) {
      job_.start_stage = a.start_stage;
      next_stage_ = a.start_stage;
      if (o_.stages != 0) stages().set_last_stage(a.start_stage + o_.stages - 1);
      arm_control_timer(now);  // keep-alives from now on
      listener_.on_started(job_);
    }
    return true;
  }

  // The control timer (or a poll): joining, waiting and keep-alives (relay_client_join.hpp).
  void check_control(std::uint64_t now) {
    if (done_) return;
    const JoinCheck c = check_join(join_, now, limits_);
    if (c.failure) {
      fail(join_failure_text(*c.failure, relay_name_, limits_));
      return;
    }
    if (c.send_join) send_join(now);
    if (c.send_keepalive) send_keepalive();
    arm_control_timer(now);
  }

  void arm_control_timer(std::uint64_t now) {
    const auto due = join_due_us(join_, limits_);
    if (!due) {
      control_timer_->stop();
      return;
    }
    control_timer_->start(ms_until(*due, now));
  }

  void send_join(std::uint64_t now) {
    note_join_sent(join_, now);
    ++counters_.join_requests;
    ControlMessage m;
    m.sender_ssrc = ssrc_;
    m.join =
        JoinRequest{o_.rank, o_.tensor_elements, o_.model_seed, join_.job_nonce, worker_nonce_};
    send_control(m);
  }

  // An RR of the control SSRC alone: authenticated, so the relay counts this worker as heard.
  void send_keepalive() {
    ++counters_.keepalives;
    ControlMessage m;
    m.sender_ssrc = ssrc_;
    send_control(m);
  }

  void send_bye() {
    ControlMessage m;
    m.sender_ssrc = ssrc_;
    m.bye = true;
    send_control(m);
  }

  void send_control(const ControlMessage& m) {
    if (!socket_ || !control_) return;
    control_->send(*socket_, m, o_.relay);
    note_control_sent(join_, clock_.now_us());
  }

  core::Status setup_job(const JoinAnswer& a) {
    if (a.workers == 0 || a.rank >= a.workers) {
      return core::make_error("the relay sent an invalid rank " + std::to_string(a.rank) + " of " +
                              std::to_string(a.workers));
    }
    if (a.egress_discard && !o_.egress_discard) {
      return core::make_error(
          "the relay's job asks for worker egress pre-discard (ddl.worker_egress_discard = "
          "true), which this trainer does not implement; set it to false (torch jobs)");
    }
    auto plan = chunk_tensor(o_.tensor_elements, a.chunk_elements);
    if (!plan) return core::make_error("the relay's chunk size: " + plan.error().message);
    job_.rank = a.rank;
    job_.workers = a.workers;
    job_.plan = *plan;
    job_.fill = a.missing_fill == 1 ? MissingPolicy::kOwn : MissingPolicy::kZero;
    job_.stage_deadline_ms = a.stage_deadline_ms;
    job_.egress_discard = a.egress_discard;
    job_.paced = a.paced;
    downlink_ssrc_ = a.downlink_ssrc;

    down_ = std::make_unique<ClientDownlink>(
        job_, o_.key, o_.impairment,
        StagePeerConfig{a.stage_deadline_ms, kCollectorWindow, limits_.relay_silence_us,
                        std::uint64_t{o_.idle_close_ms} * 1000});
    uplink_ = std::make_unique<ClientUplink>(
        *socket_, job_.plan,
        ClientUplinkConfig{ssrc_, o_.relay, o_.key, o_.discard, o_.discard_seed});
    return core::Ok{};
  }

  // ---- one stage ----

  std::uint32_t open_stage(std::uint32_t s, double rate) {
    const std::uint64_t now = clock_.now_us();
    // A worker further behind than the collector's window skips to the relay's current stage
    // (StagePeer; its model misses the skipped stages' updates, as with chunks lost under zero
    // fill).
    const std::uint32_t opened = stages().begin(s, now);
    if (stages().skipped() != 0) {
      core::log(core::LogLevel::kWarn, o_.log_name,
                "rank %u: stage %u: %u stages behind the relay (it closed stage %u); skipping to "
                "%u",
                unsigned{job_.rank}, s, stages().skipped(), opened - 1, opened);
    }
    stage_rate_ = rate;
    uplink_plan_ = chain::StagePlan{};
    if (stages().ended()) {
      // Past the job's last stage: the others have left, nothing to send or wait for.
      if (!warned_ended_) {
        warned_ended_ = true;
        core::log(core::LogLevel::kWarn, o_.log_name,
                  "rank %u: stage %u is past the job's last stage %u: closed at once, nothing "
                  "received",
                  unsigned{job_.rank}, opened, *stages().last_stage());
      }
    } else {
      uplink_plan_ = uplink_->begin(opened, gradient_, rate);
      on_pace_timer();
    }
    look_now();
    return opened;
  }

  // The relay may have closed the stage just opened without this worker already (its aggregate
  // waits in the collector), or it is past the job's end: the stage timer looks at once, from
  // the loop, so that a stage never closes inside the host's begin_stage() (the host would hear
  // of stage s + 1 closing before it has finished with stage s).
  void look_now() {
    look_now_ = true;
    armed_ms_ = 0;
    stage_timer_->start(0);
  }

  void on_stage_timer() {
    if (!stage_open()) return;
    const std::uint64_t now = clock_.now_us();
    if (std::exchange(look_now_, false)) {
      after_io(now);
      return;
    }
    check_stage(now, true);
  }

  // Sends what the uplink may send now (all of it, or what the path's pacer allows), then sleeps
  // until it may send more.
  void on_pace_timer() {
    if (!stage_open()) return;
    if (const auto wait_us = uplink_->send(clock_.now_us(), job_.paced)) {
      // At least 1 ms ahead (libuv would run a timer due now again in the same pass).
      pace_timer_->start(std::max<std::uint64_t>(1, (*wait_us + 999) / 1000));
      return;
    }
    pace_timer_->stop();
  }

  void on_uplink_report(const wire::PdfbFeedback& fb) {
    // The relay's reception of this worker's gradient: the uplink's delivery rate, for its pacer.
    if (!uplink_) return;  // not set up yet: not a report on anything this worker sent
    uplink_->on_report(fb);
    listener_.on_uplink_report(chain::to_stage_report(fb));
  }

  void on_stage_closed(const StageClosed& c, std::uint64_t t) {
    if (join_.phase != JoinPhase::kRunning) return;
    if (auto r = stages().on_stage_closed(c, t)) {
      finish_stage(*r, t);
      return;
    }
    if (stage_open()) arm_stage_timer(t);
  }

  // After a chunk or a PDSC only completion may close the stage; deadlines are judged by the
  // timer, after one more pass over the socket (StagePeer::poll_io).
  void after_io(std::uint64_t now) {
    look_now_ = false;
    if (!stage_open()) return;
    if (auto r = stages().poll_io(now)) {
      finish_stage(*r, now);
      return;
    }
    arm_stage_timer(now);
  }

  void arm_stage_timer(std::uint64_t now) {
    if (look_now_) return;  // the timer is due at once already
    const auto at = stages().timer_due_us();
    if (!at) {
      stage_timer_->stop();
      armed_ms_ = kNotArmed;
      return;
    }
    const std::uint64_t ms = ms_until(*at, now);
    if (ms != armed_ms_ || !stage_timer_->is_active()) {
      stage_timer_->start(ms);
      armed_ms_ = ms;
    }
  }

  // The stage's deadline, the PDSC-without-chunks close and the relay's silence, at `now`
  // (StagePeer::on_timer; `allow_grace`: one more I/O pass first).
  void check_stage(std::uint64_t now, bool allow_grace) {
    const StageCheck c = stages().on_timer(now, allow_grace);
    if (c.closed) {
      finish_stage(*c.closed, now);
      return;
    }
    if (c.silent) {
      fail("nothing from the relay at " + relay_name_ + " for stage " +
           std::to_string(stages().stage()) + " in " + std::to_string(o_.relay_silence_ms) +
           " ms: " +
           (c.heard_other_stages ? "the relay is at other stages"
                                 : "the relay is gone or unreachable"));
      return;
    }
    armed_ms_ = kNotArmed;
    arm_stage_timer(now);
  }

  void finish_stage(const ClosedStage& r, std::uint64_t now) {
    look_now_ = false;
    stage_timer_->stop();
    pace_timer_->stop();
    armed_ms_ = kNotArmed;
    next_stage_ = r.stage + 1;
    RelayStage st = down_->closed(r, now, job_.fill, gradient_);
    st.uplink_rate = stage_rate_;
    st.uplink_planned = static_cast<std::uint32_t>(uplink_plan_.packets);
    st.uplink_discarded = static_cast<std::uint32_t>(uplink_plan_.discarded);
    st.uplink_sent_us = uplink_plan_.packets != 0 ? uplink_->sent_us() : 0;
    reports_.keep(down_->measurement(st));
    listener_.on_stage_closed(st);
  }

  // ---- the end ----

  void fail(const std::string& why) {
    core::log(core::LogLevel::kError, o_.log_name, "%s", why.c_str());
    finish(core::make_error(why));
  }

  void close_handles() {
    if (control_timer_) control_timer_->stop();
    if (stage_timer_) stage_timer_->stop();
    if (pace_timer_) pace_timer_->stop();
    if (socket_) socket_->close();
  }

  void finish(const core::Status& st) {
    if (done_) return;
    done_ = true;
    join_.phase = JoinPhase::kEnded;
    end_reason_ = st ? std::string("the relay client has ended") : st.error().message;
    close_handles();
    listener_.on_ended(st);
  }

  static constexpr std::uint64_t kNotArmed = ~0ULL;

  net::EventLoop& loop_;
  const net::Clock& clock_;
  RelayClientOptions o_;
  RelayClientListener& listener_;
  JoinLimits limits_;
  std::string relay_name_;

  // The job.
  std::uint32_t ssrc_;
  std::uint64_t worker_nonce_;
  JoinState join_;
  bool started_ = false;
  bool done_ = false;
  std::string end_reason_ = "the relay client has not started";
  RelayJob job_;
  std::uint32_t downlink_ssrc_ = 0;
  std::uint32_t next_stage_ = 0;

  // Network.
  std::unique_ptr<net::UdpEndpoint> socket_;
  std::unique_ptr<net::Timer> control_timer_, stage_timer_, pace_timer_;
  std::unique_ptr<ControlChannel> control_;
  std::unique_ptr<ClientDownlink> down_;
  std::unique_ptr<ClientUplink> uplink_;
  std::uint64_t armed_ms_ = kNotArmed;
  bool look_now_ = false;  // the stage timer first looks whether the stage just opened is over

  // Uplink.
  std::vector<float> gradient_;  // the open stage's, for the own fill
  double stage_rate_ = 0.0;
  chain::StagePlan uplink_plan_;
  bool warned_ended_ = false;

  // Reports and counters.
  ClientReports reports_;
  RelayClientCounters counters_;
  std::uint64_t control_errors_ = 0;
  net::CallbackGuard boundary_;
};

RelayClient::RelayClient(net::EventLoop& loop, const net::Clock& clock, RelayClientOptions options,
                         RelayClientListener& listener)
    : impl_(std::make_unique<Impl>(loop, clock, std::move(options), listener)) {}

RelayClient::~RelayClient() = default;

core::Status RelayClient::start() {
  return impl_->start();
}

core::Result<std::uint32_t> RelayClient::begin_stage(std::uint32_t s,
                                                     std::span<const float> gradient, double rate) {
  return impl_->begin_stage(s, gradient, rate);
}

core::Status RelayClient::report(std::uint32_t stage, double performance) {
  return impl_->report(stage, performance);
}

void RelayClient::leave(const core::Status& status) {
  impl_->leave(status);
}

void RelayClient::vanish(const core::Status& status) {
  impl_->vanish(status);
}

void RelayClient::poll() {
  impl_->poll();
}

bool RelayClient::stage_open() const {
  return impl_->stage_open();
}

std::uint32_t RelayClient::next_stage() const {
  return impl_->next_stage();
}

bool RelayClient::ended() const {
  return impl_->ended();
}

const RelayJob& RelayClient::job() const {
  return impl_->job();
}

net::SocketAddress RelayClient::local_address() const {
  return impl_->local_address();
}

RelayClientCounters RelayClient::counters() const {
  return impl_->counters();
}

}  // namespace predrop::ddl

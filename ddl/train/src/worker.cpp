// The DDL training worker (see predrop/ddl/train/worker.hpp and docs/ddl-mode.md).
#include "predrop/ddl/train/worker.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

#include "predrop/chain/feedback.hpp"
#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/core/byte_io.hpp"
#include "predrop/core/log.hpp"
#include "predrop/ddl/aggregator.hpp"
#include "predrop/ddl/chunk.hpp"
#include "predrop/ddl/control_channel.hpp"
#include "predrop/ddl/importance.hpp"
#include "predrop/ddl/paced_send.hpp"
#include "predrop/ddl/path_pacer.hpp"
#include "predrop/ddl/stage_collector.hpp"
#include "predrop/ddl/stage_peer.hpp"
#include "predrop/ddl/train/mlp.hpp"
#include "predrop/ddl/train/random.hpp"
#include "predrop/net/callback_guard.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"

namespace predrop::ddl::train {

namespace {

constexpr const char* kLog = "ddl-worker";
// Datagrams handed to the kernel per sendmmsg call.
// A PDJN without an answer is sent again after this long.
constexpr std::uint64_t kJoinRetryUs = 250'000;
// Stages of aggregate held ahead of the open one (ddl::StagePeer: a worker further behind
// skips to the relay's current stage).
constexpr std::uint32_t kCollectorWindow = 8;
// Egress reports kept while waiting for their P or their relay report.
constexpr std::size_t kEgressRing = 16;

}  // namespace

core::Result<std::shared_ptr<const ddl::train::FashionMnist>> load_ddl_dataset(
    const std::string& dir) {
  auto data = ddl::train::load_fashion_mnist(dir);
  if (!data) {
    return core::make_error("cannot load Fashion-MNIST from " + dir + ": " + data.error().message +
                            " (Debian: apt-get install dataset-fashion-mnist; or --data DIR)");
  }
  return std::shared_ptr<const ddl::train::FashionMnist>(
      std::make_shared<ddl::train::FashionMnist>(std::move(data.value())));
}

class DdlWorker::Impl {
 public:
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;
  Impl(net::EventLoop& loop, const net::Clock& clock,
       std::shared_ptr<const ddl::train::FashionMnist> data, DdlWorkerOptions o, OnStage on_stage,
       OnDone on_done)
      : loop_(loop),
        clock_(clock),
        data_(std::move(data)),
        o_(std::move(o)),
        on_stage_(std::move(on_stage)),
        on_done_(std::move(on_done)),
        net_(ddl::train::MlpShape{}, o_.seed),
        sgd_(ddl::train::SgdConfig{o_.learning_rate, o_.momentum, 0.0f}, net_.parameter_count()),
        ssrc_(ddl::generate_ssrc()),
        worker_nonce_(ddl::generate_nonce()) {
    if (!data_) throw std::invalid_argument("ddl worker: no data set");
    if (data_->train.features != net_.shape().inputs ||
        data_->test.features != net_.shape().inputs) {
      throw std::invalid_argument("ddl worker: the data set does not have 784 features");
    }
    if (o_.stages == 0) throw std::invalid_argument("ddl worker: stages must be >= 1");
    if (o_.batch == 0) throw std::invalid_argument("ddl worker: batch must be >= 1");
    // The same seeded pick of training samples on every worker; shards are cut from it once the
    // relay has said how many workers there are and which rank this one has.
    pick_.resize(data_->train.size());
    std::iota(pick_.begin(), pick_.end(), 0u);
    ddl::train::Rng(ddl::train::derive_seed(o_.seed, 0xda7a))
        .shuffle(std::span<std::uint32_t>(pick_));
    if (o_.train_subset != 0 && o_.train_subset < pick_.size()) pick_.resize(o_.train_subset);
    const std::size_t probe = std::min(o_.probe, pick_.size());
    if (probe == 0) throw std::invalid_argument("ddl worker: the probe batch is empty");
    ddl::train::gather_batch(data_->train, std::span(pick_).first(probe), probe_x_, probe_labels_);
    if (o_.test_subset != 0 && o_.test_subset < data_->test.size()) {
      std::vector<std::uint32_t> first(o_.test_subset);
      std::iota(first.begin(), first.end(), 0u);
      test_subset_ = ddl::train::take(data_->test, first);
    }
    gradient_.resize(net_.parameter_count());
    prev_probe_loss_ = net_.evaluate(probe_x_, probe_labels_).loss;
  }

  ~Impl() { close_handles(); }

  core::Status start() {
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
      return core::make_error("cannot open the worker's UDP socket: " + sock.error().message);
    }
    socket_ = std::move(sock.value());
    socket_->set_gso(true);  // the gradient's equal-sized packets as UDP GSO messages
    join_timer_ = std::make_unique<net::Timer>(
        loop_, [this] { guarded(net::CallbackKind::kTimer, [this] { on_join_timer(); }); });
    stage_timer_ = std::make_unique<net::Timer>(
        loop_, [this] { guarded(net::CallbackKind::kTimer, [this] { on_stage_timer(); }); });
    pace_timer_ = std::make_unique<net::Timer>(
        loop_, [this] { guarded(net::CallbackKind::kTimer, [this] { on_pace_timer(); }); });
    state_ = State::kJoining;
    join_started_us_ = clock_.now_us();
    last_from_relay_us_ = join_started_us_;
    send_join(join_started_us_);
    arm_join_timer(join_started_us_);
    return core::Ok{};
  }

  void poll() {
    guarded(net::CallbackKind::kCall, [this] {
      const std::uint64_t now = clock_.now_us();
      if (state_ == State::kJoining || state_ == State::kWaiting) check_join(now);
      if (state_ == State::kRunning) check_stage(now, false);
    });
  }

  std::uint64_t datagrams_received() const { return datagrams_; }

  void stop() {
    guarded(net::CallbackKind::kCall, [this] {
      if (state_ == State::kDone) return;
      send_bye();
      finish(core::make_error("stopped"));
    });
  }

  net::SocketAddress local_address() const {
    return socket_ ? socket_->local_address() : net::SocketAddress{};
  }

 private:
  enum class State { kIdle, kJoining, kWaiting, kRunning, kDone };

  // Per-stage state of the egress controller's inputs: P comes from this worker, L and the
  // counts from the relay's PDFB about the uplink; the controller gets them when both are here.
  struct EgressEntry {
    std::uint32_t stage = 0;
    bool used = false;
    bool have_p = false;
    bool have_report = false;
    bool fed = false;
    double p = 0.0;
    double rate = 0.0;
    core::StageReport report;
  };

  // ---- the exception boundary ----

  // Runs one callback's work. The worker's only peer is the relay and a failure leaves its stage
  // half applied, so an exception (counted and logged by the boundary) ends this worker: it
  // leaves the job with a BYE, so that the relay removes it at once and the others go on.
  template <class Fn>
  void guarded(net::CallbackKind kind, Fn&& fn) {
    boundary_.run(kind, std::forward<Fn>(fn), [this, kind](const char* what) {
      if (state_ == State::kDone) return;
      send_bye();
      finish(core::make_error(std::string("internal error in a ") + net::to_string(kind) +
                              " callback: " + what));
    });
  }

  // ---- datagrams ----

  void on_datagram(std::span<const std::uint8_t> data, const net::SocketAddress& from,
                   std::uint64_t t) {
    if (state_ == State::kDone) return;
    ++datagrams_;
    if (!(from == o_.relay)) {
      ++foreign_datagrams_;
      return;
    }
    if (wire::looks_like_rtcp(data)) {
      on_control(data, t);
      return;
    }
    if (!rx_) return;  // RTP before the job was set up: nothing to do with it
    // The relay is its address and, for the aggregate, the downlink SSRC it gave this worker.
    if (data.size() >= 12 && core::load_u32_be(data.data() + 8) != downlink_ssrc_) {
      ++ssrc_mismatches_;
      return;
    }
    last_from_relay_us_ = t;
    rx_->on_datagram(data, t);
  }

  void on_control(std::span<const std::uint8_t> data, std::uint64_t t) {
    if (!ddl::ControlChannel::fits(data.size())) return;
    auto m = control_->decode(data);
    if (!m) {
      ++control_errors_;
      return;
    }
    // Once an answer to this worker's own join named the relay's control SSRC, that is the relay.
    if (relay_ssrc_ && m->sender_ssrc != *relay_ssrc_) {
      ++ssrc_mismatches_;
      return;
    }
    if (m->answer) {
      if (!on_answer(*m->answer, m->sender_ssrc, t)) return;  // not an answer to this worker
      if (state_ == State::kDone) return;
    }
    last_from_relay_us_ = t;
    if (sp_ && state_ == State::kRunning) sp_->heard(t);
    if (m->feedback) on_uplink_report(*m->feedback);
    if (m->stage_closed) on_stage_closed(*m->stage_closed, t);
    if (m->bye && state_ != State::kDone) {
      finish(core::make_error("the relay ended the job (BYE)"));
    }
  }

  // ---- joining ----

  void send_join(std::uint64_t now) {
    last_join_sent_us_ = now;
    ++summary_.join_requests;
    ddl::ControlMessage m;
    m.sender_ssrc = ssrc_;
    m.join = ddl::JoinRequest{o_.rank, static_cast<std::uint32_t>(net_.parameter_count()), o_.seed,
                              job_nonce_, worker_nonce_};
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

  void on_join_timer() { check_join(clock_.now_us()); }

  // Joining: gives up after join_timeout_ms without an answer, sends PDJN again kJoinRetryUs
  // after the last one; waiting: gives up when the relay is silent for relay_silence_ms, and
  // keeps re-sending PDJN as a keep-alive (every answer repeats the job's state).
  void check_join(std::uint64_t now) {
    if (state_ == State::kJoining && now - join_started_us_ > o_.join_timeout_ms * 1000ull) {
      finish(core::make_error(
          "no answer from the relay at " + o_.relay.to_string() + " within " +
          std::to_string(o_.join_timeout_ms) +
          " ms: it is not running or not reachable, or it uses another key or SRTP suite"));
      return;
    }
    if (state_ == State::kWaiting && now - last_from_relay_us_ > o_.relay_silence_ms * 1000ull) {
      finish(core::make_error("the relay went silent while waiting for the other workers"));
      return;
    }
    if (state_ != State::kJoining && state_ != State::kWaiting) return;
    if (now - last_join_sent_us_ >= kJoinRetryUs) send_join(now);
    arm_join_timer(now);
  }

  void arm_join_timer(std::uint64_t now) {
    std::uint64_t due = last_join_sent_us_ + kJoinRetryUs;
    if (state_ == State::kJoining) {
      due = std::min<std::uint64_t>(due, join_started_us_ + o_.join_timeout_ms * 1000ull + 1);
    } else {
      due = std::min<std::uint64_t>(due, last_from_relay_us_ + o_.relay_silence_ms * 1000ull + 1);
    }
    join_timer_->start(due > now ? (due - now + 999) / 1000 : 0);
  }

  // Returns false for an answer that is not to this worker's join in this job (a recorded one,
  // or one to another worker): ignored.
  bool on_answer(const ddl::JoinAnswer& a, std::uint32_t relay_ssrc, std::uint64_t now) {
    using ddl::JoinStatus;
    if (a.worker_nonce != worker_nonce_ ||
        (a.status != JoinStatus::kChallenge && (job_nonce_ == 0 || a.job_nonce != job_nonce_))) {
      ++stale_answers_;
      return false;
    }
    if (a.status == JoinStatus::kChallenge) {
      if (state_ == State::kJoining) {
        // The relay's nonce of this job: join again at once, echoing it.
        job_nonce_ = a.job_nonce;
        relay_ssrc_ = relay_ssrc;
        send_join(now);
        arm_join_timer(now);
      } else if (state_ == State::kWaiting && a.job_nonce != job_nonce_) {
        finish(core::make_error("the relay at " + o_.relay.to_string() +
                                " started another job while this worker waited for the others; "
                                "start the worker again"));
      }
      return true;
    }
    switch (a.status) {
      case JoinStatus::kRefused:
        if (state_ == State::kJoining) {
          finish(core::make_error("the relay at " + o_.relay.to_string() +
                                  " refused to let this worker join: " + std::string(a.reason())));
        }
        return true;
      case JoinStatus::kRemoved:
        finish(core::make_error("removed from the job by the relay: " + std::string(a.reason())));
        return true;
      case JoinStatus::kWaiting:
      case JoinStatus::kStart:
      case JoinStatus::kChallenge:
        break;
    }
    if (state_ == State::kJoining) {
      if (auto st = setup_job(a); !st) {
        finish(st);
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
      // As the torch peer: a worker that skipped ahead past the job's end closes those stages at
      // once instead of waiting for a relay whose other workers have left.
      sp_->set_last_stage(a.start_stage + o_.stages - 1);
      if (o_.vanish_at_stage && *o_.vanish_at_stage <= a.start_stage) {
        vanish();
        return true;
      }
      begin_stage(a.start_stage);
    }
    return true;
  }

  core::Status setup_job(const ddl::JoinAnswer& a) {
    if (a.workers == 0 || a.rank >= a.workers) {
      return core::make_error("the relay sent an invalid rank " + std::to_string(a.rank) + " of " +
                              std::to_string(a.workers));
    }
    auto plan = ddl::chunk_tensor(net_.parameter_count(), a.chunk_elements);
    if (!plan) return core::make_error("the relay's chunk size: " + plan.error().message);
    plan_ = *plan;
    rank_ = a.rank;
    downlink_ssrc_ = a.downlink_ssrc;
    workers_ = a.workers;
    fill_ = a.missing_fill == 1 ? ddl::MissingPolicy::kOwn : ddl::MissingPolicy::kZero;
    egress_discard_ = a.egress_discard;
    paced_ = a.paced;
    if (egress_discard_) {
      auto c = core::make_rate_controller(o_.egress_policy);
      if (!c) return core::make_error("egress controller: " + c.error().message);
      egress_ = std::move(c.value());
    }
    // Data: the rank-th strided shard of the seeded pick.
    const auto positions =
        ddl::train::shard_indices(pick_.size(), rank_, workers_, ddl::train::ShardMode::kStrided);
    std::vector<std::uint32_t> shard(positions.size());
    for (std::size_t i = 0; i < positions.size(); ++i) {
      shard[i] = pick_[positions[i]];
    }
    if (shard.size() < o_.batch) {
      return core::make_error("the shard of rank " + std::to_string(rank_) + " has " +
                              std::to_string(shard.size()) + " samples, fewer than a batch of " +
                              std::to_string(o_.batch));
    }
    sampler_.emplace(std::move(shard), o_.batch, ddl::train::derive_seed(o_.seed, rank_));

    // Downlink: SRTP -> RTP -> reception meter -> chunk -> stage receiver (1 contributor).
    chain::ReceiverConfig rc;
    rc.max_datagram = 2048;
    rc.impairment = o_.impairment;
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
                                    std::uint64_t{o_.relay_silence_ms} * 1000});

    // Uplink: one track to the relay; payloads are re-encoded in place every stage.
    payload_size_ = ddl::chunk_payload_size(plan_.chunk_elements());
    packet_bytes_ = payload_size_ + ddl::kChunkPacketOverheadBytes;
    up_payloads_.assign(payload_size_ * plan_.size(), 0);
    up_packets_.resize(plan_.size());
    importance_.assign(plan_.size(), 0);
    chain::TransmitterConfig tc;
    tc.max_payload_size = payload_size_;
    tc.tracks.push_back(
        chain::TrackConfig{ssrc_, ddl::kChunkPayloadType, 0, 0, o_.relay, std::nullopt});
    std::optional<net::SrtpSession> out;
    if (o_.key.suite) out.emplace(net::SrtpDirection::Outbound, *o_.key.suite, o_.key.key);
    tx_ = std::make_unique<chain::StageTransmitter>(
        *socket_, tc, std::move(out), core::DiscardPlanner(o_.egress_discard, o_.discard_seed));
    return core::Ok{};
  }

  // ---- one stage ----

  void begin_stage(std::uint32_t s) {
    if (o_.vanish_at_stage && s >= *o_.vanish_at_stage) {
      vanish();
      return;
    }
    // A worker further behind than the collector's window skips to the relay's current stage
    // (ddl::StagePeer); its model misses the skipped stages' updates.
    const std::uint32_t opened = sp_->begin(s, clock_.now_us());
    if (sp_->skipped() != 0) {
      core::log(core::LogLevel::kWarn, kLog,
                "worker %u: stage %u: %u stages behind the relay; skipping to %u", unsigned{rank_},
                s, sp_->skipped(), opened);
    }
    s = opened;

    const auto batch = sampler_->next();
    ddl::train::gather_batch(data_->train, batch, batch_x_, batch_labels_);
    train_loss_ = net_.loss_and_gradient(batch_x_, batch_labels_, gradient_);

    for (std::size_t c = 0; c < plan_.size(); ++c) {
      const ddl::ChunkRange r = plan_[c];
      const std::span<std::uint8_t> slot(up_payloads_.data() + c * payload_size_, payload_size_);
      auto n =
          ddl::encode_chunk({0, 0, r.count, plan_.total_elements(), r.offset},
                            std::span<const float>(gradient_).subspan(r.offset, r.count), slot);
      up_packets_[c] = chain::OutgoingPacket{0, c + 1 == plan_.size(), s, slot.first(n ? *n : 0)};
    }
    up_rate_ = egress_ ? egress_->rate() : 0.0;
    if (egress_ && o_.egress_discard == core::DiscardPolicy::kPriority) {
      ddl::tensor_importance(gradient_, plan_, importance_);
    }
    const chain::StagePlan p = tx_->begin_stage(s, up_rate_, importance_);
    up_planned_ = static_cast<std::uint32_t>(p.packets);
    up_discarded_ = static_cast<std::uint32_t>(p.discarded);
    EgressEntry& e = egress_ring_[s % kEgressRing];
    e = EgressEntry{};
    e.stage = s;
    e.used = true;
    e.rate = up_rate_;
    pace_next_ = 0;
    if (sp_->ended()) {
      // Past the job's last stage (after skipping ahead): nobody runs it, nothing to send; the
      // stage timer closes it at once (ddl::StagePeer).
      if (!warned_ended_) {
        warned_ended_ = true;
        core::log(core::LogLevel::kWarn, kLog,
                  "worker %u: stage %u is past the job's last stage %u: closed at once",
                  unsigned{rank_}, s, *sp_->last_stage());
      }
      pace_next_ = up_packets_.size();
    } else if (paced_) {
      on_pace_timer();
    } else {
      tx_->send(up_packets_, 0, clock_.now_us());
      pace_next_ = up_packets_.size();
    }
    arm_stage_timer(clock_.now_us());
  }

  // Sends what the uplink's pacer allows now (everything while the path is free or not yet
  // measured), then sleeps until it allows more (ddl::PathPacer, as GradientPeer).
  void on_pace_timer() {
    if (state_ != State::kRunning) return;
    const std::uint64_t now = clock_.now_us();
    if (const auto wait_us =
            ddl::send_paced(up_pacer_, *tx_, up_packets_, pace_next_, packet_bytes_, now)) {
      // At least 1 ms ahead (libuv would run a timer due now again in the same pass).
      pace_timer_->start(std::max<std::uint64_t>(1, (*wait_us + 999) / 1000));
      return;
    }
    pace_timer_->stop();
  }

  void on_aggregate_packet(const wire::RtpPacketView& v, std::uint64_t arrival) {
    if (state_ != State::kRunning || !v.stage) return;
    auto chunk = ddl::parse_chunk(v.payload);
    if (!chunk) {
      ++chunks_rejected_;
      return;
    }
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
  // timer, after one more pass over the socket (ddl::StagePeer).
  void after_io(std::uint64_t now) {
    if (state_ != State::kRunning || !sp_->open()) return;
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
      armed_ms_ = ~0ull;
      return;
    }
    const std::uint64_t ms = *at > now ? (*at - now + 999) / 1000 : 0;
    if (ms != armed_ms_ || !stage_timer_->is_active()) {
      stage_timer_->start(ms);
      armed_ms_ = ms;
    }
  }

  void on_stage_timer() {
    if (state_ == State::kRunning) check_stage(clock_.now_us(), true);
  }

  // The stage's deadline, the PDSC-without-chunks close and the relay's silence, at `now`
  // (ddl::StagePeer::on_timer; `allow_grace`: one more I/O pass first).
  void check_stage(std::uint64_t now, bool allow_grace) {
    if (!sp_ || !sp_->open()) return;
    const ddl::StageCheck c = sp_->on_timer(now, allow_grace);
    if (c.closed) {
      finish_stage(*c.closed, now);
      return;
    }
    if (c.silent) {
      finish(core::make_error("nothing from the relay for " + std::to_string(o_.relay_silence_ms) +
                              " ms in stage " + std::to_string(sp_->stage()) + ": " +
                              (c.heard_other_stages ? "the relay is at other stages"
                                                    : "the relay is gone or unreachable")));
      return;
    }
    armed_ms_ = ~0ull;
    arm_stage_timer(now);
  }

  void finish_stage(const ddl::ClosedStage& r, std::uint64_t now) {
    stage_timer_->stop();
    armed_ms_ = ~0ull;
    const std::uint32_t s = r.stage;
    const auto& closed_info = sp_->closed_info();
    const std::span<float> aggregate = sp_->aggregate();
    const std::span<const std::uint16_t> received = sp_->received();
    DdlWorkerStageRow row;
    row.stage = s;
    row.rank = rank_;
    row.train_loss = train_loss_;
    row.received = r.received;
    const ddl::ContributorReport& c = r.contributors[0];
    row.announced =
        c.announced != 0 ? c.announced : (closed_info ? closed_info->downlink_packets : 0u);
    row.lost = row.announced > row.received ? row.announced - row.received : 0;
    row.reception_period_us = static_cast<double>(c.period_us());
    row.partial = sp_->partial();
    row.close_reason = static_cast<std::uint8_t>(r.reason);
    row.deadline_us = r.deadline_budget_us;
    row.filled =
        static_cast<std::uint32_t>(ddl::fill_missing(fill_, plan_, received, aggregate, gradient_));
    if (o_.tap) o_.tap(DdlGradientTap{s, gradient_, aggregate, received});
    sgd_.step(net_.parameters(), aggregate);
    const double probe_loss = net_.evaluate(probe_x_, probe_labels_).loss;
    row.probe_loss = probe_loss;
    row.performance = prev_probe_loss_ - probe_loss;
    prev_probe_loss_ = probe_loss;
    const bool last = s + 1 >= o_.stages;
    const bool evaluate = last || (o_.eval_every != 0 && (s + 1) % o_.eval_every == 0);

    // Report the aggregate's stage to the relay: L, counts, queueing delay, P (PDFB, SRTCP).
    core::StageMeasurement m;
    const core::StageMeasurement& metered = measurements_[s % 4];
    if (metered.stage == s && metered.received != 0) m.queue_delay_us = metered.queue_delay_us;
    m.stage = s;
    m.first_arrival_us = c.first_us;
    m.last_arrival_us = c.last_us;
    m.reception_period_us = row.reception_period_us;
    m.received = row.received;
    m.announced = row.announced;
    ddl::ControlMessage msg;
    msg.sender_ssrc = ssrc_;
    msg.feedback =
        chain::make_feedback(m, row.performance, wire::PdfbMetric::kLossDelta, downlink_ssrc_);
    send_control(msg);

    // The worker's own egress controller: this stage's P joins the relay's report on the uplink.
    EgressEntry& e = egress_ring_[s % kEgressRing];
    if (e.used && e.stage == s) {
      e.have_p = true;
      e.p = row.performance;
      row.uplink_rate = e.rate;
      if (e.have_report) {
        row.uplink_period_us = e.report.reception_period_us;
        row.uplink_received = e.report.packets_received;
      }
      feed_egress(e);
    }
    if (egress_ && s >= o_.report_timeout_stages) {
      EgressEntry& old = egress_ring_[(s - o_.report_timeout_stages) % kEgressRing];
      if (old.used && old.stage == s - o_.report_timeout_stages && !old.fed) {
        egress_->on_report_missing(old.stage);
        old.fed = true;
      }
    }
    row.uplink_planned = up_planned_;
    row.uplink_discarded = up_discarded_;
    row.stage_us = now > sp_->stage_started_us() ? now - sp_->stage_started_us() : 0;

    summary_.stages = s + 1;
    summary_.chunks_filled += row.filled;
    summary_.chunks_lost += row.lost;
    if (last) {
      if (evaluate) evaluate_test(row);
      if (on_stage_) on_stage_(row);
      send_bye();
      finish(core::Ok{});
      return;
    }
    // The next gradient goes out before the test evaluation (tens to hundreds of ms), so that
    // evaluating overlaps the others' work instead of making this worker a straggler that the
    // relay's deadline leaves out. The parameters stay those after this stage's step until the
    // next aggregate arrives, so the evaluation is the same either way.
    begin_stage(s + 1);
    if (evaluate && state_ == State::kRunning) evaluate_test(row);
    if (on_stage_) on_stage_(row);
  }

  void evaluate_test(DdlWorkerStageRow& row) {
    row.test_accuracy =
        (test_subset_.size() != 0 ? net_.evaluate(test_subset_) : net_.evaluate(data_->test))
            .accuracy;
    summary_.final_accuracy = row.test_accuracy;
  }

  void on_uplink_report(const wire::PdfbFeedback& fb) {
    // The relay's reception of this worker's gradient: the uplink's delivery rate, for its pacer.
    if (fb.media_ssrc == ssrc_) {
      (void)up_pacer_.on_report(fb.packets_received, packet_bytes_, fb.reception_period_us);
    }
    EgressEntry& e = egress_ring_[fb.stage_id % kEgressRing];
    if (!e.used || e.stage != fb.stage_id || e.have_report) return;
    e.have_report = true;
    e.report = chain::to_stage_report(fb);
    feed_egress(e);
  }

  void feed_egress(EgressEntry& e) {
    if (!egress_ || e.fed || !e.have_p || !e.have_report) return;
    core::StageReport r = e.report;
    r.performance = e.p;
    r.rate_used = e.rate;
    (void)egress_->on_report(r);
    e.fed = true;
  }

  // ---- the end ----

  void vanish() {
    // As if the process died: no BYE, no further packets.
    finish(core::make_error("vanished at stage " + std::to_string(*o_.vanish_at_stage) +
                            " (test hook)"));
  }

  void close_handles() {
    if (join_timer_) join_timer_->stop();
    if (stage_timer_) stage_timer_->stop();
    if (pace_timer_) pace_timer_->stop();
    if (socket_) socket_->close();
  }

  void finish(const core::Status& st) {
    if (state_ == State::kDone) return;
    state_ = State::kDone;
    summary_.rank = rank_;
    if (rx_) summary_.srtp_failures += rx_->stats().srtp_auth_failed;
    summary_.srtp_failures += control_errors_;
    if (sp_) summary_.late_chunks = sp_->collector().counters().late;
    summary_.chunks_rejected = chunks_rejected_ + (sp_ ? sp_->collector().counters().rejected : 0);
    if (tx_) summary_.send_drops = tx_->stats().send_drops;
    summary_.ssrc_mismatches = ssrc_mismatches_;
    summary_.stale_answers = stale_answers_;
    summary_.callback_errors = boundary_.total();
    close_handles();
    if (on_done_) on_done_(st, summary_);
  }

  net::EventLoop& loop_;
  const net::Clock& clock_;
  std::shared_ptr<const ddl::train::FashionMnist> data_;
  DdlWorkerOptions o_;
  OnStage on_stage_;
  OnDone on_done_;

  // Training.
  ddl::train::Mlp net_;
  ddl::train::Sgd sgd_;
  std::vector<std::uint32_t> pick_;
  std::optional<ddl::train::BatchSampler> sampler_;
  Eigen::MatrixXf probe_x_, batch_x_;
  std::vector<std::uint8_t> probe_labels_, batch_labels_;
  ddl::train::Dataset test_subset_;
  std::vector<float> gradient_;
  double prev_probe_loss_ = 0.0;
  double train_loss_ = 0.0;

  // Job.
  State state_ = State::kIdle;
  std::uint32_t ssrc_;
  std::uint32_t downlink_ssrc_ = 0;
  std::uint16_t rank_ = ddl::kAnyRank;
  std::uint16_t workers_ = 0;
  ddl::ChunkPlan plan_;
  ddl::MissingPolicy fill_ = ddl::MissingPolicy::kZero;
  bool egress_discard_ = false;
  bool paced_ = false;
  std::uint64_t worker_nonce_;               // this worker's: every answer to it echoes it
  std::uint64_t job_nonce_ = 0;              // the relay's, from its challenge (0: not yet)
  std::optional<std::uint32_t> relay_ssrc_;  // the relay's control SSRC, from that challenge
  std::uint64_t join_started_us_ = 0;
  std::uint64_t last_join_sent_us_ = 0;
  std::uint64_t last_from_relay_us_ = 0;

  // Network.
  std::unique_ptr<net::UdpEndpoint> socket_;
  std::unique_ptr<net::Timer> join_timer_, stage_timer_, pace_timer_;
  std::unique_ptr<ddl::ControlChannel> control_;
  std::unique_ptr<chain::StageReceiver> rx_;
  std::unique_ptr<ddl::StagePeer> sp_;
  std::unique_ptr<chain::StageTransmitter> tx_;
  std::array<core::StageMeasurement, 4> measurements_{};
  std::size_t payload_size_ = 0;
  std::size_t packet_bytes_ = 0;  // one gradient datagram on the wire (for the pacer)
  ddl::PathPacer up_pacer_;       // the uplink's pacing at its path's rate
  bool warned_ended_ = false;
  std::vector<std::uint8_t> up_payloads_;
  std::vector<chain::OutgoingPacket> up_packets_;
  std::vector<std::uint8_t> importance_;
  std::size_t pace_next_ = 0;
  std::uint64_t armed_ms_ = ~0ull;

  // Current stage.
  double up_rate_ = 0.0;
  std::uint32_t up_planned_ = 0, up_discarded_ = 0;

  // Egress control.
  std::unique_ptr<core::RateController> egress_;
  std::array<EgressEntry, kEgressRing> egress_ring_{};

  // Counters.
  std::uint64_t datagrams_ = 0;
  std::uint64_t foreign_datagrams_ = 0;
  std::uint64_t control_errors_ = 0;
  std::uint64_t chunks_rejected_ = 0;
  std::uint64_t ssrc_mismatches_ = 0;
  std::uint64_t stale_answers_ = 0;
  DdlWorkerSummary summary_;
  net::CallbackGuard boundary_{kLog};
};

DdlWorker::DdlWorker(net::EventLoop& loop, const net::Clock& clock,
                     std::shared_ptr<const ddl::train::FashionMnist> data, DdlWorkerOptions options,
                     OnStage on_stage, OnDone on_done)
    : impl_(std::make_unique<Impl>(loop, clock, std::move(data), std::move(options),
                                   std::move(on_stage), std::move(on_done))) {}

DdlWorker::~DdlWorker() = default;

core::Status DdlWorker::start() {
  return impl_->start();
}

void DdlWorker::stop() {
  impl_->stop();
}

net::SocketAddress DdlWorker::local_address() const {
  return impl_->local_address();
}

void DdlWorker::poll() {
  impl_->poll();
}

std::uint64_t DdlWorker::datagrams_received() const {
  return impl_->datagrams_received();
}

}  // namespace predrop::ddl::train

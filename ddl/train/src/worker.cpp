// The DDL training worker (see predrop/ddl/train/worker.hpp and docs/ddl-mode.md).
#include "predrop/ddl/train/worker.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "predrop/core/rate_controller.hpp"
#include "predrop/ddl/relay_client.hpp"
#include "predrop/ddl/train/mlp.hpp"
#include "predrop/ddl/train/random.hpp"

namespace predrop::ddl::train {

namespace {

constexpr const char* kLog = "ddl-worker";
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

class DdlWorker::Impl final : public ddl::RelayClientListener {
 public:
  Impl(net::EventLoop& loop, const net::Clock& clock,
       std::shared_ptr<const ddl::train::FashionMnist> data, DdlWorkerOptions o, OnStage on_stage,
       OnDone on_done)
      : data_(std::move(data)),
        o_(std::move(o)),
        on_stage_(std::move(on_stage)),
        on_done_(std::move(on_done)),
        net_(ddl::train::MlpShape{}, o_.seed),
        sgd_(ddl::train::SgdConfig{o_.learning_rate, o_.momentum, 0.0f}, net_.parameter_count()) {
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
    client_ = std::make_unique<ddl::RelayClient>(loop, clock, client_options(), *this);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;
  ~Impl() override = default;

  core::Status start() {
    auto st = client_->start();
    if (!st) return core::make_error("worker: " + st.error().message);
    return st;
  }
  void stop() { client_->leave(core::make_error("stopped")); }
  void poll() { client_->poll(); }
  net::SocketAddress local_address() const { return client_->local_address(); }
  std::uint64_t datagrams_received() const { return client_->counters().datagrams; }

 private:
  // Per-stage inputs of the egress controller: P comes from this worker, L and the counts from
  // the relay's PDFB about the uplink; the controller gets them when both are here.
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

  ddl::RelayClientOptions client_options() const {
    ddl::RelayClientOptions c;
    c.relay = o_.relay;
    c.bind = o_.bind;
    c.key = o_.key;
    c.rank = o_.rank;
    c.model_seed = o_.seed;
    c.tensor_elements = static_cast<std::uint32_t>(net_.parameter_count());
    c.join_timeout_ms = o_.join_timeout_ms;
    c.relay_silence_ms = o_.relay_silence_ms;
    c.stages = o_.stages;
    c.socket_buffer_bytes = o_.socket_buffer_bytes;
    c.egress_discard = true;
    c.discard = o_.egress_discard;
    c.discard_seed = o_.discard_seed;
    c.impairment = o_.impairment;
    c.log_name = kLog;
    return c;
  }

  // ---- the relay client's events ----

  core::Status on_joined(const ddl::RelayJob& job) override {
    rank_ = job.rank;
    if (job.egress_discard) {
      auto c = core::make_rate_controller(o_.egress_policy);
      if (!c) return core::make_error("egress controller: " + c.error().message);
      egress_ = std::move(c.value());
    }
    // Data: the rank-th strided shard of the seeded pick.
    const auto positions = ddl::train::shard_indices(pick_.size(), rank_, job.workers,
                                                     ddl::train::ShardMode::kStrided);
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
    return core::Ok{};
  }

  void on_started(const ddl::RelayJob& job) override { begin_stage(job.start_stage); }

  void on_stage_closed(const ddl::RelayStage& st) override {
    const std::uint32_t s = st.stage;
    DdlWorkerStageRow row;
    row.stage = s;
    row.rank = rank_;
    row.train_loss = train_loss_;
    row.reception_period_us = st.reception_period_us;
    row.received = st.received;
    row.announced = st.announced;
    row.lost = st.lost;
    row.filled = st.filled;
    row.partial = st.partial;
    row.close_reason = static_cast<std::uint8_t>(st.close_reason);
    row.deadline_us = st.deadline_us;
    row.uplink_rate = st.uplink_rate;
    row.uplink_planned = st.uplink_planned;
    row.uplink_discarded = st.uplink_discarded;
    row.stage_us = st.closed_us > st.begin_us ? st.closed_us - st.begin_us : 0;
    if (o_.tap) o_.tap(DdlGradientTap{s, st.gradient, st.aggregate, st.got});
    sgd_.step(net_.parameters(), st.aggregate);
    const double probe_loss = net_.evaluate(probe_x_, probe_labels_).loss;
    row.probe_loss = probe_loss;
    row.performance = prev_probe_loss_ - probe_loss;
    prev_probe_loss_ = probe_loss;
    // Report the aggregate's stage to the relay: L, counts, queueing delay, P (PDFB, SRTCP).
    (void)client_->report(s, row.performance);
    egress_p(s, st.uplink_rate, row);
    summary_.stages = s + 1;
    summary_.chunks_filled += row.filled;
    summary_.chunks_lost += row.lost;
    const bool last = s + 1 >= o_.stages;
    const bool evaluate = last || (o_.eval_every != 0 && (s + 1) % o_.eval_every == 0);
    if (last) {
      if (evaluate) evaluate_test(row);
      if (on_stage_) on_stage_(row);
      client_->leave(core::Ok{});
      return;
    }
    // The next gradient goes out before the test evaluation (tens to hundreds of ms), so that
    // evaluating overlaps the others' work instead of making this worker a straggler that the
    // relay's deadline leaves out. The parameters stay those after this stage's step until the
    // next aggregate arrives, so the evaluation is the same either way.
    begin_stage(s + 1);
    if (evaluate && !client_->ended()) evaluate_test(row);
    if (on_stage_) on_stage_(row);
  }

  void on_uplink_report(const core::StageReport& r) override {
    EgressEntry* e = egress_entry(r.stage);
    if (e == nullptr || e->have_report) return;
    e->have_report = true;
    e->report = r;
    feed_egress(*e);
  }

  void on_ended(const core::Status& st) override {
    const ddl::RelayClientCounters c = client_->counters();
    summary_.rank = rank_;
    summary_.srtp_failures = c.srtp_failures;
    summary_.late_chunks = c.late_chunks;
    summary_.chunks_rejected = c.chunks_rejected;
    summary_.send_drops = c.send_drops;
    summary_.join_requests = c.join_requests;
    summary_.ssrc_mismatches = c.ssrc_mismatches;
    summary_.stale_answers = c.stale_answers;
    summary_.callback_errors = c.callback_errors;
    if (on_done_) on_done_(st, summary_);
  }

  // ---- one stage ----

  // Computes this stage's gradient and hands it to the relay client (which may open a later
  // stage: a worker further behind than the collector's window skips to the relay's current
  // stage, and its model misses the skipped stages' updates).
  void begin_stage(std::uint32_t s) {
    if (o_.vanish_at_stage && s >= *o_.vanish_at_stage) {
      // As if the process died: no BYE, no further packets.
      client_->vanish(core::make_error("vanished at stage " + std::to_string(*o_.vanish_at_stage) +
                                       " (test hook)"));
      return;
    }
    const auto batch = sampler_->next();
    ddl::train::gather_batch(data_->train, batch, batch_x_, batch_labels_);
    train_loss_ = net_.loss_and_gradient(batch_x_, batch_labels_, gradient_);
    const double rate = egress_ ? egress_->rate() : 0.0;
    auto opened = client_->begin_stage(s, gradient_, rate);
    if (!opened && !client_->ended()) client_->leave(opened.error());
  }

  void evaluate_test(DdlWorkerStageRow& row) {
    row.test_accuracy =
        (test_subset_.size() != 0 ? net_.evaluate(test_subset_) : net_.evaluate(data_->test))
            .accuracy;
    summary_.final_accuracy = row.test_accuracy;
  }

  // ---- the worker's own egress controller ----

  // The entry of stage `s`: the ring slot is taken over by a newer stage, never by an older one.
  EgressEntry* egress_entry(std::uint32_t s) {
    if (!egress_) return nullptr;
    EgressEntry& e = egress_ring_[s % kEgressRing];
    if (e.used && e.stage == s) return &e;
    if (e.used && static_cast<std::int32_t>(s - e.stage) < 0) return nullptr;
    e = EgressEntry{};
    e.stage = s;
    e.used = true;
    return &e;
  }

  // This stage's P joins the relay's report on the uplink; a stage report_timeout_stages back
  // whose report never came is missing.
  void egress_p(std::uint32_t s, double rate, DdlWorkerStageRow& row) {
    EgressEntry* e = egress_entry(s);
    if (e == nullptr) return;
    e->have_p = true;
    e->p = row.performance;
    e->rate = rate;
    if (e->have_report) {
      row.uplink_period_us = e->report.reception_period_us;
      row.uplink_received = e->report.packets_received;
    }
    feed_egress(*e);
    if (s >= o_.report_timeout_stages) {
      EgressEntry& old = egress_ring_[(s - o_.report_timeout_stages) % kEgressRing];
      if (old.used && old.stage == s - o_.report_timeout_stages && !old.fed) {
        egress_->on_report_missing(old.stage);
        old.fed = true;
      }
    }
  }

  void feed_egress(EgressEntry& e) {
    if (!egress_ || e.fed || !e.have_p || !e.have_report) return;
    core::StageReport r = e.report;
    r.performance = e.p;
    r.rate_used = e.rate;
    (void)egress_->on_report(r);
    e.fed = true;
  }

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
  std::uint16_t rank_ = ddl::kAnyRank;
  std::unique_ptr<core::RateController> egress_;
  std::array<EgressEntry, kEgressRing> egress_ring_{};
  DdlWorkerSummary summary_;
  std::unique_ptr<ddl::RelayClient> client_;  // last: destroyed first, while the rest lives
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

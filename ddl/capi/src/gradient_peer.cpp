// The worker side of the relay protocol for external trainers (gradient_peer.hpp): an adapter
// of ddl::RelayClient, the one client of the relay, shared with the C++ trainer's worker. What
// differs from that worker is only the host: the caller submits each stage's gradient and gives
// its P later (docs/ddl-torch.md).
#include "predrop/ddl/capi/gradient_peer.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "predrop/ddl/relay_client.hpp"

namespace predrop::ddl::capi {

namespace {

constexpr const char* kLog = "ddl-peer";

RelayClientOptions client_options(const GradientPeerOptions& o) {
  if (o.tensor_elements == 0) {
    throw std::invalid_argument("ddl peer: the gradient has no elements");
  }
  RelayClientOptions c;
  c.relay = o.relay;
  c.bind = o.bind;
  c.key = o.key;
  c.rank = o.rank;
  c.model_seed = o.model_seed;
  c.tensor_elements = o.tensor_elements;
  c.join_timeout_ms = o.join_timeout_ms;
  c.start_timeout_ms = o.start_timeout_ms;
  c.relay_silence_ms = o.relay_silence_ms;
  c.stages = o.stages;
  c.idle_close_ms = o.idle_close_ms;
  c.socket_buffer_bytes = o.socket_buffer_bytes;
  c.gso = o.gso;
  c.log_name = kLog;
  return c;
}

}  // namespace

class GradientPeer::Impl final : public RelayClientListener {
 public:
  Impl(net::EventLoop& loop, const net::Clock& clock, const GradientPeerOptions& o,
       OnStart on_start, OnStage on_stage, OnDone on_done)
      : on_start_(std::move(on_start)),
        on_stage_(std::move(on_stage)),
        on_done_(std::move(on_done)),
        client_(loop, clock, client_options(o), *this) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;
  ~Impl() override = default;

  core::Status start() { return client_.start(); }

  core::Result<std::uint32_t> submit(std::span<const float> gradient) {
    if (done_) return core::make_error(end_reason_);
    return client_.begin_stage(client_.next_stage(), gradient);
  }

  core::Status report(std::uint32_t stage, double performance) {
    if (done_) return core::make_error(end_reason_);
    return client_.report(stage, performance);
  }

  void close() { client_.leave(core::Ok{}); }
  void poll() { client_.poll(); }
  bool done() const { return done_; }

 private:
  core::Status on_joined(const RelayJob& /*job*/) override { return core::Ok{}; }

  void on_started(const RelayJob& j) override {
    GradientJob job;
    job.rank = j.rank;
    job.workers = j.workers;
    job.start_stage = j.start_stage;
    job.chunk_elements = static_cast<std::uint16_t>(j.plan.chunk_elements());
    job.chunks = static_cast<std::uint32_t>(j.plan.size());
    job.fill_own = j.fill == MissingPolicy::kOwn;
    job.stage_deadline_ms = j.stage_deadline_ms;
    if (on_start_) on_start_(job);
  }

  void on_stage_closed(const RelayStage& st) override {
    GradientStage row;
    row.stage = st.stage;
    row.received = st.received;
    row.announced = st.announced;
    row.lost = st.lost;
    row.filled = st.filled;
    row.partial = st.partial;
    row.contributors = st.contributors;
    row.close_reason = static_cast<std::uint8_t>(st.close_reason);
    row.deadline_us = st.deadline_us;
    row.reception_period_us = st.reception_period_us;
    row.stage_us = st.closed_us > st.begin_us ? st.closed_us - st.begin_us : 0;
    row.begin_us = st.begin_us;
    row.uplink_sent_us = st.uplink_sent_us;
    row.pdsc_us = st.pdsc_us;
    row.first_chunk_us = st.first_chunk_us;
    row.last_chunk_us = st.last_chunk_us;
    row.closed_us = st.closed_us;
    if (on_stage_) on_stage_(row, st.aggregate);
  }

  void on_ended(const core::Status& st) override {
    done_ = true;
    end_reason_ = st ? std::string("closed") : st.error().message;
    if (on_done_) on_done_(st);
  }

  OnStart on_start_;
  OnStage on_stage_;
  OnDone on_done_;
  bool done_ = false;
  std::string end_reason_;
  RelayClient client_;  // last: destroyed first
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

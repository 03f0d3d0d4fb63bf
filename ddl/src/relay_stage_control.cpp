#include "relay_stage_control.hpp"

#include <utility>

#include "predrop/ddl/protocol.hpp"

namespace predrop::ddl {

RelayStageControl::RelayStageControl(std::optional<std::uint32_t> deadline_ms)
    : deadline_(stage_deadline_config(deadline_ms.value_or(0))) {}

void RelayStageControl::attach_timer(net::EventLoop& loop, std::function<void()> on_timer) {
  timer_ = std::make_unique<net::Timer>(loop, [this, on_timer = std::move(on_timer)] {
    armed_at_ = 0;
    on_timer();
  });
}

void RelayStageControl::stop_timer() {
  if (timer_) timer_->stop();
}

void RelayStageControl::rebuild(const ChunkPlan& plan, std::uint32_t contributors,
                                std::uint32_t stage) {
  if (rx_) {
    const ReceiverCounters& c = rx_->counters();
    base_.received += c.received;
    base_.late += c.late;
    base_.too_early += c.too_early;
    base_.duplicate += c.duplicate;
    base_.rejected += c.rejected;
  }
  if (contributors == 0) {
    rx_.reset();
    return;
  }
  rx_ = std::make_unique<StageCollector>(plan, contributors, deadline_);
  rx_->start(stage);
}

std::optional<std::uint32_t> RelayStageControl::current_stage() const {
  return rx_ ? rx_->current_stage() : std::nullopt;
}

ChunkOutcome RelayStageControl::on_chunk(std::uint32_t stage, std::uint32_t contributor,
                                         std::uint16_t announced, const ChunkView& chunk,
                                         std::uint64_t now) {
  return rx_->on_chunk(stage, contributor, announced, chunk, now);
}

void RelayStageControl::poll(std::uint64_t now, bool judge_deadline, std::span<float> average,
                             std::span<std::uint16_t> chunk_contributors, const OnClose& on_close) {
  while (rx_) {
    std::uint64_t t = now;
    if (!judge_deadline) {
      if (const auto at = rx_->deadline_at_us(); at && t >= *at) t = *at - 1;
    }
    auto r = rx_->poll(t, average, chunk_contributors);
    if (!r) break;
    if (!on_close(*r, now)) return;
  }
  arm(now);
}

void RelayStageControl::arm(std::uint64_t now) {
  if (!rx_ || !timer_) return;
  const auto at = rx_->deadline_at_us();
  if (!at) {
    timer_->stop();
    armed_at_ = 0;
    return;
  }
  if (*at == armed_at_ && timer_->is_active()) return;
  armed_at_ = *at;
  timer_->start(*at > now ? (*at - now + 999) / 1000 : 0);
}

bool RelayStageControl::timer_fired(std::uint64_t now) {
  if (!rx_) return false;
  const auto at = rx_->deadline_at_us();
  if (at && now >= *at && !grace_given_) {
    grace_given_ = true;
    armed_at_ = *at;
    timer_->start(1);
    return false;
  }
  grace_given_ = false;
  return true;
}

ReceiverCounters RelayStageControl::counters() const {
  ReceiverCounters c = base_;
  if (rx_) {
    const ReceiverCounters& r = rx_->counters();
    c.received += r.received;
    c.late += r.late;
    c.too_early += r.too_early;
    c.duplicate += r.duplicate;
    c.rejected += r.rejected;
  }
  return c;
}

}  // namespace predrop::ddl

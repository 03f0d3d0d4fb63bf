#include "predrop/sim/media_flow.hpp"

#include "predrop/core/discard_curve.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace predrop::sim {

namespace {
// Receiver clocks start here, so that no arrival time is 0 (the meter's "none").
constexpr SimTime kEpochUs = 10'000'000;
constexpr std::size_t kRing = 64;
constexpr SimTime kPollUs = 20'000;  // the measuring client's poll timer
}  // namespace

struct MediaFlow::Stage {
  std::uint32_t stage = UINT32_MAX;
  std::uint32_t block = 0;
  SimTime start_us = 0;
  SimTime end_us = 0;
  std::vector<std::uint8_t> drop;
  std::vector<std::uint8_t> sent;
  std::vector<std::uint8_t> arrived;
  std::vector<SendInfo> send_order;
  std::uint32_t discarded = 0;
  double planned_rate = 0;
  double rest_rate = 0;
  unsigned replans = 0;
  std::uint64_t bytes_before = 0;
  std::uint64_t sent_bytes = 0;
  std::uint32_t cursor = 0;  ///< Next packet to hand over (earlier ones are sent or discarded).
  bool settled = false;
  std::size_t record = 0;  ///< Index in records_.

  double rate_used() const {
    return replans > 0 && !drop.empty()
               ? static_cast<double>(discarded) / static_cast<double>(drop.size())
               : planned_rate;
  }
};

MediaFlow::MediaFlow(Network& net, MediaConfig config, FlowPath path, std::string name)
    : net_(net),
      config_(std::move(config)),
      id_(net.add_flow(*this, path, std::move(name))),
      planner_(config_.discard),
      meter_(config_.meter, [this](const core::StageMeasurement& m) { on_measurement(m); }),
      alert_detector_(core::StageAlertConfig{config_.alert_queue_us}) {
  auto c = core::make_rate_controller(config_.policy);
  if (!c) throw std::invalid_argument(c.error().message);
  controller_ = std::move(c.value());
  if (config_.coupled) (void)controller_->couple(config_.coupled);
  if (!config_.clip || config_.clip->blocks.empty()) throw std::invalid_argument("empty clip");
  for (std::size_t i = 0; i < kRing; ++i) {
    ring_.push_back(std::make_unique<Stage>());
  }
}

MediaFlow::~MediaFlow() = default;

void MediaFlow::start() {
  next_start_us_ = config_.start_us;
  net_.events().at(next_start_us_, [this] { begin_stage(); });
}

MediaFlow::Stage* MediaFlow::stage_state(std::uint32_t stage) {
  Stage& s = *ring_[stage % kRing];
  return s.stage == stage ? &s : nullptr;
}

std::span<const std::uint64_t> MediaFlow::discard_curve(const ClipBlock& b, std::size_t first) {
  if (config_.discard != core::DiscardPolicy::kPriority) return {};
  const auto importance = std::span(b.importance).subspan(first);
  order_.resize(importance.size());
  removable_.resize(importance.size() + 1);
  return core::discard_curve(
      importance, [&](std::size_t i) { return b.packets[first + i].bytes; }, order_, removable_);
}

void MediaFlow::begin_stage() {
  SimTime now = net_.events().now();
  if (config_.pause_from_us >= 0 && now >= config_.pause_from_us && now < config_.pause_until_us) {
    // Paused: the next block starts when PLAY comes, and the policy hears how long it was idle
    // (as the server's StreamSession::play tells it). The pause falls between two blocks here,
    // so no block is cut by it (on the server the block in flight is, and its report is kept
    // from the policy).
    stage_open_ = false;
    controller_->on_pause();
    next_start_us_ = config_.pause_until_us;
    net_.events().at(next_start_us_, [this] {
      controller_->on_resume(static_cast<double>(config_.pause_until_us - config_.pause_from_us));
      begin_stage();
    });
    return;
  }
  if (now >= config_.stop_us) {
    stage_open_ = false;
    return;
  }
  if (!polling_) {
    polling_ = true;
    net_.events().at(now + kPollUs, [this] { poll(); });
  }
  check_missing();
  if (stage_open_) {
    // What the pacer still holds of the previous block goes now, before the new block.
    if (Stage* prev = stage_state(current_)) {
      while (prev->cursor < prev->drop.size()) {
        send_packet(current_, prev->cursor++);
      }
    }
  }
  const std::uint32_t stage = next_stage_++;
  const std::uint32_t block = static_cast<std::uint32_t>(stage % config_.clip->blocks.size());
  const ClipBlock& b = config_.clip->blocks[block];
  Stage& s = *ring_[stage % kRing];
  if (s.stage != UINT32_MAX && !s.settled) {
    // The ring wrapped over an unsettled stage: settle it as missing.
    (void)controller_->on_report_missing(s.stage);
    records_[s.record].missing = true;
  }
  s = Stage{};
  s.stage = stage;
  s.block = block;
  s.start_us = now;
  s.end_us = now + b.duration_us;
  s.bytes_before = bytes_sent_;
  s.drop.assign(b.packets.size(), 0);
  s.sent.assign(b.packets.size(), 0);
  s.arrived.assign(b.packets.size(), 0);

  core::StageStart next;
  next.stage = stage;
  next.block_bytes = b.bytes;
  next.block_duration_us = static_cast<double>(b.duration_us);
  next.bytes_before = bytes_sent_;
  next.packets = static_cast<std::uint32_t>(b.packets.size());
  next.removable = discard_curve(b, 0);
  const double rate = controller_->rate_for_next(next);
  s.discarded = static_cast<std::uint32_t>(planner_.plan(rate, b.importance, s.drop));
  s.planned_rate = s.rest_rate = rate;
  s.record = records_.size();
  BlockRecord r;
  r.stage = stage;
  r.block = block;
  r.start_us = now;
  r.end_us = s.end_us;
  r.planned_rate = rate;
  r.packets = static_cast<std::uint32_t>(b.packets.size());
  r.block_bytes = b.bytes;
  records_.push_back(r);
  current_ = stage;
  stage_open_ = true;
  // The block's leading burst (as the server's session does): the pacer's bucket starts full,
  // or empty when the burst is to be paid back (core::PacingLimit::repay_burst).
  const auto pacing = controller_->pacing();
  next_free_us_ = pacing && pacing->repay_burst ? std::max(next_free_us_, now) : 0;
  lead_bytes_ = 0.0;
  pump();
  next_start_us_ = s.end_us;
  net_.events().at(next_start_us_, [this] { begin_stage(); });
}

void MediaFlow::pump() {
  pump_scheduled_ = false;
  if (!stage_open_) return;
  Stage* s = stage_state(current_);
  if (s == nullptr) return;
  const ClipBlock& b = config_.clip->blocks[s->block];
  const SimTime now = net_.events().now();
  while (s->cursor < b.packets.size()) {
    const std::uint32_t i = s->cursor;
    const SimTime due = s->start_us + b.packets[i].offset_us;
    if (s->drop[i]) {
      ++s->cursor;
      continue;
    }
    SimTime ready = due;
    const auto pacing = controller_->pacing();
    const bool lead =
        pacing && pacing->rate > 0.0 && lead_bytes_ + b.packets[i].bytes <= pacing->burst_bytes;
    if (lead) {
      ready = now;  // the block's leading burst goes at once (as the server's session sends it)
      lead_bytes_ += b.packets[i].bytes;
    } else if (pacing && pacing->rate > 0.0) {
      ready = std::max(ready, next_free_us_);
    }
    if (ready > now) {
      if (!pump_scheduled_) {
        pump_scheduled_ = true;
        net_.events().at(ready, [this] { pump(); });
      }
      return;
    }
    send_packet(current_, i);
    ++s->cursor;
    if (pacing && pacing->rate > 0.0) {
      next_free_us_ = static_cast<SimTime>(
          core::next_pacing_time(static_cast<double>(next_free_us_), static_cast<double>(now),
                                 static_cast<double>(b.packets[i].bytes), *pacing));
    }
  }
}

void MediaFlow::send_packet(std::uint32_t stage, std::uint32_t index) {
  Stage* s = stage_state(stage);
  if (s == nullptr || index >= s->drop.size() || s->drop[index]) return;
  const ClipPacket& p = config_.clip->blocks[s->block].packets[index];
  const auto count =
      static_cast<std::uint16_t>(std::min<std::size_t>(s->drop.size() - s->discarded, 0xffff));
  const auto sent_index = static_cast<std::uint32_t>(s->send_order.size());
  s->send_order.push_back(SendInfo{index, count});
  s->sent[index] = 1;
  s->sent_bytes += p.bytes;
  bytes_sent_ += p.bytes;
  net_.send(Packet{id_, p.bytes, 0, 0, (static_cast<std::uint64_t>(stage) << 32) | sent_index});
}

void MediaFlow::on_receive(const Packet& p) {
  const auto stage = static_cast<std::uint32_t>(p.tag >> 32);
  const auto sent_index = static_cast<std::uint32_t>(p.tag & 0xffffffffu);
  Stage* s = stage_state(stage);
  if (s == nullptr || sent_index >= s->send_order.size()) return;
  const SendInfo& info = s->send_order[sent_index];
  s->arrived[info.packet] = 1;
  const SimTime now = net_.events().now();
  core::PacketArrival a;
  a.stage = stage;
  a.index = static_cast<std::uint16_t>(sent_index);
  a.count = info.count;
  a.arrival_us = static_cast<std::uint64_t>(now + kEpochUs);
  a.one_way_delay_us = now - p.sent_us;
  a.bytes = p.bytes;
  meter_.on_packet(a);
  maybe_alert(a);
}

void MediaFlow::maybe_alert(const core::PacketArrival& a) {
  const auto alert = alert_detector_.on_packet(a, meter_);
  if (!alert) return;
  alerts_.push_back(*alert);
  net_.send_back(Packet{id_, config_.report_bytes, 0, 0, kAlertTag | (alerts_.size() - 1)});
}

void MediaFlow::poll() {
  const SimTime now = net_.events().now();
  meter_.poll(static_cast<std::uint64_t>(now + kEpochUs));
  check_missing();
  if (now < config_.stop_us + 5'000'000) {
    net_.events().at(now + kPollUs, [this] { poll(); });
  } else {
    polling_ = false;
  }
}

double MediaFlow::quality_of(const Stage& s) const {
  const ClipBlock& b = config_.clip->blocks[s.block];
  // Per frame (send order = decode order): packets in total, and how many arrived.
  std::vector<std::uint32_t> total(b.frames, 0);
  std::vector<std::uint32_t> got(b.frames, 0);
  std::vector<std::uint8_t> is_video(b.frames, 0);
  std::vector<std::uint8_t> is_ref(b.frames, 0);
  for (std::size_t i = 0; i < b.packets.size(); ++i) {
    const ClipPacket& p = b.packets[i];
    ++total[p.frame];
    if (s.arrived[i]) ++got[p.frame];
    is_video[p.frame] = p.video;
    is_ref[p.frame] = p.reference;
  }
  double mse = 0;
  unsigned pictures = 0;
  unsigned frozen = 0;  // pictures in a row not shown
  bool broken = false;
  for (std::uint32_t f = 0; f < b.frames; ++f) {
    if (!is_video[f]) continue;
    ++pictures;
    const bool intact = got[f] == total[f];
    const bool absent = got[f] == 0;
    // A frame that never arrived is not shown (the previous picture stays); one that arrived is
    // damaged if any of its packets or any reference before it in the GOP is missing.
    frozen = absent ? frozen + 1 : 0;
    if (absent) {
      // The longer a picture stays up, the further the real one has moved away from it.
      mse += config_.quality.mse_skipped * std::min(frozen, 10u);
    } else if (broken || !intact) {
      mse += config_.quality.mse_corrupt;
    } else {
      mse += config_.quality.mse_intact;
    }
    if (is_ref[f] && !intact) broken = true;
  }
  if (pictures == 0) return 60.0;
  return std::min(60.0, 10.0 * std::log10(255.0 * 255.0 / (mse / pictures)));
}

void MediaFlow::on_measurement(const core::StageMeasurement& m) {
  Stage* s = stage_state(m.stage);
  if (s == nullptr) return;
  core::StageReport r;
  r.stage = m.stage;
  r.reception_period_us = m.reception_period_us;
  r.packets_received = m.received;
  r.packets_announced = m.announced;
  r.queue_delay_us = m.queue_delay_us;
  r.path = m.path;
  const std::uint32_t stage = m.stage;
  net_.events().at(net_.events().now() + config_.settle_us, [this, r, stage]() mutable {
    Stage* st = stage_state(stage);
    if (st == nullptr) return;
    r.performance = quality_of(*st);
    BlockRecord& rec = records_[st->record];
    rec.psnr_db = r.performance;
    rec.reception_period_us = r.reception_period_us;
    rec.queue_us = r.queue_delay_us.value_or(0.0);
    reports_.push_back(r);
    net_.send_back(Packet{id_, config_.report_bytes, 0, 0, reports_.size() - 1});
  });
}

void MediaFlow::on_feedback(const Packet& p) {
  if ((p.tag & kAlertTag) != 0) {
    const std::uint64_t k = p.tag & ~kAlertTag;
    if (k < alerts_.size() && controller_->on_alert(alerts_[k]) && alerts_[k].stage == current_) {
      replan_current();
    }
    return;
  }
  if (p.tag >= reports_.size()) return;
  core::StageReport report = reports_[p.tag];
  Stage* s = stage_state(report.stage);
  if (s == nullptr || s->settled) return;
  report.rate_used = s->rate_used();
  auto d = controller_->on_report(report);
  if (!d || d->kind == core::DecisionKind::kStale) return;
  s->settled = true;
  BlockRecord& rec = records_[s->record];
  rec.reported = true;
  rec.report_at_us = net_.events().now();
  rec.reason = d->reason;
  rec.estimate = d->capacity_estimate;
  replan_current();
}

void MediaFlow::replan_current() {
  if (!stage_open_) return;
  Stage* s = stage_state(current_);
  if (s == nullptr) return;
  const ClipBlock& b = config_.clip->blocks[s->block];
  const SimTime now = net_.events().now();
  const SimTime elapsed = now - s->start_us;
  const std::size_t cursor = s->cursor;
  if (cursor >= b.packets.size()) return;
  core::StageProgress progress;
  progress.stage = current_;
  progress.elapsed_us = static_cast<double>(elapsed);
  progress.duration_us = static_cast<double>(b.duration_us);
  progress.sent_bytes = s->sent_bytes;
  for (std::size_t i = cursor; i < b.packets.size(); ++i) {
    progress.rest_bytes += b.packets[i].bytes;
  }
  progress.rate = s->rest_rate;
  progress.rest_packets = static_cast<std::uint32_t>(b.packets.size() - cursor);
  progress.removable = discard_curve(b, cursor);
  const auto rate = controller_->rate_for_rest(progress);
  if (!rate) return;
  const std::span<std::uint8_t> mask(s->drop.data() + cursor, b.packets.size() - cursor);
  const auto before = static_cast<std::uint32_t>(std::count(mask.begin(), mask.end(), 1));
  const auto now_dropped = static_cast<std::uint32_t>(
      planner_.plan(*rate, std::span(b.importance).subspan(cursor), mask));
  s->discarded = s->discarded - before + now_dropped;
  s->rest_rate = *rate;
  ++s->replans;
}

void MediaFlow::check_missing() {
  const SimTime now = net_.events().now();
  while (next_missing_check_ < next_stage_) {
    Stage* s = stage_state(next_missing_check_);
    if (s == nullptr) {
      ++next_missing_check_;
      continue;
    }
    if (!s->settled) {
      if (now < s->end_us + config_.report_timeout_us) break;
      s->settled = true;
      records_[s->record].missing = true;
      (void)controller_->on_report_missing(s->stage);
    }
    ++next_missing_check_;
  }
  // Fill in what each finished stage did on the sender's side.
  for (auto& st : ring_) {
    if (st->stage == UINT32_MAX || st->end_us > now) continue;
    BlockRecord& rec = records_[st->record];
    rec.rate = st->drop.empty()
                   ? 0.0
                   : static_cast<double>(st->discarded) / static_cast<double>(st->drop.size());
    rec.discarded = st->discarded;
    rec.sent = static_cast<std::uint32_t>(st->send_order.size());
    rec.sent_bytes = st->sent_bytes;
    std::uint32_t lost = 0;
    for (std::size_t i = 0; i < st->sent.size(); ++i) {
      if (st->sent[i] && !st->arrived[i]) ++lost;
    }
    rec.lost = lost;
  }
}

}  // namespace predrop::sim

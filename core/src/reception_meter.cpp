#include "predrop/core/reception_meter.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace predrop::core {

namespace {
constexpr std::size_t kBitmapWords = 65536 / 64;
}  // namespace

ReceptionMeter::ReceptionMeter(ReceptionMeterConfig config, OnStage on_stage)
    : config_(config),
      on_stage_(std::move(on_stage)),
      stage_min_owd_(std::max(1u, config.base_delay_stages), 0) {
  for (auto& s : slots_) {
    s.seen.assign(kBitmapWords, 0);
  }
  config_.tail_packets = std::clamp(config_.tail_packets, 1u, 16u);
}

void ReceptionMeter::note_later_stage(std::uint32_t stage, std::uint64_t now_us) {
  for (auto& s : slots_) {
    if (s.open && s.stage < stage && s.later_since_us == 0) s.later_since_us = now_us;
  }
}

ReceptionMeter::OpenStage* ReceptionMeter::slot_for(std::uint32_t stage, std::uint64_t now_us) {
  for (auto& s : slots_) {
    if (s.open && s.stage == stage) return &s;
  }
  if (has_closed_ && stage <= last_closed_) return nullptr;  // late
  // Need a free slot: close the oldest open stage if both are taken (it has been overtaken by
  // two newer stages, so its tail is not coming).
  OpenStage* free_slot = nullptr;
  for (auto& s : slots_) {
    if (!s.open) free_slot = &s;
  }
  if (free_slot == nullptr) {
    OpenStage& oldest = slots_[0].stage < slots_[1].stage ? slots_[0] : slots_[1];
    if (stage < oldest.stage) return nullptr;  // older than everything open: late
    close(oldest);
    free_slot = &oldest;
  }
  OpenStage& s = *free_slot;
  std::fill(s.seen.begin(), s.seen.end(), 0);
  s.open = true;
  s.stage = stage;
  s.announced = 0;
  s.received = 0;
  s.duplicates = 0;
  s.first_us = now_us;
  s.last_us = now_us;
  s.later_since_us = 0;
  s.has_owd = false;
  s.tail_count = 0;
  note_later_stage(stage, now_us);
  return &s;
}

void ReceptionMeter::on_packet(const PacketArrival& p) {
  ++stats_.packets;
  if (p.count != 0 && p.index >= p.count) {
    ++stats_.out_of_range;
    return;
  }
  OpenStage* s = slot_for(p.stage, p.arrival_us);
  if (s == nullptr) {
    ++stats_.late;
    return;
  }
  auto& word = s->seen[p.index / 64];
  const std::uint64_t bit = std::uint64_t{1} << (p.index % 64);
  if (word & bit) {
    ++s->duplicates;
    ++stats_.duplicates;
    return;
  }
  word |= bit;
  ++s->received;
  if (p.count != 0) s->announced = p.count;
  s->first_us = std::min(s->first_us, p.arrival_us);
  s->last_us = std::max(s->last_us, p.arrival_us);
  if (p.one_way_delay_us) {
    const std::int64_t owd = *p.one_way_delay_us;
    s->min_owd = s->has_owd ? std::min(s->min_owd, owd) : owd;
    s->has_owd = true;
    s->tail_owd[s->tail_count % s->tail_owd.size()] = owd;
    ++s->tail_count;
  }
  if (s->announced != 0 && s->received >= s->announced) close(*s);
  poll(p.arrival_us);
}

void ReceptionMeter::poll(std::uint64_t now_us) {
  for (auto& s : slots_) {
    if (!s.open) continue;
    const bool overtaken =
        s.later_since_us != 0 && now_us >= s.later_since_us + config_.reorder_grace_us;
    const bool idle = now_us >= s.last_us + config_.idle_timeout_us;
    if (overtaken || idle) close(s);
  }
}

void ReceptionMeter::flush() {
  // Oldest first, so that measurements come out in stage order.
  if (slots_[0].open && slots_[1].open && slots_[1].stage < slots_[0].stage) {
    close(slots_[1]);
  }
  for (auto& s : slots_) {
    if (s.open) close(s);
  }
}

void ReceptionMeter::close(OpenStage& s) {
  // An older open stage must be reported before this one to keep reports in stage order.
  for (auto& other : slots_) {
    if (&other != &s && other.open && other.stage < s.stage) close(other);
  }
  s.open = false;
  StageMeasurement m;
  m.stage = s.stage;
  m.first_arrival_us = s.first_us;
  m.last_arrival_us = s.last_us;
  m.reception_period_us = static_cast<double>(s.last_us - s.first_us);
  m.received = s.received;
  m.announced = s.announced;
  m.duplicates = s.duplicates;
  if (s.has_owd) {
    // The base delay is the minimum over recent stages (LEDBAT's base-delay idea, RFC 6817
    // §3.4.2), so a queue that stays full across stages still shows as queueing delay.
    stage_min_owd_[min_head_] = s.min_owd;
    min_head_ = (min_head_ + 1) % stage_min_owd_.size();
    min_count_ = std::min(min_count_ + 1, stage_min_owd_.size());
    std::int64_t base = std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = 0; i < min_count_; ++i) {
      base = std::min(base, stage_min_owd_[i]);
    }
    const unsigned n = std::min<unsigned>(std::min<unsigned>(s.tail_count, config_.tail_packets),
                                          s.tail_owd.size());
    double sum = 0.0;
    for (unsigned i = 0; i < n; ++i) {
      sum += static_cast<double>(s.tail_owd[(s.tail_count - 1 - i) % s.tail_owd.size()]);
    }
    m.queue_delay_us = sum / n - static_cast<double>(base);
  }
  has_closed_ = true;
  last_closed_ = std::max(last_closed_, s.stage);
  ++stats_.stages_closed;
  if (on_stage_) on_stage_(m);
}

}  // namespace predrop::core

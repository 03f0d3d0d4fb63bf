#include "predrop/core/reception_meter.hpp"

#include <algorithm>
#include <limits>
#include <span>
#include <utility>

namespace predrop::core {

namespace {
constexpr std::size_t kBitmapWords = 65536 / 64;
// Pairs within this factor of the byte-weighted median rate make the dispersion estimate.
constexpr float kDispersionBand = 1.25F;
}  // namespace

PathMeasurement ReceptionMeter::path_of(OpenStage& s, std::int64_t base) {
  PathMeasurement path;
  path.bytes_received = s.bytes;
  path.queue_max_us = static_cast<double>(std::max<std::int64_t>(0, s.max_owd - base));
  path.queue_min_us = static_cast<double>(std::max<std::int64_t>(0, s.min_owd - base));
  const std::span<PairSample> pairs(s.pairs.data(), s.pair_count);
  if (!pairs.empty()) {
    // Byte-weighted median, then the pairs within a band around it (sorting the stage's own
    // fixed array: it is discarded after this).
    // Pairs sent back to back (a sender's leading packet pair) measure the bottleneck's own
    // rate; pairs that merely met in its queue also carry whatever other traffic sat between
    // them, i.e. this stream's share. When the stage has the former, only they count.
    const auto b2b = std::partition(pairs.begin(), pairs.end(),
                                    [](const PairSample& x) { return x.back_to_back; });
    const std::span<PairSample> used =
        b2b != pairs.begin() ? pairs.subspan(0, static_cast<std::size_t>(b2b - pairs.begin()))
                             : pairs;
    std::sort(used.begin(), used.end(),
              [](const PairSample& a, const PairSample& b) { return a.rate < b.rate; });
    std::uint64_t total = 0;
    for (const PairSample& x : used) {
      total += x.bytes;
    }
    float median = used.back().rate;
    std::uint64_t seen = 0;
    for (const PairSample& x : used) {
      seen += x.bytes;
      if (2 * seen >= total) {
        median = x.rate;
        break;
      }
    }
    for (const PairSample& x : used) {
      if (x.rate >= median / kDispersionBand && x.rate <= median * kDispersionBand) {
        path.dispersion_bytes += x.bytes;
        path.dispersion_us += x.gap_us;
      }
    }
  }
  if (s.burst.last_send >= s.burst.first_send) {
    path.burst_bytes = s.burst.bytes;
    path.burst_send_us = static_cast<std::uint64_t>(s.burst.last_send - s.burst.first_send);
    path.burst_arrival_us = s.burst.last_arrival - s.burst.first_arrival;
  }
  return path;
}

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
  s.max_owd = 0;
  s.bytes = 0;
  s.sized = false;
  s.pair_count = 0;
  s.burst = Burst{};
  note_later_stage(stage, now_us);
  return &s;
}

void ReceptionMeter::on_packet(const PacketArrival& p) {
  ++stats_.packets;
  latest_queue_us_.reset();  // set again by account_path for a packet it measures
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
  if (p.bytes != 0) {
    s->bytes += p.bytes;
    s->sized = true;
  }
  if (p.one_way_delay_us) {
    const std::int64_t owd = *p.one_way_delay_us;
    s->min_owd = s->has_owd ? std::min(s->min_owd, owd) : owd;
    s->max_owd = s->has_owd ? std::max(s->max_owd, owd) : owd;
    s->has_owd = true;
    s->tail_owd[s->tail_count % s->tail_owd.size()] = owd;
    ++s->tail_count;
  }
  account_path(*s, p);
  if (s->announced != 0 && s->received >= s->announced) close(*s);
  poll(p.arrival_us);
}

std::int64_t ReceptionMeter::base_owd(const OpenStage& s) const {
  if (min_count_ == 0) return s.min_owd;
  return s.has_owd ? std::min(window_base_, s.min_owd) : window_base_;
}

void ReceptionMeter::end_burst() {
  if (burst_stage_ != nullptr && burst_.bytes > burst_stage_->burst.bytes) {
    burst_stage_->burst = burst_;
  }
  burst_stage_ = nullptr;
}

void ReceptionMeter::account_path(OpenStage& s, const PacketArrival& p) {
  if (!p.one_way_delay_us) {
    have_prev_ = false;
    end_burst();
    return;
  }
  const std::int64_t owd = *p.one_way_delay_us;
  // The send time on the sender's clock plus a constant offset; only differences are used.
  const std::int64_t send = static_cast<std::int64_t>(p.arrival_us) - owd;
  if (have_prev_ && p.arrival_us >= prev_arrival_) {
    const std::int64_t send_gap = send - (static_cast<std::int64_t>(prev_arrival_) - prev_owd_);
    const std::int64_t prev_queue = prev_owd_ - base_owd(s);
    // The previous packet was still queued when this one reached the bottleneck: they left
    // back to back, and this one's arrival gap is its bytes at the bottleneck's rate.
    if (p.bytes != 0 && prev_queue > send_gap + static_cast<std::int64_t>(config_.pair_margin_us) &&
        s.pair_count < s.pairs.size()) {
      const auto gap = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(
          p.arrival_us - prev_arrival_, 1, std::numeric_limits<std::uint32_t>::max()));
      s.pairs[s.pair_count++] =
          PairSample{static_cast<float>(p.bytes) / static_cast<float>(gap), p.bytes, gap,
                     send_gap <= static_cast<std::int64_t>(config_.back_to_back_us)};
    }
    if (burst_stage_ == &s && send_gap >= 0 &&
        send_gap <= static_cast<std::int64_t>(config_.train_gap_us)) {
      burst_.bytes += p.bytes;
      burst_.last_send = send;
      burst_.last_arrival = p.arrival_us;
    } else {
      end_burst();
    }
  } else {
    end_burst();
  }
  if (burst_stage_ == nullptr) {
    burst_stage_ = &s;
    burst_ = Burst{0, send, send, p.arrival_us, p.arrival_us};
  }
  have_prev_ = true;
  prev_arrival_ = p.arrival_us;
  prev_owd_ = owd;
  latest_queue_us_ = owd - base_owd(s);
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

double ReceptionMeter::back_to_back_rate(std::uint32_t stage) const {
  for (const OpenStage& s : slots_) {
    if (!s.open || s.stage != stage) continue;
    std::uint64_t bytes = 0;
    std::uint64_t us = 0;
    for (std::size_t i = 0; i < s.pair_count; ++i) {
      if (!s.pairs[i].back_to_back) continue;
      bytes += s.pairs[i].bytes;
      us += s.pairs[i].gap_us;
    }
    return us > 0 ? static_cast<double>(bytes) / static_cast<double>(us) : 0.0;
  }
  return 0.0;
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
  if (burst_stage_ == &s) end_burst();
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
    window_base_ = base;
    const unsigned n = std::min<unsigned>(std::min<unsigned>(s.tail_count, config_.tail_packets),
                                          s.tail_owd.size());
    double sum = 0.0;
    for (unsigned i = 0; i < n; ++i) {
      sum += static_cast<double>(s.tail_owd[(s.tail_count - 1 - i) % s.tail_owd.size()]);
    }
    m.queue_delay_us = sum / n - static_cast<double>(base);
    if (s.sized) m.path = path_of(s, base);
  }
  has_closed_ = true;
  last_closed_ = std::max(last_closed_, s.stage);
  ++stats_.stages_closed;
  if (on_stage_) on_stage_(m);
}

}  // namespace predrop::core

#include "predrop/delayline/delay_schedule.hpp"

#include <charconv>
#include <cmath>
#include <string>
#include <utility>

namespace predrop::delayline {

namespace {

constexpr double kMaxDelayUs = 10e6;

core::Result<std::uint64_t> parse_delay_us(std::string_view text) {
  double scale = 1000.0;  // milliseconds unless a unit says otherwise
  if (text.ends_with("us")) {
    scale = 1.0;
    text.remove_suffix(2);
  } else if (text.ends_with("ms")) {
    text.remove_suffix(2);
  } else if (text.ends_with("s")) {
    scale = 1e6;
    text.remove_suffix(1);
  }
  double value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end || !std::isfinite(value) || value < 0 ||
      value * scale > kMaxDelayUs) {
    return core::make_error("delay '" + std::string(text) + "' is not a number of ms in 0..10000");
  }
  return static_cast<std::uint64_t>(std::llround(value * scale));
}

}  // namespace

core::Result<QueueClass> parse_queue_class(std::string_view spec) {
  const auto eq = spec.find('=');
  if (eq == std::string_view::npos) {
    return core::make_error("queue class '" + std::string(spec) + "' is not NUM=DELAY");
  }
  const std::string_view num_text = spec.substr(0, eq);
  unsigned num = 0;
  const auto* end = num_text.data() + num_text.size();
  const auto [ptr, ec] = std::from_chars(num_text.data(), end, num);
  if (num_text.empty() || ec != std::errc{} || ptr != end || num > 65535) {
    return core::make_error("queue number '" + std::string(num_text) + "' is not in 0..65535");
  }
  auto delay = parse_delay_us(spec.substr(eq + 1));
  if (!delay) return delay.error();
  return QueueClass{static_cast<std::uint16_t>(num), delay.value()};
}

DelaySchedule::DelaySchedule(std::vector<QueueClass> classes, std::size_t capacity)
    : classes_(std::move(classes)), rings_(classes_.size()) {
  for (Ring& r : rings_) {
    r.slots.resize(capacity == 0 ? 1 : capacity);
  }
}

bool DelaySchedule::hold(std::size_t queue, std::uint32_t id, std::uint64_t arrival_us) {
  Ring& r = rings_[queue];
  if (r.size == r.slots.size()) return false;
  r.slots[(r.head + r.size) % r.slots.size()] = Slot{id, arrival_us + classes_[queue].delay_us};
  ++r.size;
  r.size_max = std::max(r.size_max, r.size);
  return true;
}

std::optional<std::uint64_t> DelaySchedule::next_deadline_us() const {
  std::optional<std::uint64_t> best;
  for (const Ring& r : rings_) {
    if (r.size == 0) continue;
    const std::uint64_t d = r.slots[r.head].deadline_us;
    if (!best || d < *best) best = d;
  }
  return best;
}

}  // namespace predrop::delayline

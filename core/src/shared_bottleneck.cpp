#include "predrop/core/shared_bottleneck.hpp"

namespace predrop::core {

SharedBottleneck::Member SharedBottleneck::join() {
  const std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i].joined) {
      slots_[i] = Slot{0.0, true};
      return static_cast<Member>(i);
    }
  }
  slots_.push_back(Slot{0.0, true});
  return static_cast<Member>(slots_.size() - 1);
}

void SharedBottleneck::leave(Member member) {
  const std::lock_guard lock(mutex_);
  if (member >= slots_.size() || !slots_[member].joined) return;
  Slot& s = slots_[member];
  if (s.share > 0.0) {
    // RFC 8699: the aggregate loses what the member had; the others find it by probing, as
    // they would find any capacity that frees up.
    aggregate_ -= s.share;
    --limited_;
  }
  s = Slot{};
  redistribute();
}

double SharedBottleneck::update(Member member, double estimate) {
  const std::lock_guard lock(mutex_);
  if (member >= slots_.size() || !slots_[member].joined) return estimate;
  Slot& s = slots_[member];
  if (!(estimate > 0.0)) {
    if (s.share > 0.0) {
      aggregate_ -= s.share;
      --limited_;
      s.share = 0.0;
      redistribute();
    }
    return 0.0;
  }
  if (s.share <= 0.0) {
    // A member that found the bottleneck brings its own reading of it.
    aggregate_ += estimate;
    ++limited_;
    s.share = estimate;
  } else {
    const double delta = estimate - s.share;
    // Whole, up or down: a decrease is every member's at once (one member's congestion event
    // is the group's), and n members that each step up once per block grow the aggregate as n
    // uncoupled sessions would, so the group takes from other traffic what they would take.
    aggregate_ += delta;
  }
  redistribute();
  return s.share;
}

double SharedBottleneck::share(Member member) const {
  const std::lock_guard lock(mutex_);
  return member < slots_.size() ? slots_[member].share : 0.0;
}

std::size_t SharedBottleneck::limited() const {
  const std::lock_guard lock(mutex_);
  return limited_;
}

void SharedBottleneck::redistribute() {
  if (limited_ == 0) {
    aggregate_ = 0.0;
    return;
  }
  // Never below a sliver: a member's share must stay an estimate (> 0) while it is counted.
  if (aggregate_ < 1e-6) aggregate_ = 1e-6;
  const double each = aggregate_ / static_cast<double>(limited_);
  for (Slot& s : slots_) {
    if (s.joined && s.share > 0.0) s.share = each;
  }
}

}  // namespace predrop::core

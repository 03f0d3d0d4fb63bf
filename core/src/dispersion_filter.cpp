#include "predrop/core/dispersion_filter.hpp"

#include <algorithm>
#include <cmath>

namespace predrop::core {

void DispersionFilter::note(double rate) {
  recent_[next_++ % recent_.size()] = rate;
  rate_ = *std::max_element(recent_.begin(), recent_.end());
}

void DispersionFilter::clear() {
  recent_.fill(0.0);
  rate_ = 0.0;
}

void DispersionFilter::restart(double rate) {
  recent_.fill(0.0);
  note(rate);
}

bool DispersionFilter::steady(unsigned min_readings, double spread) const {
  double lo = 0.0;
  unsigned n = 0;
  for (double r : recent_) {
    if (r <= 0.0) continue;
    lo = n == 0 ? r : std::fmin(lo, r);
    ++n;
  }
  return n >= min_readings && lo >= spread * rate_;
}

}  // namespace predrop::core

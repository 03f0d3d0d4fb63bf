#include "predrop/core/dispersion_filter.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace predrop::core {

void DispersionFilter::note(double rate) {
  recent_[next_++ % recent_.size()] = rate;
  update();
}

void DispersionFilter::update() {
  // Eight readings at most: sorted largest first, the first one whose next agrees with it.
  std::array<double, kWindow> sorted = recent_;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  const auto n = static_cast<std::size_t>(
      std::count_if(sorted.begin(), sorted.end(), [](double r) { return r > 0.0; }));
  if (n <= 1) {
    rate_ = sorted[0];
    return;
  }
  for (std::size_t i = 0; i + 1 < n; ++i) {
    if (sorted[i + 1] >= kAgreement * sorted[i]) {
      rate_ = sorted[i];
      return;
    }
  }
  rate_ = sorted[1];
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
    if (r <= 0.0 || r > rate_) continue;
    lo = n == 0 ? r : std::fmin(lo, r);
    ++n;
  }
  return n >= min_readings && lo >= spread * rate_;
}

}  // namespace predrop::core

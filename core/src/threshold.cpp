#include "predrop/core/threshold.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace predrop::core {

namespace {
// The amount by which a change must exceed the threshold: relative thresholds scale with the
// magnitude of the reference so that they also work for negative performance values.
double allowed_change(const Threshold& t, double reference) {
  return t.relative ? t.value * std::fabs(reference) : t.value;
}
}  // namespace

bool Threshold::increase_exceeds(double current, double reference) const {
  return current - reference > allowed_change(*this, reference);
}

bool Threshold::decrease_exceeds(double current, double reference) const {
  return reference - current > allowed_change(*this, reference);
}

std::string Threshold::to_string() const {
  char buf[64];
  if (relative) {
    std::snprintf(buf, sizeof buf, "%g%%", value * 100.0);
  } else {
    std::snprintf(buf, sizeof buf, "%g", value);
  }
  return buf;
}

Result<Threshold> parse_threshold(std::string_view text) {
  bool relative = false;
  std::string_view number = text;
  if (!number.empty() && number.back() == '%') {
    relative = true;
    number.remove_suffix(1);
  }
  double v = 0.0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size()) {
    return make_error("threshold '" + std::string(text) +
                      "' is not a number (use e.g. \"0.5\" or \"5%\")");
  }
  if (!std::isfinite(v) || v < 0.0) {
    return make_error("threshold '" + std::string(text) + "' must be finite and >= 0");
  }
  return relative ? Threshold::fraction(v / 100.0) : Threshold::absolute(v);
}

}  // namespace predrop::core

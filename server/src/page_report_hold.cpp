// Browser block reports held for the page's P; see page_report_hold.hpp.
#include "page_report_hold.hpp"

#include <optional>

namespace predrop::server::detail {

std::span<const HandedReport> PageReportHold::hold(const core::StageReport& report,
                                                   std::uint64_t now_us, bool reads_p) {
  std::size_t n = 0;
  if (count_ == kHeld) hand_front(n++);
  held_[(first_ + count_) % kHeld] = Held{report, now_us + (reads_p ? kWaitUs : 0)};
  ++count_;
  return std::span<const HandedReport>(out_.data(), n);
}

std::span<const HandedReport> PageReportHold::release(std::uint64_t now_us) {
  std::size_t n = 0;
  while (count_ != 0) {
    const Held& h = held_[first_];
    if (!join_.quality(h.report.stage) && now_us < h.until_us) break;
    hand_front(n++);
  }
  return std::span<const HandedReport>(out_.data(), n);
}

void PageReportHold::hand_front(std::size_t n) {
  core::StageReport r = held_[first_].report;
  first_ = (first_ + 1) % kHeld;
  --count_;
  const std::optional<double> p = join_.quality(r.stage);
  if (p) last_p_ = *p;
  r.performance = last_p_;
  out_[n] = HandedReport{r, p.has_value()};
}

}  // namespace predrop::server::detail

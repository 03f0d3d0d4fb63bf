#include "relay_reports.hpp"

#include "predrop/chain/feedback.hpp"

namespace predrop::ddl {

void handle_report(RelayPeer& p, const wire::PdfbFeedback& fb, DdlRelayStats& stats,
                   DdlRelayListener* listener) {
  const std::uint32_t s = fb.stage_id;
  PlanRecord& rec = p.plans[s % kPlanRing];
  core::StageReport report = chain::to_stage_report(fb);
  if (rec.used && rec.stage == s) report.rate_used = rec.rate;
  auto d = p.controller->on_report(report);
  if (!d) {
    ++stats.reports_rejected;
    return;
  }
  if (d->kind == core::DecisionKind::kStale) return;
  ++stats.reports;
  // The worker's reception of the aggregate: its path's delivery rate, for the pacer.
  (void)p.pacer.on_report(report.packets_received, p.packet_bytes, report.reception_period_us);
  if (rec.used && rec.stage == s) rec.settled = true;
  if (listener == nullptr) return;
  DdlRelayReportRow row;
  row.stage = s;
  row.rank = p.rank;
  row.reported = true;
  row.report = report;
  row.decision = *d;
  row.next_rate = p.controller->rate();
  row.planned = rec.planned;
  row.discarded = rec.discarded;
  row.sent = rec.sent;
  row.times = rec.times;
  row.pace_kbps = p.pacer.rate().value_or(0.0) * 8000.0;
  listener->on_report(row);
}

void settle_missing_reports(RelayPeer& p, std::uint32_t closed, std::uint32_t timeout_stages,
                            DdlRelayStats& stats, DdlRelayListener* listener) {
  if (closed < timeout_stages) return;
  const std::uint32_t limit = closed - timeout_stages;
  while (static_cast<std::int32_t>(limit - p.oldest_unsettled) >= 0) {
    PlanRecord& rec = p.plans[p.oldest_unsettled % kPlanRing];
    if (rec.used && rec.stage == p.oldest_unsettled && !rec.settled) {
      rec.settled = true;
      const core::Decision d = p.controller->on_report_missing(rec.stage);
      ++stats.reports_missing;
      if (listener != nullptr) {
        DdlRelayReportRow row;
        row.stage = rec.stage;
        row.rank = p.rank;
        row.reported = false;
        row.report.stage = rec.stage;
        row.report.rate_used = rec.rate;
        row.decision = d;
        row.next_rate = p.controller->rate();
        row.planned = rec.planned;
        row.discarded = rec.discarded;
        row.sent = rec.sent;
        row.times = rec.times;
        listener->on_report(row);
      }
    }
    ++p.oldest_unsettled;
  }
}

}  // namespace predrop::ddl

#include "relay_reports.hpp"

#include "predrop/chain/feedback.hpp"

namespace predrop::ddl {

namespace {

// The row of a stage's outcome, from its record (zeros for a stage the ledger no longer holds).
DdlRelayReportRow report_row(const RelayPeer& p, std::uint32_t stage,
                             const chain::StageRecord* rec) {
  DdlRelayReportRow row;
  row.stage = stage;
  row.rank = p.rank;
  row.next_rate = p.controller->rate();
  if (rec != nullptr) {
    row.planned = rec->packets;
    row.discarded = rec->discarded;
    row.sent = rec->sent;
    row.times = p.reports.extra(*rec);
  }
  return row;
}

void declare_missing(RelayPeer& p, const chain::StageRecord& rec, DdlRelayStats& stats,
                     DdlRelayListener* listener) {
  const core::Decision d = p.controller->on_report_missing(rec.stage);
  ++stats.reports_missing;
  if (listener == nullptr) return;
  DdlRelayReportRow row = report_row(p, rec.stage, &rec);
  row.reported = false;
  row.report.stage = rec.stage;
  row.report.rate_used = rec.rate_used();
  row.decision = d;
  listener->on_report(row);
}

}  // namespace

void open_report_record(RelayPeer& p, std::uint32_t stage, std::uint32_t timeout_stages,
                        DdlRelayStats& stats, DdlRelayListener* listener) {
  (void)p.reports.open(
      stage, std::uint64_t{stage} + timeout_stages,
      [&](const chain::StageRecord& old) { declare_missing(p, old, stats, listener); });
}

void handle_report(RelayPeer& p, const wire::PdfbFeedback& fb, DdlRelayStats& stats,
                   DdlRelayListener* listener) {
  const std::uint32_t s = fb.stage_id;
  chain::StageRecord* rec = p.reports.find(s);
  core::StageReport report = chain::to_stage_report(fb);
  if (rec != nullptr) report.rate_used = rec->rate_used();
  auto d = p.controller->on_report(report);
  if (!d) {
    ++stats.reports_rejected;
    return;
  }
  if (d->kind == core::DecisionKind::kStale) return;
  ++stats.reports;
  // The worker's reception of the aggregate: its path's delivery rate, for the pacer.
  (void)p.pacer.on_report(report.packets_received, p.packet_bytes, report.reception_period_us);
  if (rec != nullptr) p.reports.settle(*rec);
  if (listener == nullptr) return;
  DdlRelayReportRow row = report_row(p, s, rec);
  row.reported = true;
  row.report = report;
  row.decision = *d;
  row.pace_kbps = p.pacer.rate().value_or(0.0) * 8000.0;
  listener->on_report(row);
}

void settle_missing_reports(RelayPeer& p, std::uint32_t closed, DdlRelayStats& stats,
                            DdlRelayListener* listener) {
  // Every record's deadline is its stage + report_timeout_stages, in stages closed.
  p.reports.settle_overdue(closed + 1, closed, [&](const chain::StageRecord& rec) {
    declare_missing(p, rec, stats, listener);
  });
}

}  // namespace predrop::ddl

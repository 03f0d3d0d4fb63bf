#pragma once
// Report handling of the DDL relay (relay.hpp), on each worker's chain::ReportLedger
// (RelayPeer::reports): a stage's record is opened when the relay starts sending the stage's
// aggregate to the worker; the worker's PDFB about that aggregate goes to its controller together
// with the R the relay used for it; a report that has not come when the stage
// `report_timeout_stages` later closes is declared missing (core::RateController::
// on_report_missing, docs/ddl-mode.md "Reports, P and missing reports"), and so is one whose
// ledger slot is needed again before that. Each outcome is counted and handed to the listener as
// a DdlRelayReportRow.
//
// Threading: the relay's loop thread. Nothing here allocates or logs.
#include <cstdint>

#include "predrop/ddl/relay.hpp"
#include "predrop/wire/rtcp.hpp"
#include "relay_peer.hpp"

namespace predrop::ddl {

/// Opens `peer`'s record of `stage` (closed now), whose report is missing once the stage
/// `timeout_stages` later has closed; relay_sender.hpp fills it in.
void open_report_record(RelayPeer& peer, std::uint32_t stage, std::uint32_t timeout_stages,
                        DdlRelayStats& stats, DdlRelayListener* listener);

/// Feeds one report of `peer` to its controller.
void handle_report(RelayPeer& peer, const wire::PdfbFeedback& feedback, DdlRelayStats& stats,
                   DdlRelayListener* listener);

/// Declares missing every unsettled report of a stage at least `timeout_stages` before `closed`.
void settle_missing_reports(RelayPeer& peer, std::uint32_t closed, DdlRelayStats& stats,
                            DdlRelayListener* listener);

}  // namespace predrop::ddl

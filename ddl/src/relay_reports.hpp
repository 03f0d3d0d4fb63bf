#pragma once
// Report handling of the DDL relay (relay.hpp): a worker's PDFB about the aggregate of a stage
// goes to that worker's controller together with the R the relay used for it (from the peer's
// plan ring); a report that has not come when the stage `report_timeout_stages` later closes is
// declared missing (core::RateController::on_report_missing, docs/ddl-mode.md "Reports, P and
// missing reports"). Each outcome is counted and handed to the listener as a DdlRelayReportRow.
//
// Threading: the relay's loop thread. Nothing here allocates or logs.
#include <cstdint>

#include "predrop/ddl/relay.hpp"
#include "predrop/wire/rtcp.hpp"
#include "relay_peer.hpp"

namespace predrop::ddl {

/// Feeds one report of `peer` to its controller.
void handle_report(RelayPeer& peer, const wire::PdfbFeedback& feedback, DdlRelayStats& stats,
                   DdlRelayListener* listener);

/// Declares missing every unsettled report of a stage at least `timeout_stages` before `closed`.
void settle_missing_reports(RelayPeer& peer, std::uint32_t closed, std::uint32_t timeout_stages,
                            DdlRelayStats& stats, DdlRelayListener* listener);

}  // namespace predrop::ddl

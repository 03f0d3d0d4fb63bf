#pragma once
// The block trace's row of one stage (BlockTrace, stream_session.hpp): what the ledger's record
// says the stage sent, and what became of its report — the controller's decision, a missing
// report, or a stage a PAUSE cut (traced as kPaused, never fed to the policy). The session hands
// each row to its OnBlock callback (the server writes the CSV, block_trace_csv.hpp).
//
// Pure; the row borrows `session` and the decision's reason (static text) for the call only.
#include <cstdint>
#include <string_view>

#include "predrop/chain/report_ledger.hpp"
#include "predrop/core/rate_controller.hpp"
#include "predrop/core/stage_report.hpp"
#include "predrop/server/stream_session.hpp"

namespace predrop::server::detail {

/// The row of stage record `r` of session `session`, which sent media block `block`:
/// `reported` false when its report never came.
BlockTrace block_trace(std::string_view session, const chain::StageRecord& r, std::uint32_t block,
                       bool reported, const core::StageReport& report,
                       const core::Decision& decision);

/// The decision a stage a PAUSE cut is traced with: R stays `rate`.
core::Decision paused_decision(double rate);

}  // namespace predrop::server::detail

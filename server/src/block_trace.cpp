// The block trace's row of one stage (block_trace.hpp).
#include "block_trace.hpp"

namespace predrop::server::detail {

BlockTrace block_trace(std::string_view session, const chain::StageRecord& r, std::uint32_t block,
                       bool reported, const core::StageReport& report,
                       const core::Decision& decision) {
  BlockTrace t;
  t.session = session;
  t.stage = r.stage;
  t.block = block;
  t.rate = r.rate;
  t.packets = r.packets;
  t.discarded = r.discarded;
  t.sent = r.sent;
  t.reported = reported;
  t.report = report;
  t.decision = decision.kind;
  t.reason = decision.reason;
  t.next_rate = decision.rate;
  t.capacity_estimate = decision.capacity_estimate;
  return t;
}

core::Decision paused_decision(double rate) {
  return core::Decision{rate, core::DecisionKind::kPaused,
                        "stage cut by PAUSE: not a reading of the path, not fed to the policy"};
}

}  // namespace predrop::server::detail

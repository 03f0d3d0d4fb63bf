#include "relay_client_reports.hpp"

#include <string>

namespace predrop::ddl {

void ClientReports::keep(const core::StageMeasurement& m) {
  ring_[m.stage % kWindow] = Entry{true, false, m};
}

core::Result<core::StageMeasurement> ClientReports::take(std::uint32_t stage) {
  Entry& e = ring_[stage % kWindow];
  if (!e.used || e.m.stage != stage) {
    return core::make_error("stage " + std::to_string(stage) +
                            " is not a closed stage of the last " + std::to_string(kWindow));
  }
  if (e.taken) return core::make_error("stage " + std::to_string(stage) + " was already reported");
  e.taken = true;
  return e.m;
}

}  // namespace predrop::ddl

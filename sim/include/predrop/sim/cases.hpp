#pragma once
// The wired test cases of RFC 8867 §5.1-5.8 (parameters after cisco/ns3-rmcat, written by an
// RFC co-author) and the bed's own scenarios, as CaseSpecs for the simulator. The RFC's media
// flows range up to 1.5 Mbit/s; predrop streams a fixed clip, so every RFC capacity is scaled by
// clip rate / 1.5 Mbit/s (CaseOptions::scale), keeping each case's ratio of capacity to demand.
#include <optional>
#include <string>
#include <vector>

#include "predrop/sim/scenario.hpp"

namespace predrop::sim {

struct CaseOptions {
  double scale = 1.0;                 ///< Multiplies every RFC capacity (clip rate / 1.5 Mbit/s).
  double stream_bps = 1'230'000;      ///< The clip's rate, for the bed scenarios' capacities.
  SimTime one_way_us = 50'000;        ///< RFC 8867's default propagation delay.
  SimTime queue_us = 300'000;         ///< Drop-tail queue of the RFC cases.
  std::uint32_t burst_bytes = 3'000;  ///< tbf bucket: two MTUs.
};

/// Every case, RFC first, then the bed's scenarios (bed-*).
std::vector<CaseSpec> all_cases(const CaseOptions& options);
/// The case of that name, if any.
std::optional<CaseSpec> find_case(const std::string& name, const CaseOptions& options);

}  // namespace predrop::sim

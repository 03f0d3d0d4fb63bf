#pragma once
// A test case as RFC 8867 describes one (§3: a dumbbell, capacities over time, flows joining and
// leaving, cross traffic), run in the simulator with one rate policy for every media flow.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "predrop/core/policy_factory.hpp"
#include "predrop/sim/clip.hpp"
#include "predrop/sim/media_flow.hpp"
#include "predrop/sim/network.hpp"
#include "predrop/sim/tcp_flow.hpp"

namespace predrop::sim {

/// Rate changes of a bottleneck: (time, bit/s), the first at time 0.
using RateSchedule = std::vector<std::pair<SimTime, double>>;

struct MediaSpec {
  SimTime start_us = 0;
  SimTime stop_us = INT64_MAX;
  SimTime pause_from_us = -1;
  SimTime pause_until_us = -1;
  FlowPath path;
};

struct TcpSpec {
  SimTime start_us = 0;
  SimTime stop_us = INT64_MAX;
  FlowPath path;
  /// 0: one long transfer; else a source of short transfers (§5.7) with this seed.
  std::uint64_t short_seed = 0;
  bool starts_on = true;  ///< Short transfers: begin with a transfer (else with an idle period).
};

struct CbrSpec {
  double rate_bps = 0;
  SimTime from_us = 0;
  SimTime until_us = 0;
  FlowPath path;
};

struct CaseSpec {
  std::string name;
  SimTime duration_us = 100'000'000;
  TbfConfig forward;
  RateSchedule forward_rates;
  std::optional<TbfConfig> backward;
  RateSchedule backward_rates;
  std::vector<MediaSpec> media;
  std::vector<TcpSpec> tcp;
  std::vector<CbrSpec> cbr;
};

/// Everything a run produced: per media flow its blocks, per flow the bottleneck log.
struct CaseRun {
  std::string case_name;
  std::string policy_name;
  std::vector<std::vector<BlockRecord>> media;  ///< Per media flow.
  std::vector<std::uint32_t> media_flow_ids;    ///< Network flow id of each media flow.
  std::vector<std::uint32_t> tcp_flow_ids;
  std::vector<std::uint32_t> cbr_flow_ids;
  std::vector<std::vector<PacketRecord>> logs;  ///< Per network flow.
  std::vector<std::string> flow_names;
  std::vector<FlowPath> flow_paths;
  double stream_rate_bps = 0;  ///< The clip's mean link rate.
};

struct RunOptions {
  core::PolicyConfig policy;
  std::string policy_name;
  core::DiscardPolicy discard = core::DiscardPolicy::kPriority;
  std::shared_ptr<const Clip> clip;
  /// Shifts each media flow's start by up to this, from `seed` (repeats differ like the bed's).
  SimTime start_jitter_us = 0;
  std::uint64_t seed = 1;
  /// Starts each media flow at another block of the clip (repeats see other content).
  bool random_clip_offset = false;
  QualityModel quality;
  /// The receivers' interim alert threshold (MediaConfig::alert_queue_us; 0 = off).
  SimTime alert_queue_us = 0;
  /// Couples the case's media sessions (core::SharedBottleneck: as if the server knew they share
  /// the bottleneck). An experiment; the capacity policy only.
  bool coupled = false;
};

/// Runs one case; throws std::invalid_argument on a bad policy configuration.
CaseRun run_case(const CaseSpec& spec, const RunOptions& options);

/// The capacity a flow of the case can expect at time t: the bottleneck rate of its direction
/// divided by the flows active then (media, long TCP; CBR is subtracted), in bit/s.
double fair_share_bps(const CaseSpec& spec, Direction direction, SimTime t);
/// The bottleneck rate of a direction at time t.
double capacity_bps(const CaseSpec& spec, Direction direction, SimTime t);

}  // namespace predrop::sim

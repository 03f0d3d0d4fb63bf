#pragma once
// Eviction rules of the DDL relay (relay.hpp, docs/ddl-mode.md "Workers that die or leave"): a
// worker that sent nothing authenticated since the previous close missed the stage; it is
// evicted once it has missed `evict_after_stages` stages *and* been silent for at least
// `evict_min_silence_ms` (with stages of a few ms a worker busy for a moment, in a test
// evaluation or preempted, misses several). A worker silent for `peer_timeout_ms` is evicted in
// any case, also before the job starts. Pure: the relay applies the verdicts.
#include <cstdint>
#include <optional>
#include <string>

#include "predrop/ddl/stage_collector.hpp"
#include "relay_peer.hpp"

namespace predrop::ddl {

/// Liveness at a stage close: `uplink` is the peer's part of the closed stage.
void note_stage_liveness(RelayPeer& peer, const ContributorReport& uplink);

/// The eviction reason for a peer silent for too many stages and long enough at `now`, or
/// nullopt.
std::optional<std::string> silence_eviction(const RelayPeer& peer, std::uint64_t now,
                                            std::uint32_t evict_after_stages,
                                            std::uint32_t evict_min_silence_ms);

/// The eviction reason for a peer silent for `peer_timeout_ms` at `now`, or nullopt.
std::optional<std::string> timeout_eviction(const RelayPeer& peer, std::uint64_t now,
                                            std::uint32_t peer_timeout_ms);

}  // namespace predrop::ddl

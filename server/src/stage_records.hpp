#pragma once
// What a stream session's ledger (chain::ReportLedger) keeps of each stage beside the report it
// waits for: R, the plan's counts and the block's duration when the stage begins; what it sent,
// and that it ended, once its last packet is handed over; and per track the packets sent before
// and through it, the span an RR's extended highest sequence number is mapped onto (RFC 3550
// §6.4.1; chain::FeedbackIntake). The session opens, settles and finds the records; these fill
// them from the transmitter's plan and counters.
//
// Pure; nothing is allocated.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "predrop/chain/report_ledger.hpp"
#include "predrop/chain/stage_transmitter.hpp"

namespace predrop::server::detail {

/// Packets sent so far on each of the first chain::kLedgerTracks tracks.
struct TrackPackets {
  std::array<std::uint64_t, chain::kLedgerTracks> packets{};
  std::size_t count = 0;  ///< Tracks counted.

  /// The counts, one per track, for chain::FeedbackIntake::read.
  std::span<const std::uint64_t> tracks() const { return {packets.data(), count}; }
};

/// The packets sent on each track whose counters `sent` holds (the transmitter's, in track order).
TrackPackets packets_sent(std::span<const chain::TrackCounters> sent);

/// Fills the record of a stage that begins: planned at `rate` as `plan`, its block `duration_us`
/// long, with `sent` the track counters before its first packet.
void record_begin(chain::StageRecord& r, double rate, const chain::StagePlan& plan,
                  double duration_us, std::span<const chain::TrackCounters> sent);

/// Fills the record of a stage whose last packet was handed over: what it sent as `plan` (the
/// plan as its rest was last planned), with `sent` the track counters after its last packet.
void record_end(chain::StageRecord& r, const chain::StagePlan& plan,
                std::span<const chain::TrackCounters> sent);

}  // namespace predrop::server::detail

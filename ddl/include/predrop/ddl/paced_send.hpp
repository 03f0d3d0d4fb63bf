#pragma once
// A stage's uplink sent at a path's pace: what a ddl::PathPacer allows now goes out through the
// stage's transmitter in sendmmsg-sized batches; the caller's timer waits for the rest. Shared by
// the torch peer (GradientPeer) and the C++ trainer's worker.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/ddl/path_pacer.hpp"

namespace predrop::ddl {

/// Sends packets[next ..] as far as `pacer` allows at `now_us` (each packet `packet_bytes` on
/// the wire), advancing `next` past what went. Returns nullopt once every packet went, else how
/// long (µs, may be 0) until the pacer allows the next one.
std::optional<std::uint64_t> send_paced(PathPacer& pacer, chain::StageTransmitter& tx,
                                        std::span<const chain::OutgoingPacket> packets,
                                        std::size_t& next, std::size_t packet_bytes,
                                        std::uint64_t now_us);

}  // namespace predrop::ddl

#pragma once
// Per-worker sending of the DDL relay (relay.hpp): when a stage closes, each live worker's egress
// plans its discards at that worker's R, the relay records what it planned (for the report to
// come), tells the worker the stage closed (PDSC) together with its report on the worker's own
// uplink (PDFB, P not valid), and then sends the shared aggregate packets through the worker's
// transmitter: at once (burst), or as fast as the worker's path pacer allows (paced: at the
// rate of that worker's path, everything at once while the path is free or not yet measured;
// docs/ddl-torch.md "Pacing at the path's rate").
//
// Threading: the relay's loop thread. Nothing here allocates or logs.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/ddl/control_channel.hpp"
#include "predrop/ddl/relay.hpp"
#include "predrop/ddl/stage_collector.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "relay_peer.hpp"

namespace predrop::ddl {

/// Aggregate packets per sendmmsg call.
inline constexpr std::size_t kRelayPaceBatch = net::UdpEndpoint::kMaxSendBatch;

/// What send_stage() needs besides the peer.
struct StageSend {
  const ClosedStage* report = nullptr;  ///< The closed stage (the peer's uplink part in it).
  std::span<const chain::OutgoingPacket> packets;  ///< The shared aggregate.
  std::span<const std::uint8_t> importance;        ///< One byte per packet.
  std::uint32_t live = 0;                          ///< Workers in the stage.
  std::uint32_t control_ssrc = 0;
  bool paced = false;
  std::uint64_t now = 0;
};

/// Starts stage `send.report->stage` on `peer`'s egress and sends (or, paced, queues) it; returns
/// the worker's part of the stage row.
DdlRelayPeerStage send_stage(RelayPeer& peer, const StageSend& send, ControlChannel& control,
                             net::UdpEndpoint& socket);

/// Sends what `peer`'s pacer allows at `now` of stage `stage`'s aggregate still to go (in
/// sendmmsg batches); returns when it may send more, or nullopt when nothing is left.
std::optional<std::uint64_t> pace_peer(RelayPeer& peer,
                                       std::span<const chain::OutgoingPacket> packets,
                                       std::uint32_t stage, std::uint64_t now);

}  // namespace predrop::ddl

#pragma once
// Per-worker sending of the DDL relay (relay.hpp): when a stage closes, each live worker's egress
// plans its discards at that worker's R, the relay records what it planned (for the report to
// come), tells the worker the stage closed (PDSC) together with its report on the worker's own
// uplink (PDFB, P not valid), and then sends the shared aggregate packets through the worker's
// transmitter: at once (burst), or one sendmmsg batch per worker per pacing tick, interleaved
// (paced; docs/ddl-mode.md "Pacing").
//
// Threading: the relay's loop thread. Nothing here allocates or logs.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/ddl/control_channel.hpp"
#include "predrop/ddl/relay.hpp"
#include "predrop/ddl/stage_collector.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "relay_peer.hpp"

namespace predrop::ddl {

/// Aggregate packets per worker per pacing tick (one sendmmsg call).
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

/// True if some live peer still has paced packets to send.
bool pace_pending(std::span<const std::unique_ptr<RelayPeer>> peers);

/// One pacing tick of stage `stage` for one peer: its next batch, if it has packets to go.
/// The relay calls it for every live peer in turn, so that no worker waits for the others.
void pace_peer(RelayPeer& peer, std::span<const chain::OutgoingPacket> packets, std::uint32_t stage,
               std::uint64_t now);

}  // namespace predrop::ddl

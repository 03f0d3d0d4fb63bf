#pragma once
// One worker as the DDL relay sees it (relay.hpp): who it is (rank, address, SSRCs), its two
// chains (the ingress net chain for its gradient, the egress transmitter for the aggregate), its
// rate controller, what the relay sent it in recent stages (so that a late report finds the R it
// is about), its liveness and its pacing position. Plain state: the relay's units act on it
// (relay_membership.hpp admits it, relay_sender.hpp sends to it, relay_reports.hpp feeds its
// controller, relay_eviction.hpp judges its silence).
//
// Threading: the relay's loop thread.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "predrop/chain/report_ledger.hpp"
#include "predrop/chain/stage_receiver.hpp"
#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/core/rate_controller.hpp"
#include "predrop/core/stage_report.hpp"
#include "predrop/ddl/path_pacer.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/ddl/relay.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/wire/rtp.hpp"

namespace predrop::ddl {

/// What the relay sent one worker in each recent stage and which reports it still waits for:
/// the ledger's record (R, planned, discarded, sent) with the stage's times beside it, kept until
/// its report comes or is declared missing (relay_reports.hpp).
using RelayReportLedger = chain::ReportLedger<DdlRelayStageTimes>;

/// One worker of the job.
struct RelayPeer {
  std::uint16_t rank = 0;
  net::SocketAddress address;
  std::uint32_t ssrc = 0;           ///< The worker's SSRC (its RTP and RTCP).
  std::uint32_t downlink_ssrc = 0;  ///< The relay's RTP SSRC towards it.
  std::uint64_t worker_nonce = 0;   ///< Its join's nonce, echoed in every PDJA to it.
  bool gone = false;                ///< Left or evicted.
  std::uint32_t contributor = 0;    ///< Index in the current ddl::StageCollector.
  // Liveness (relay_eviction.hpp).
  bool heard_since_close = false;
  std::uint32_t missed_stages = 0;
  std::uint64_t last_heard_us = 0;
  // Chains and control.
  std::unique_ptr<chain::StageReceiver> rx;
  std::unique_ptr<chain::StageTransmitter> tx;
  std::unique_ptr<core::RateController> controller;
  // Reports (relay_reports.hpp).
  RelayReportLedger reports;
  std::array<core::StageMeasurement, 4> metered{};  ///< The uplink meter's last stages.
  // Pacing (relay_sender.hpp): the aggregate packets [pace_next, pace_end) are still to go, at
  // the rate of this worker's path (its reports' received / L).
  std::size_t pace_next = 0;
  std::size_t pace_end = 0;
  std::size_t packet_bytes = 0;  ///< One aggregate datagram on the wire (for the pacer).
  PathPacer pacer;
};

/// What every peer's chains are built from.
struct RelayPeerSettings {
  std::uint16_t chunk_elements = 256;
  JobKey key;
  core::PolicyConfig policy;
  core::DiscardPolicy discard = core::DiscardPolicy::kPriority;
  std::uint64_t discard_seed = 1;
};

/// Called for every RTP packet of a peer that passed its ingress chain.
using PeerPacketHandler =
    std::function<void(RelayPeer& peer, const wire::RtpPacketView& packet, std::uint64_t arrival)>;

/// Builds a peer with its chains: ingress (SRTP in, RTP, meter) delivering to `on_packet`, egress
/// towards `from` on `socket` with discard seed `discard_seed + rank`, and a fresh controller.
/// Throws what net::SrtpSession throws, and std::bad_alloc.
std::unique_ptr<RelayPeer> make_relay_peer(const RelayPeerSettings& settings,
                                           net::UdpEndpoint& socket, std::uint16_t rank,
                                           std::uint32_t ssrc, std::uint32_t downlink_ssrc,
                                           const net::SocketAddress& from, std::uint64_t now,
                                           PeerPacketHandler on_packet);

}  // namespace predrop::ddl

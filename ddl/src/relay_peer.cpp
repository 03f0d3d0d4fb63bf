#include "relay_peer.hpp"

#include <optional>
#include <utility>

#include "predrop/ddl/chunk.hpp"
#include "predrop/net/srtp_session.hpp"

namespace predrop::ddl {

std::unique_ptr<RelayPeer> make_relay_peer(const RelayPeerSettings& s, net::UdpEndpoint& socket,
                                           std::uint16_t rank, std::uint32_t ssrc,
                                           std::uint32_t downlink_ssrc,
                                           const net::SocketAddress& from, std::uint64_t now,
                                           PeerPacketHandler on_packet) {
  auto p = std::make_unique<RelayPeer>();
  p->rank = rank;
  p->address = from;
  p->ssrc = ssrc;
  p->downlink_ssrc = downlink_ssrc;
  p->last_heard_us = now;
  p->packet_bytes = chunk_payload_size(s.chunk_elements) + kChunkPacketOverheadBytes;
  RelayPeer* raw = p.get();

  chain::ReceiverConfig rc;
  rc.max_datagram = 2048 + chunk_payload_size(s.chunk_elements);
  std::optional<net::SrtpSession> in;
  if (s.key.suite) in.emplace(net::SrtpDirection::Inbound, *s.key.suite, s.key.key);
  p->rx = std::make_unique<chain::StageReceiver>(
      rc, std::move(in),
      [raw, on_packet = std::move(on_packet)](const wire::RtpPacketView& v, std::uint64_t arrival) {
        on_packet(*raw, v, arrival);
      },
      [raw](const core::StageMeasurement& m) { raw->metered[m.stage % 4] = m; });

  chain::TransmitterConfig tc;
  tc.max_payload_size = chunk_payload_size(s.chunk_elements);
  tc.tracks.push_back(
      chain::TrackConfig{downlink_ssrc, kChunkPayloadType, 0, 0, from, std::nullopt});
  std::optional<net::SrtpSession> out;
  if (s.key.suite) out.emplace(net::SrtpDirection::Outbound, *s.key.suite, s.key.key);
  p->tx = std::make_unique<chain::StageTransmitter>(
      socket, tc, std::move(out), core::DiscardPlanner(s.discard, s.discard_seed + rank));
  p->controller = std::move(core::make_rate_controller(s.policy).value());
  return p;
}

}  // namespace predrop::ddl

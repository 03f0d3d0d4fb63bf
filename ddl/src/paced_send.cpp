#include "predrop/ddl/paced_send.hpp"

#include <algorithm>

#include "predrop/net/udp_endpoint.hpp"

namespace predrop::ddl {

std::optional<std::uint64_t> send_paced(PathPacer& pacer, chain::StageTransmitter& tx,
                                        std::span<const chain::OutgoingPacket> packets,
                                        std::size_t& next, std::size_t packet_bytes,
                                        std::uint64_t now_us) {
  while (next < packets.size()) {
    const std::size_t want = std::min(net::UdpEndpoint::kMaxSendBatch, packets.size() - next);
    const std::size_t n = pacer.allowance(now_us, packet_bytes, want);
    if (n == 0) return pacer.next_due_us(now_us, packet_bytes) - now_us;
    pacer.sent(tx.send(packets.subspan(next, n), next, now_us), packet_bytes);
    next += n;
  }
  return std::nullopt;
}

}  // namespace predrop::ddl

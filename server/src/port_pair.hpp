#pragma once
// The server's RTP/RTCP port pair (the server_port its SETUP replies name): an even port and the
// next one (RFC 3550 §11), the configured pair or a free one found by trying random even ports.
//
// Threading: the server's loop thread, at start-up. Errors: throws std::runtime_error (a bad bind
// address, the configured pair taken, or no free pair after 50 tries).
#include <cstdint>
#include <memory>
#include <string>

#include "predrop/net/event_loop.hpp"
#include "predrop/net/udp_endpoint.hpp"

namespace predrop::server::detail {

/// The two sockets.
struct PortPair {
  std::unique_ptr<net::UdpEndpoint> rtp;
  std::unique_ptr<net::UdpEndpoint> rtcp;
};

/// Binds the pair on `bind_ip`: at `rtp_port` and +1, or at a free even pair if `rtp_port` is 0.
/// Datagrams go to `on_rtp` and `on_rtcp`.
PortPair open_port_pair(net::EventLoop& loop, const std::string& bind_ip, std::uint16_t rtp_port,
                        const net::UdpEndpoint::DatagramHandler& on_rtp,
                        const net::UdpEndpoint::DatagramHandler& on_rtcp);

}  // namespace predrop::server::detail

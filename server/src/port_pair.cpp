#include "port_pair.hpp"

#include <stdexcept>

#include "predrop/net/os_random.hpp"

namespace predrop::server::detail {

PortPair open_port_pair(net::EventLoop& loop, const std::string& bind_ip, std::uint16_t rtp_port,
                        const net::UdpEndpoint::DatagramHandler& on_rtp,
                        const net::UdpEndpoint::DatagramHandler& on_rtcp) {
  auto address = [&](std::uint16_t port) {
    auto a = net::SocketAddress::from_ip(bind_ip, port);
    if (!a) throw std::runtime_error("bad bind address: " + a.error().message);
    return *a;
  };
  net::UdpOptions udp;
  udp.send_buffer_bytes = 4 << 20;
  udp.recv_buffer_bytes = 1 << 20;
  for (int attempt = 0; attempt < 50; ++attempt) {
    const std::uint16_t want =
        rtp_port != 0 ? rtp_port
                      : static_cast<std::uint16_t>(20000 + 2 * (net::random_u32() % 10000));
    auto rtp = net::UdpEndpoint::open(loop, address(want), udp, on_rtp);
    if (!rtp) {
      if (rtp_port != 0) throw std::runtime_error("RTP port: " + rtp.error().message);
      continue;
    }
    auto rtcp =
        net::UdpEndpoint::open(loop, address(static_cast<std::uint16_t>(want + 1)), udp, on_rtcp);
    if (!rtcp) {
      if (rtp_port != 0) throw std::runtime_error("RTCP port: " + rtcp.error().message);
      continue;
    }
    return PortPair{std::move(rtp.value()), std::move(rtcp.value())};
  }
  throw std::runtime_error("no free RTP/RTCP port pair found");
}

}  // namespace predrop::server::detail

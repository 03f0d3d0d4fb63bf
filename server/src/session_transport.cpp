#include "predrop/server/session_transport.hpp"

#include <utility>

namespace predrop::server {

UdpTransport::UdpTransport(net::UdpEndpoint& rtp_socket, net::UdpEndpoint& rtcp_socket,
                           std::vector<std::optional<net::SocketAddress>> rtcp_to)
    : rtp_socket_(rtp_socket), rtcp_socket_(rtcp_socket), rtcp_to_(std::move(rtcp_to)) {}

bool UdpTransport::has_rtcp(std::size_t track) const {
  return track < rtcp_to_.size() && rtcp_to_[track].has_value();
}

bool UdpTransport::send_rtcp(std::size_t track, std::span<const std::uint8_t> packet) {
  return has_rtcp(track) && rtcp_socket_.send(packet, *rtcp_to_[track]);
}

InterleavedTransport::InterleavedTransport(net::UdpEndpoint& rtp_socket, InterleavedOutput& output,
                                           std::vector<InterleavedChannels> channels)
    : rtp_socket_(rtp_socket), output_(output), channels_(std::move(channels)) {}

bool InterleavedTransport::send_rtcp(std::size_t track, std::span<const std::uint8_t> packet) {
  if (!has_rtcp(track)) return false;
  if (output_.write_frame(channels_[track].rtcp, packet)) return true;
  ++drops_;
  return false;
}

std::size_t InterleavedTransport::send_batch(std::span<const net::OutDatagram> batch,
                                             std::span<const std::uint8_t> tracks) {
  std::size_t taken = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const std::size_t t = tracks[i];
    if (t < channels_.size() &&
        output_.write_frame(channels_[t].rtp, std::span(batch[i].data, batch[i].len))) {
      ++taken;
    } else {
      ++drops_;
    }
  }
  return taken;
}

}  // namespace predrop::server

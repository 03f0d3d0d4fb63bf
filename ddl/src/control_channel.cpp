#include "predrop/ddl/control_channel.hpp"

#include <algorithm>

namespace predrop::ddl {

ControlChannel::ControlChannel(const JobKey& key) {
  if (key.suite) {
    out_.emplace(net::SrtpDirection::Outbound, *key.suite, key.key);
    in_.emplace(net::SrtpDirection::Inbound, *key.suite, key.key);
  }
}

bool ControlChannel::send(net::UdpEndpoint& socket, const ControlMessage& message,
                          const net::SocketAddress& to) {
  auto n = encode_control(buffer_, message, out_ ? &*out_ : nullptr);
  if (!n) return false;
  return socket.send(std::span<const std::uint8_t>(buffer_.data(), *n), to);
}

core::Result<ControlMessage> ControlChannel::decode(std::span<const std::uint8_t> datagram) {
  if (!fits(datagram.size())) return core::make_error("control datagram too large");
  std::copy(datagram.begin(), datagram.end(), buffer_.begin());
  return decode_control(buffer_, datagram.size(), in_ ? &*in_ : nullptr);
}

}  // namespace predrop::ddl

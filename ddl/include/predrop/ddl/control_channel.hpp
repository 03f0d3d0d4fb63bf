#pragma once
// The SRTCP control channel of one end of a DDL job (the relay, or a worker): the outbound and
// inbound SRTCP sessions of the job key and one datagram buffer, so that encoding, protecting and
// sending a control compound (protocol.hpp), and unprotecting and parsing a received one, are one
// call each. With a plain key (suite nullopt) the compounds travel unprotected.
//
// Threading: loop thread. Memory: everything is allocated at construction; send() and decode()
// allocate only for an error's text.
#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "predrop/core/result.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"

namespace predrop::ddl {

/// SRTCP in and out with one job key, over a caller's socket.
class ControlChannel {
 public:
  /// Creates the SRTCP sessions of `key` (none for a plain key). Throws what net::SrtpSession
  /// throws if libsrtp refuses the key (start-up only: the key was validated before).
  explicit ControlChannel(const JobKey& key);

  /// Whether a received datagram of `size` bytes fits the buffer (larger ones are dropped).
  static bool fits(std::size_t size) { return size <= kMaxControlDatagram - net::kSrtpMaxTrailer; }

  /// Encodes `message`, protects it and sends it to `to`; false if encoding, protection or the
  /// kernel refused (the socket counts the latter).
  bool send(net::UdpEndpoint& socket, const ControlMessage& message, const net::SocketAddress& to);

  /// Copies `datagram` (which must fit()), unprotects it and parses it.
  core::Result<ControlMessage> decode(std::span<const std::uint8_t> datagram);

 private:
  std::optional<net::SrtpSession> out_, in_;
  std::array<std::uint8_t, kMaxControlDatagram> buffer_{};
};

}  // namespace predrop::ddl

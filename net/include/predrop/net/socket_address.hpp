#pragma once
// An IPv4 or IPv6 address with a port, as a plain value (copyable, comparable, hashable), so that
// sessions can key maps by peer address and the send path can hold destinations without any
// system header in the public API.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "predrop/core/result.hpp"

struct sockaddr;
struct sockaddr_storage;

namespace predrop::net {

/// IPv4 or IPv6 address plus UDP/TCP port. A default-constructed value is 0.0.0.0:0.
class SocketAddress {
 public:
  /// Address family of a SocketAddress.
  enum class Family : std::uint8_t { V4, V6 };

  SocketAddress() = default;

  /// Parses "a.b.c.d:port" or "[v6]:port" (optionally "[fe80::1%eth0]:port"); port 0..65535.
  static core::Result<SocketAddress> parse(std::string_view text);
  /// Parses a bare IP literal ("127.0.0.1", "::1", no brackets) and pairs it with `port`.
  static core::Result<SocketAddress> from_ip(std::string_view ip, std::uint16_t port);
  /// An IPv4 address from its four octets in network order.
  static SocketAddress v4(std::array<std::uint8_t, 4> octets, std::uint16_t port);
  /// An IPv6 address from its sixteen octets in network order.
  static SocketAddress v6(const std::array<std::uint8_t, 16>& octets, std::uint16_t port,
                          std::uint32_t scope_id = 0);
  /// 127.0.0.1:port.
  static SocketAddress loopback_v4(std::uint16_t port) { return v4({127, 0, 0, 1}, port); }
  /// [::1]:port.
  static SocketAddress loopback_v6(std::uint16_t port);
  /// 0.0.0.0:port (bind to every IPv4 interface).
  static SocketAddress any_v4(std::uint16_t port) { return v4({0, 0, 0, 0}, port); }
  /// Converts a kernel sockaddr (AF_INET or AF_INET6); other families are an error.
  static core::Result<SocketAddress> from_sockaddr(const sockaddr* addr);

  /// Writes this address into `out`; returns the length to pass to bind/sendto/connect.
  std::uint32_t to_sockaddr(sockaddr_storage& out) const;

  Family family() const { return family_; }
  bool is_v4() const { return family_ == Family::V4; }
  bool is_v6() const { return family_ == Family::V6; }
  std::uint16_t port() const { return port_; }
  /// IPv6 zone index (0 when none or IPv4).
  std::uint32_t scope_id() const { return scope_id_; }
  /// Address octets in network order: 4 for IPv4, 16 for IPv6.
  const std::uint8_t* ip_bytes() const { return ip_.data(); }
  /// Number of meaningful bytes at ip_bytes().
  std::size_t ip_size() const { return is_v4() ? 4 : 16; }
  /// Same address with another port.
  SocketAddress with_port(std::uint16_t port) const;

  /// The IP alone: "127.0.0.1", "::1", "fe80::1%2" (numeric zone).
  std::string ip_string() const;
  /// "127.0.0.1:554" or "[::1]:554"; parse(to_string()) gives back an equal value.
  std::string to_string() const;

  friend bool operator==(const SocketAddress&, const SocketAddress&) = default;

 private:
  // Unused trailing octets stay zero so that defaulted equality and hashing see only real data.
  std::array<std::uint8_t, 16> ip_{};
  std::uint32_t scope_id_ = 0;
  std::uint16_t port_ = 0;
  Family family_ = Family::V4;
};

}  // namespace predrop::net

/// Hash over family, octets, port and zone, so SocketAddress can key unordered containers.
template <>
struct std::hash<predrop::net::SocketAddress> {
  std::size_t operator()(const predrop::net::SocketAddress& a) const noexcept;
};

#include "predrop/net/socket_address.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <charconv>
#include <cstring>

namespace predrop::net {
namespace {

core::Result<std::uint16_t> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5) {
    return core::make_error("bad port '" + std::string(text) + "'");
  }
  unsigned value = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value > 65535) {
    return core::make_error("bad port '" + std::string(text) + "'");
  }
  return static_cast<std::uint16_t>(value);
}

}  // namespace

SocketAddress SocketAddress::v4(std::array<std::uint8_t, 4> octets, std::uint16_t port) {
  SocketAddress a;
  std::memcpy(a.ip_.data(), octets.data(), 4);
  a.port_ = port;
  a.family_ = Family::V4;
  return a;
}

SocketAddress SocketAddress::v6(const std::array<std::uint8_t, 16>& octets, std::uint16_t port,
                                std::uint32_t scope_id) {
  SocketAddress a;
  a.ip_ = octets;
  a.port_ = port;
  a.scope_id_ = scope_id;
  a.family_ = Family::V6;
  return a;
}

SocketAddress SocketAddress::loopback_v6(std::uint16_t port) {
  std::array<std::uint8_t, 16> octets{};
  octets[15] = 1;
  return v6(octets, port);
}

SocketAddress SocketAddress::with_port(std::uint16_t port) const {
  SocketAddress a = *this;
  a.port_ = port;
  return a;
}

core::Result<SocketAddress> SocketAddress::from_ip(std::string_view ip, std::uint16_t port) {
  // inet_pton needs a NUL-terminated string; INET6_ADDRSTRLEN plus a zone name bounds valid input.
  char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
  if (ip.empty() || ip.size() >= sizeof(buf)) {
    return core::make_error("bad IP address '" + std::string(ip) + "'");
  }
  std::memcpy(buf, ip.data(), ip.size());
  buf[ip.size()] = '\0';

  std::array<std::uint8_t, 4> v4_octets{};
  if (ip.find(':') == std::string_view::npos) {
    if (::inet_pton(AF_INET, buf, v4_octets.data()) == 1) {
      return v4(v4_octets, port);
    }
    return core::make_error("bad IPv4 address '" + std::string(ip) + "'");
  }

  std::uint32_t scope = 0;
  if (char* pct = std::strchr(buf, '%')) {
    *pct = '\0';
    std::string_view zone(pct + 1);
    if (zone.empty()) {
      return core::make_error("empty IPv6 zone in '" + std::string(ip) + "'");
    }
    unsigned numeric = 0;
    auto [ptr, ec] = std::from_chars(zone.data(), zone.data() + zone.size(), numeric);
    if (ec == std::errc() && ptr == zone.data() + zone.size()) {
      scope = numeric;
    } else {
      scope = ::if_nametoindex(pct + 1);
      if (scope == 0) {
        return core::make_error("unknown IPv6 zone '" + std::string(zone) + "'");
      }
    }
  }
  std::array<std::uint8_t, 16> v6_octets{};
  if (::inet_pton(AF_INET6, buf, v6_octets.data()) != 1) {
    return core::make_error("bad IPv6 address '" + std::string(ip) + "'");
  }
  return v6(v6_octets, port, scope);
}

core::Result<SocketAddress> SocketAddress::parse(std::string_view text) {
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return core::make_error("expected '[v6]:port', got '" + std::string(text) + "'");
    }
    auto port = parse_port(text.substr(close + 2));
    if (!port) {
      return port.error();
    }
    auto addr = from_ip(text.substr(1, close - 1), *port);
    if (addr && !addr->is_v6()) {
      return core::make_error("brackets hold an IPv6 address, got '" + std::string(text) + "'");
    }
    return addr;
  }
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return core::make_error("expected 'ip:port', got '" + std::string(text) + "'");
  }
  if (text.find(':') != colon) {
    return core::make_error("IPv6 needs brackets ('[v6]:port'), got '" + std::string(text) + "'");
  }
  auto port = parse_port(text.substr(colon + 1));
  if (!port) {
    return port.error();
  }
  return from_ip(text.substr(0, colon), *port);
}

core::Result<SocketAddress> SocketAddress::from_sockaddr(const sockaddr* addr) {
  if (addr == nullptr) {
    return core::make_error("null sockaddr");
  }
  if (addr->sa_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, addr, sizeof(in));
    std::array<std::uint8_t, 4> octets{};
    std::memcpy(octets.data(), &in.sin_addr, 4);
    return v4(octets, ntohs(in.sin_port));
  }
  if (addr->sa_family == AF_INET6) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, addr, sizeof(in6));
    std::array<std::uint8_t, 16> octets{};
    std::memcpy(octets.data(), &in6.sin6_addr, 16);
    return v6(octets, ntohs(in6.sin6_port), in6.sin6_scope_id);
  }
  return core::make_error("unsupported address family " + std::to_string(addr->sa_family));
}

std::uint32_t SocketAddress::to_sockaddr(sockaddr_storage& out) const {
  std::memset(&out, 0, sizeof(out));
  if (is_v4()) {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(port_);
    std::memcpy(&in.sin_addr, ip_.data(), 4);
    std::memcpy(&out, &in, sizeof(in));
    return sizeof(in);
  }
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(port_);
  in6.sin6_scope_id = scope_id_;
  std::memcpy(&in6.sin6_addr, ip_.data(), 16);
  std::memcpy(&out, &in6, sizeof(in6));
  return sizeof(in6);
}

std::string SocketAddress::ip_string() const {
  char buf[INET6_ADDRSTRLEN];
  ::inet_ntop(is_v4() ? AF_INET : AF_INET6, ip_.data(), buf, sizeof(buf));
  std::string s(buf);
  // Numeric zones keep to_string() parseable without consulting the interface table.
  if (is_v6() && scope_id_ != 0) {
    s += "%" + std::to_string(scope_id_);
  }
  return s;
}

std::string SocketAddress::to_string() const {
  if (is_v4()) {
    return ip_string() + ":" + std::to_string(port_);
  }
  return "[" + ip_string() + "]:" + std::to_string(port_);
}

}  // namespace predrop::net

std::size_t std::hash<predrop::net::SocketAddress>::operator()(
    const predrop::net::SocketAddress& a) const noexcept {
  // FNV-1a over the meaningful fields; cheap and good enough for a few thousand peers.
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint8_t byte) {
    h ^= byte;
    h *= 1099511628211ull;
  };
  mix(static_cast<std::uint8_t>(a.family()));
  for (std::size_t i = 0; i < a.ip_size(); ++i) {
    mix(a.ip_bytes()[i]);
  }
  mix(static_cast<std::uint8_t>(a.port() >> 8));
  mix(static_cast<std::uint8_t>(a.port()));
  for (int shift = 0; shift < 32; shift += 8) {
    mix(static_cast<std::uint8_t>(a.scope_id() >> shift));
  }
  return static_cast<std::size_t>(h);
}

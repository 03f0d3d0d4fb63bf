#include "predrop/server/coupling_groups.hpp"

#include <array>
#include <cstddef>

namespace predrop::server {

CouplingGroups::CouplingGroups(unsigned v4_prefix, unsigned v6_prefix)
    : v4_prefix_(v4_prefix > 32 ? 32 : v4_prefix), v6_prefix_(v6_prefix > 128 ? 128 : v6_prefix) {}

std::string CouplingGroups::prefix_of(const net::SocketAddress& address) const {
  const unsigned bits = address.is_v4() ? v4_prefix_ : v6_prefix_;
  if (bits == 0) return {};
  // The address with every bit past the prefix cleared, written as the family writes it.
  std::array<std::uint8_t, 16> masked{};
  const std::size_t n = address.ip_size();
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned first_bit = static_cast<unsigned>(i) * 8;
    std::uint8_t keep = 0;
    if (first_bit + 8 <= bits) {
      keep = 0xff;
    } else if (first_bit < bits) {
      keep = static_cast<std::uint8_t>(0xff << (8 - (bits - first_bit)));
    }
    masked[i] = address.ip_bytes()[i] & keep;
  }
  const net::SocketAddress base =
      address.is_v4() ? net::SocketAddress::v4({masked[0], masked[1], masked[2], masked[3]}, 0)
                      : net::SocketAddress::v6(masked, 0);
  return base.ip_string() + "/" + std::to_string(bits);
}

std::shared_ptr<core::SharedBottleneck> CouplingGroups::group_for(
    const net::SocketAddress& address) {
  std::string key = prefix_of(address);
  if (key.empty()) return nullptr;
  const std::lock_guard lock(mutex_);
  // Groups whose last session ended are dropped here, so the map stays as large as the
  // prefixes with sessions (plus the ones that ended since the last session start).
  std::erase_if(groups_, [](const auto& g) { return g.second.expired(); });
  auto& slot = groups_[std::move(key)];
  auto group = slot.lock();
  if (!group) {
    group = std::make_shared<core::SharedBottleneck>();
    slot = group;
  }
  return group;
}

}  // namespace predrop::server

#pragma once
// Which sessions the server couples (core::SharedBottleneck): those whose clients' addresses
// share a configured prefix (control.couple_prefix_v4 / couple_prefix_v6). The operator says
// where viewers share one access link — a venue's or an office's uplink behind one prefix, a
// household behind one address — because the server cannot tell it from one session's reports.
// Off by default: behind a carrier-grade NAT thousands of unrelated viewers share one address,
// and coupling them would hand a viewer on a fast path the cuts of one on a slow path.
//
// One registry serves every worker (sessions of one client may land on different workers):
// group_for() takes a mutex, once per session start.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "predrop/core/shared_bottleneck.hpp"
#include "predrop/net/socket_address.hpp"

namespace predrop::server {

/// The coupled groups of one server process, keyed by the clients' address prefix.
class CouplingGroups {
 public:
  /// Prefix lengths in bits: v4 in 1..32, v6 in 1..128 (0: that family is not coupled).
  CouplingGroups(unsigned v4_prefix, unsigned v6_prefix);

  /// The group of sessions whose client is `address` (the same object for every address with
  /// the same prefix while one of its sessions lives), or null when its family is not coupled.
  std::shared_ptr<core::SharedBottleneck> group_for(const net::SocketAddress& address);

  /// The prefix `address` falls in ("198.18.1.0/24"), or "" when its family is not coupled.
  std::string prefix_of(const net::SocketAddress& address) const;

 private:
  unsigned v4_prefix_;
  unsigned v6_prefix_;
  std::mutex mutex_;
  std::map<std::string, std::weak_ptr<core::SharedBottleneck>> groups_;
};

}  // namespace predrop::server

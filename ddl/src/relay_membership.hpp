#pragma once
// Who is in a DDL job (relay.hpp): the workers by rank and by source address, how many joined,
// the job's tensor (the first joiner's length and model seed, which every later joiner must
// match), and the admission rules of a join (docs/ddl-mode.md "Join handshake"). It decides;
// the relay answers, builds the peer's chains and announces.
//
// Threading: the relay's loop thread.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/ddl/chunk.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/net/socket_address.hpp"
#include "relay_peer.hpp"

namespace predrop::ddl {

/// The membership of one job.
class RelayMembership {
 public:
  /// A job of `workers` ranks.
  explicit RelayMembership(std::uint32_t workers);

  /// A join that may be admitted: its rank, and the job's chunk plan if it is the first joiner
  /// (who fixes the tensor).
  struct Admission {
    std::uint16_t rank = 0;
    std::optional<ChunkPlan> first_plan;
  };

  /// The job's limits on a join.
  struct Limits {
    std::uint16_t chunk_elements = 256;
    std::uint32_t max_tensor_elements = 0;  ///< Largest tensor the first joiner may fix.
  };

  /// Checks a join from an address that is not in the job, in this order: the job has not
  /// started, is not full, the rank is free and in range, the tensor length and model seed match
  /// the job's, the SSRC is not in use; for the first joiner, its tensor is at most
  /// max_tensor_elements and at most kMaxStageChunks chunks. The error is the refusal's reason.
  core::Result<Admission> admit(const JoinRequest& join, std::uint32_t ssrc,
                                std::uint32_t control_ssrc, bool started, std::uint32_t stage,
                                const Limits& limits) const;

  /// Fixes the job's tensor (the first admitted joiner's).
  void fix_tensor(const ChunkPlan& plan, std::uint64_t model_seed);
  /// A fresh downlink SSRC, distinct from every SSRC in the job and from `worker_ssrc`.
  std::uint32_t new_downlink_ssrc(std::uint32_t worker_ssrc, std::uint32_t control_ssrc) const;
  /// True if a peer uses `ssrc` (its own or its downlink's).
  bool ssrc_in_use(std::uint32_t ssrc) const;

  /// Adds an admitted peer at its rank.
  void add(std::unique_ptr<RelayPeer> peer);
  /// Before the start: takes a leaving peer out, freeing its rank and address.
  void forget(RelayPeer& peer);
  /// Numbers the live peers 0.. as contributors of a new stage receiver; returns how many.
  std::uint32_t number_live();

  /// The peer at `from`, or nullptr.
  RelayPeer* find(const net::SocketAddress& from) const;
  /// Every rank's peer (nullptr where free), by rank.
  std::span<const std::unique_ptr<RelayPeer>> peers() const { return peers_; }
  std::uint32_t workers() const { return static_cast<std::uint32_t>(peers_.size()); }
  std::uint32_t joined() const { return joined_; }
  /// The job's tensor (valid once fixed).
  const ChunkPlan& plan() const { return plan_; }
  bool tensor_fixed() const { return tensor_elements_ != 0; }

 private:
  std::vector<std::unique_ptr<RelayPeer>> peers_;  // by rank
  std::unordered_map<net::SocketAddress, std::uint16_t> by_address_;
  std::uint32_t joined_ = 0;
  std::uint32_t tensor_elements_ = 0;
  std::uint64_t model_seed_ = 0;
  ChunkPlan plan_;
};

}  // namespace predrop::ddl

#include "relay_membership.hpp"

#include <utility>

#include "predrop/ddl/relay.hpp"

namespace predrop::ddl {

RelayMembership::RelayMembership(std::uint32_t workers) {
  peers_.resize(workers);
}

core::Result<RelayMembership::Admission> RelayMembership::admit(const JoinRequest& j,
                                                                std::uint32_t ssrc,
                                                                std::uint32_t control_ssrc,
                                                                bool started, std::uint32_t stage,
                                                                const Limits& limits) const {
  const std::uint32_t workers = this->workers();
  if (started) {
    return core::make_error("the job is already running (stage " + std::to_string(stage) +
                            "); late joiners are not admitted: start every worker before the "
                            "job begins");
  }
  if (joined_ >= workers) {
    return core::make_error("the job is full (" + std::to_string(workers) + " workers)");
  }
  Admission a;
  std::uint16_t rank = j.rank;
  if (rank == kAnyRank) {
    rank = 0;
    while (rank < workers && peers_[rank]) {
      ++rank;
    }
  } else if (rank >= workers) {
    return core::make_error("rank " + std::to_string(rank) + " is out of range: the job has " +
                            std::to_string(workers) + " workers (ranks 0.." +
                            std::to_string(workers - 1) + ")");
  } else if (peers_[rank]) {
    return core::make_error("rank " + std::to_string(rank) + " is taken by " +
                            peers_[rank]->address.to_string());
  }
  a.rank = rank;
  if (tensor_elements_ != 0 && j.tensor_elements != tensor_elements_) {
    return core::make_error("the worker's model has " + std::to_string(j.tensor_elements) +
                            " parameters, the job's has " + std::to_string(tensor_elements_));
  }
  if (tensor_elements_ != 0 && j.model_seed != model_seed_) {
    return core::make_error("the worker's model seed " + std::to_string(j.model_seed) +
                            " differs from the job's " + std::to_string(model_seed_) +
                            ": every worker must start from the same model");
  }
  if (ssrc == control_ssrc || ssrc_in_use(ssrc)) {
    return core::make_error("SSRC collision; restart the worker");
  }
  if (tensor_elements_ == 0) {
    // The first joiner fixes the tensor the relay allocates for: bounded here, before anything
    // is sized by it.
    if (j.tensor_elements > limits.max_tensor_elements) {
      return core::make_error(
          "the worker's model has " + std::to_string(j.tensor_elements) +
          " parameters, more than this relay takes (ddl.max_tensor_elements = " +
          std::to_string(limits.max_tensor_elements) + ")");
    }
    auto plan = chunk_tensor(j.tensor_elements, limits.chunk_elements);
    if (!plan) {
      return core::make_error("cannot cut the worker's tensor into chunks: " +
                              plan.error().message);
    }
    if (plan->size() > kMaxStageChunks) {
      return core::make_error("the worker's model of " + std::to_string(j.tensor_elements) +
                              " parameters needs " + std::to_string(plan->size()) + " chunks of " +
                              std::to_string(limits.chunk_elements) + " values, more than the " +
                              std::to_string(kMaxStageChunks) +
                              " a stage can announce; raise ddl.chunk_bytes");
    }
    a.first_plan = *plan;
  }
  return a;
}

void RelayMembership::fix_tensor(const ChunkPlan& plan, std::uint64_t model_seed) {
  plan_ = plan;
  tensor_elements_ = plan.total_elements();
  model_seed_ = model_seed;
}

std::uint32_t RelayMembership::new_downlink_ssrc(std::uint32_t worker_ssrc,
                                                 std::uint32_t control_ssrc) const {
  std::uint32_t s = 0;
  do {
    s = generate_ssrc();
  } while (s == control_ssrc || s == worker_ssrc || ssrc_in_use(s));
  return s;
}

bool RelayMembership::ssrc_in_use(std::uint32_t ssrc) const {
  for (const auto& p : peers_) {
    if (p && (p->ssrc == ssrc || p->downlink_ssrc == ssrc)) return true;
  }
  return false;
}

void RelayMembership::add(std::unique_ptr<RelayPeer> peer) {
  const std::uint16_t rank = peer->rank;
  by_address_[peer->address] = rank;
  peers_[rank] = std::move(peer);
  ++joined_;
}

void RelayMembership::forget(RelayPeer& peer) {
  by_address_.erase(peer.address);
  const std::uint16_t rank = peer.rank;
  --joined_;
  peers_[rank].reset();  // destroys `peer`
}

std::uint32_t RelayMembership::number_live() {
  std::uint32_t live = 0;
  for (auto& p : peers_) {
    if (p && !p->gone) p->contributor = live++;
  }
  return live;
}

RelayPeer* RelayMembership::find(const net::SocketAddress& from) const {
  const auto it = by_address_.find(from);
  return it == by_address_.end() ? nullptr : peers_[it->second].get();
}

}  // namespace predrop::ddl

#include "relay_eviction.hpp"

namespace predrop::ddl {

void note_stage_liveness(RelayPeer& p, const ContributorReport& uplink) {
  // A worker that sent nothing at all since the last close missed this stage.
  if (p.heard_since_close || uplink.received > 0) {
    p.missed_stages = 0;
  } else {
    ++p.missed_stages;
  }
  p.heard_since_close = false;
}

std::optional<std::string> silence_eviction(const RelayPeer& p, std::uint64_t now,
                                            std::uint32_t evict_after_stages,
                                            std::uint32_t evict_min_silence_ms) {
  if (p.gone || p.missed_stages < evict_after_stages) return std::nullopt;
  const std::uint64_t silent = now > p.last_heard_us ? now - p.last_heard_us : 0;
  if (silent < std::uint64_t{evict_min_silence_ms} * 1000) return std::nullopt;
  return "nothing received from it for " + std::to_string(p.missed_stages) + " stages (" +
         std::to_string(silent / 1000) + " ms)";
}

std::optional<std::string> timeout_eviction(const RelayPeer& p, std::uint64_t now,
                                            std::uint32_t peer_timeout_ms) {
  const std::uint64_t silent = now > p.last_heard_us ? now - p.last_heard_us : 0;
  if (p.gone || silent < std::uint64_t{peer_timeout_ms} * 1000) return std::nullopt;
  return "silent for " + std::to_string(peer_timeout_ms) + " ms";
}

}  // namespace predrop::ddl

#include "interleaved_link.hpp"

namespace predrop::server::detail {

InterleavedLink::InterleavedLink(net::TcpConnection* tcp, std::string* output, std::size_t capacity,
                                 std::uint64_t& frames_total, std::uint64_t& dropped_total)
    : queue_(
          std::make_unique<InterleavedQueue>(tcp, output, capacity, frames_total, dropped_total)) {}

bool InterleavedLink::free(unsigned rtp, unsigned rtcp) const {
  return rtp != rtcp && !in_use_.contains(static_cast<std::uint8_t>(rtp)) &&
         !in_use_.contains(static_cast<std::uint8_t>(rtcp));
}

std::optional<InterleavedChannels> InterleavedLink::choose(const InterleavedLink* link,
                                                           const rtsp::TransportSpec& spec) {
  const auto free = [link](unsigned rtp, unsigned rtcp) {
    return link == nullptr ? rtp != rtcp : link->free(rtp, rtcp);
  };
  if (spec.interleaved && free(spec.interleaved->rtp, spec.interleaved->rtcp)) {
    return InterleavedChannels{spec.interleaved->rtp, spec.interleaved->rtcp};
  }
  unsigned rtp = 0;
  while (rtp < 254 && !free(rtp, rtp + 1)) {
    rtp += 2;
  }
  if (rtp >= 254) return std::nullopt;
  return InterleavedChannels{static_cast<std::uint8_t>(rtp), static_cast<std::uint8_t>(rtp + 1)};
}

void InterleavedLink::reserve(const InterleavedChannels& channels, const std::string& session) {
  in_use_.insert(channels.rtp);
  in_use_.insert(channels.rtcp);
  rtcp_channels_[channels.rtcp] = session;
}

void InterleavedLink::release(const std::vector<SessionTrack>& tracks) {
  for (const SessionTrack& t : tracks) {
    if (!t.interleaved) continue;
    rtcp_channels_.erase(t.interleaved->rtcp);
    in_use_.erase(t.interleaved->rtp);
    in_use_.erase(t.interleaved->rtcp);
  }
}

const std::string* InterleavedLink::session_for(std::uint8_t channel) const {
  auto it = rtcp_channels_.find(channel);
  return it == rtcp_channels_.end() ? nullptr : &it->second;
}

}  // namespace predrop::server::detail

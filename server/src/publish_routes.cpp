// Where a publisher's packets go (publish_routes.hpp).
#include "publish_routes.hpp"

#include <utility>

#include "predrop/wire/rtcp.hpp"

namespace predrop::server::detail {

void PublishRoutes::apply(MethodOutcome& o, RtspConnection& c, std::uint64_t now_us) {
  if (o.publisher) c.publisher = std::move(o.publisher);
  if (!c.publisher) return;
  if (o.publish_track) {
    auto& t = c.publisher->tracks.at(o.publish_track->index);
    t.set_up = true;
    t.rtp_channel = o.publish_track->channel;
    t.rtcp_channel = o.publish_track->rtcp_channel;
    t.udp_from = o.publish_track->udp_from;
    if (t.udp_from) by_address_.insert_or_assign(*t.udp_from, c.id);
  }
  if (o.publish == MethodOutcome::Publish::kRecord) c.publisher->recording = true;
  if (o.publish == MethodOutcome::Publish::kStop) {
    c.publisher->release(now_us);
    std::erase_if(by_address_, [&](const auto& kv) { return kv.second == c.id; });
    c.publisher.reset();
  }
}

void PublishRoutes::forget(RtspConnection& c, std::uint64_t now_us) {
  // A publisher that goes ends its stream: its viewers get the rest and a BYE.
  if (c.publisher) c.publisher->release(now_us);
  std::erase_if(by_address_, [&](const auto& kv) { return kv.second == c.id; });
}

std::optional<std::uint64_t> PublishRoutes::connection_for(const net::SocketAddress& from) const {
  const auto it = by_address_.find(from);
  if (it == by_address_.end()) return std::nullopt;
  return it->second;
}

PublishVerdict PublishRoutes::on_datagram(RtspConnection* c, const net::SocketAddress& from,
                                          std::span<const std::uint8_t> data,
                                          std::uint64_t now_us) {
  if (c == nullptr || !c->publisher) {
    ++stats_.rtp_port_datagrams;
    return PublishVerdict::kKeep;
  }
  const Publisher::Frame outcome = c->publisher->on_datagram(from, data, now_us);
  // Its media is the connection's sign of life: a publisher sends no keep-alive requests.
  if (outcome == Publisher::Frame::kTaken) c->last_activity_us = now_us;
  return count(*c, outcome);
}

bool PublishRoutes::on_rtcp_datagram(RtspConnections& connections, const net::SocketAddress& from,
                                     std::span<const std::uint8_t> data, std::uint64_t now_us) {
  if (from.port() == 0) return false;
  const auto id = connection_for(from.with_port(static_cast<std::uint16_t>(from.port() - 1)));
  RtspConnection* c = id ? connections.find(*id) : nullptr;
  if (c == nullptr || !c->publisher) return false;
  // Any RTCP compound (receiver reports too: GStreamer's rtpbin goes on reporting after its end
  // of stream), not only the sender reports the source reads.
  if (wire::parse_rtcp_compound(data)) c->last_activity_us = now_us;
  (void)c->publisher->on_rtcp_datagram(from, data);
  return true;
}

PublishVerdict PublishRoutes::on_frame(RtspConnection& c, std::uint8_t channel,
                                       std::span<const std::uint8_t> payload,
                                       std::uint64_t now_us) {
  return count(c, c.publisher->on_frame(channel, payload, now_us));
}

PublishVerdict PublishRoutes::count(RtspConnection& c, Publisher::Frame outcome) {
  switch (outcome) {
    case Publisher::Frame::kTaken:
      ++stats_.publish_packets;
      return PublishVerdict::kKeep;
    case Publisher::Frame::kDropped:
      ++stats_.publish_dropped;
      return PublishVerdict::kKeep;
    case Publisher::Frame::kReplaced:
      // Another publisher took the stream (replace = true): this one goes.
      ++stats_.publishers_replaced;
      c.publisher.reset();
      return PublishVerdict::kClose;
  }
  return PublishVerdict::kKeep;
}

}  // namespace predrop::server::detail

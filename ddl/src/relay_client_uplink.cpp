#include "relay_client_uplink.hpp"

#include <algorithm>
#include <utility>

#include "predrop/ddl/importance.hpp"
#include "predrop/net/srtp_session.hpp"

namespace predrop::ddl {

namespace {

chain::TransmitterConfig transmitter_config(std::size_t payload_size, const ClientUplinkConfig& c) {
  chain::TransmitterConfig tc;
  tc.max_payload_size = payload_size;
  tc.tracks.push_back(chain::TrackConfig{c.ssrc, kChunkPayloadType, 0, 0, c.relay, std::nullopt});
  return tc;
}

std::optional<net::SrtpSession> outbound(const JobKey& key) {
  std::optional<net::SrtpSession> s;
  if (key.suite) s.emplace(net::SrtpDirection::Outbound, *key.suite, key.key);
  return s;
}

}  // namespace

ClientUplink::ClientUplink(net::UdpEndpoint& socket, const ChunkPlan& plan,
                           const ClientUplinkConfig& config)
    : plan_(plan),
      discard_(config.discard),
      payload_size_(chunk_payload_size(plan.chunk_elements())),
      packet_bytes_(payload_size_ + kChunkPacketOverheadBytes),
      payloads_(payload_size_ * plan.size(), 0),
      packets_(plan.size()),
      importance_(plan.size(), 0),
      tx_(socket, transmitter_config(payload_size_, config), outbound(config.key),
          core::DiscardPlanner(config.discard, config.discard_seed)) {}

chain::StagePlan ClientUplink::begin(std::uint32_t s, std::span<const float> gradient,
                                     double rate) {
  // The payloads are re-encoded in place every stage.
  for (std::size_t c = 0; c < plan_.size(); ++c) {
    const ChunkRange r = plan_[c];
    const std::span<std::uint8_t> slot(payloads_.data() + c * payload_size_, payload_size_);
    auto n = encode_chunk({0, 0, r.count, plan_.total_elements(), r.offset},
                          gradient.subspan(r.offset, r.count), slot);
    packets_[c] = chain::OutgoingPacket{0, c + 1 == plan_.size(), s, slot.first(n ? *n : 0)};
  }
  if (rate > 0.0 && discard_ == core::DiscardPolicy::kPriority) {
    tensor_importance(gradient, plan_, importance_);
  }
  next_ = 0;
  sent_us_ = 0;
  return tx_.begin_stage(s, rate, importance_);
}

std::optional<std::uint64_t> ClientUplink::send(std::uint64_t now_us, bool paced) {
  if (next_ >= packets_.size()) return std::nullopt;
  if (!paced) {
    tx_.send(packets_, 0, now_us);
    next_ = packets_.size();
  }
  // What the pacer allows now (everything while the path is free or not yet measured), in
  // sendmmsg-sized batches.
  while (next_ < packets_.size()) {
    const std::size_t want = std::min(net::UdpEndpoint::kMaxSendBatch, packets_.size() - next_);
    const std::size_t n = pacer_.allowance(now_us, packet_bytes_, want);
    if (n == 0) return pacer_.next_due_us(now_us, packet_bytes_) - now_us;
    pacer_.sent(tx_.send(std::span(packets_).subspan(next_, n), next_, now_us), packet_bytes_);
    next_ += n;
  }
  sent_us_ = now_us;
  return std::nullopt;
}

void ClientUplink::on_report(const wire::PdfbFeedback& report) {
  (void)pacer_.on_report(report.packets_received, packet_bytes_, report.reception_period_us);
}

}  // namespace predrop::ddl

#include "relay_client_downlink.hpp"

#include <utility>

#include "predrop/ddl/aggregator.hpp"
#include "predrop/net/srtp_session.hpp"

namespace predrop::ddl {

namespace {

chain::ReceiverConfig receiver_config(const chain::ReceiveImpairment& impairment) {
  chain::ReceiverConfig rc;
  rc.max_datagram = 2048;
  rc.impairment = impairment;
  return rc;
}

std::optional<net::SrtpSession> inbound(const JobKey& key) {
  std::optional<net::SrtpSession> s;
  if (key.suite) s.emplace(net::SrtpDirection::Inbound, *key.suite, key.key);
  return s;
}

}  // namespace

ClientDownlink::ClientDownlink(const RelayJob& job, const JobKey& key,
                               const chain::ReceiveImpairment& impairment,
                               const StagePeerConfig& stages)
    : plan_(job.plan),
      peer_(job.plan, stages),
      rx_(
          receiver_config(impairment), inbound(key),
          [this](const wire::RtpPacketView& v, std::uint64_t arrival) { on_packet(v, arrival); },
          [this](const core::StageMeasurement& m) { measured_[m.stage % measured_.size()] = m; }) {}

std::optional<std::uint64_t> ClientDownlink::on_datagram(std::span<const std::uint8_t> datagram,
                                                         std::uint64_t now_us) {
  taken_us_.reset();
  rx_.on_datagram(datagram, now_us);
  return std::exchange(taken_us_, std::nullopt);
}

void ClientDownlink::on_packet(const wire::RtpPacketView& v, std::uint64_t arrival_us) {
  if (!v.stage) return;
  auto chunk = parse_chunk(v.payload);
  if (!chunk) {
    ++unparsed_;
    return;
  }
  (void)peer_.on_chunk(v.stage->stage_id, v.stage->count, *chunk, arrival_us);
  taken_us_ = arrival_us;
}

RelayStage ClientDownlink::closed(const ClosedStage& r, std::uint64_t now_us, MissingPolicy fill,
                                  std::span<const float> own) {
  const auto& info = peer_.closed_info();
  const ContributorReport& c = r.contributors[0];
  RelayStage st;
  st.stage = r.stage;
  st.close_reason = r.reason;
  st.deadline_us = r.deadline_budget_us;
  st.received = r.received;
  // The packets the stage extension announced; without any, the PDSC's count.
  st.announced = c.announced != 0 ? c.announced : (info ? info->downlink_packets : 0U);
  st.lost = st.announced > st.received ? st.announced - st.received : 0;
  st.partial = peer_.partial();
  st.contributors = info ? info->contributors : 0U;
  st.reception_period_us = static_cast<double>(c.period_us());
  st.begin_us = peer_.stage_started_us();
  st.pdsc_us = info ? peer_.closed_info_at_us() : 0;
  st.first_chunk_us = r.received != 0 ? c.first_us : 0;
  st.last_chunk_us = r.received != 0 ? c.last_us : 0;
  st.closed_us = now_us;
  st.filled = static_cast<std::uint32_t>(
      fill_missing(fill, plan_, peer_.received(), peer_.aggregate(), own));
  st.gradient = own;
  st.aggregate = peer_.aggregate();
  st.got = peer_.received();
  return st;
}

core::StageMeasurement ClientDownlink::measurement(const RelayStage& st) const {
  core::StageMeasurement m;
  const core::StageMeasurement& metered = measured_[st.stage % measured_.size()];
  if (metered.stage == st.stage && metered.received != 0) {
    m.queue_delay_us = metered.queue_delay_us;
  }
  m.stage = st.stage;
  m.first_arrival_us = st.first_chunk_us;
  m.last_arrival_us = st.last_chunk_us;
  m.reception_period_us = st.reception_period_us;
  m.received = st.received;
  m.announced = st.announced;
  return m;
}

}  // namespace predrop::ddl

#include "relay_sender.hpp"

#include <algorithm>
#include <limits>

#include "predrop/chain/feedback.hpp"

namespace predrop::ddl {

DdlRelayPeerStage send_stage(RelayPeer& p, const StageSend& send, ControlChannel& control,
                             net::UdpEndpoint& socket) {
  const ClosedStage& r = *send.report;
  const std::uint32_t s = r.stage;
  const ContributorReport& c = r.contributors[p.contributor];
  const double rate = p.controller->rate();
  const chain::StagePlan plan = p.tx->begin_stage(s, rate, send.importance);
  // The reports unit opened the stage's record (open_report_record()).
  chain::StageRecord& rec = *p.reports.find(s);
  rec.rate = rate;
  rec.packets = static_cast<std::uint32_t>(plan.packets);
  rec.discarded = static_cast<std::uint32_t>(plan.discarded);
  DdlRelayStageTimes& times = p.reports.extra(rec);
  times = DdlRelayStageTimes{c.first_us, c.last_us, send.now, 0};
  // Stage closed + the relay's report on this worker's uplink, before the aggregate itself.
  core::StageMeasurement m;
  m.stage = s;
  m.first_arrival_us = c.first_us;
  m.last_arrival_us = c.last_us;
  m.reception_period_us = static_cast<double>(c.period_us());
  m.received = c.received;
  m.announced = c.announced;
  const core::StageMeasurement& metered = p.metered[s % 4];
  if (metered.stage == s && metered.received != 0) m.queue_delay_us = metered.queue_delay_us;
  ControlMessage msg;
  msg.sender_ssrc = send.control_ssrc;
  msg.feedback = chain::make_feedback(m, std::numeric_limits<double>::quiet_NaN(),
                                      wire::PdfbMetric::kLossDelta, p.ssrc);
  msg.stage_closed =
      StageClosed{s, static_cast<std::uint8_t>(r.reason), static_cast<std::uint16_t>(plan.to_send),
                  static_cast<std::uint16_t>(send.live)};
  control.send(socket, msg, p.address);
  if (send.paced) {
    p.pace_next = 0;
    p.pace_end = send.packets.size();
  } else {
    rec.sent = static_cast<std::uint32_t>(p.tx->send(send.packets, 0, send.now));
    times.sent_done_us = send.now;
  }
  DdlRelayPeerStage ps;
  ps.rank = p.rank;
  ps.live = true;
  ps.rate = rate;
  ps.planned = rec.packets;
  ps.discarded = rec.discarded;
  ps.sent = send.paced ? static_cast<std::uint32_t>(plan.to_send) : rec.sent;
  ps.up_received = c.received;
  ps.up_announced = c.announced;
  ps.up_period_us = static_cast<double>(c.period_us());
  return ps;
}

std::optional<std::uint64_t> pace_peer(RelayPeer& p, std::span<const chain::OutgoingPacket> packets,
                                       std::uint32_t stage, std::uint64_t now) {
  chain::StageRecord* rec = p.reports.find(stage);
  while (!p.gone && p.pace_next < p.pace_end) {
    const std::size_t want = std::min(kRelayPaceBatch, p.pace_end - p.pace_next);
    const std::size_t n = p.pacer.allowance(now, p.packet_bytes, want);
    if (n == 0) return p.pacer.next_due_us(now, p.packet_bytes);
    // Pre-discarded packets in the range are skipped by the transmitter and cost no tokens.
    const std::size_t sent = p.tx->send(packets.subspan(p.pace_next, n), p.pace_next, now);
    p.pacer.sent(sent, p.packet_bytes);
    p.pace_next += n;
    if (rec == nullptr) continue;  // its slot was taken by a stage 64 later: nothing to note
    rec->sent += static_cast<std::uint32_t>(sent);
    if (p.pace_next >= p.pace_end) p.reports.extra(*rec).sent_done_us = now;
  }
  return std::nullopt;
}

}  // namespace predrop::ddl

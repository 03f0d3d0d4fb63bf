#include "predrop/net/stage_transmitter.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace predrop::net {

StageTransmitter::StageTransmitter(UdpEndpoint& socket, TransmitterConfig config,
                                   std::optional<SrtpSession> srtp, core::DiscardPlanner planner)
    : socket_(socket),
      config_(std::move(config)),
      srtp_(std::move(srtp)),
      planner_(planner),
      counters_(config_.tracks.size()),
      slot_size_(rtp_header_size(config_.extension_ids) + config_.max_payload_size +
                 kSrtpMaxTrailer),
      slab_(std::make_unique<std::uint8_t[]>(kBatch * slot_size_)) {
  batch_.reserve(kBatch);
  for (std::size_t i = 0; i < counters_.size(); ++i) {
    counters_[i].next_sequence = config_.tracks[i].initial_sequence;
  }
}

StageTransmitter::~StageTransmitter() = default;

StagePlan StageTransmitter::begin_stage(std::uint32_t stage, double rate,
                                        std::span<const std::uint8_t> importance) {
  flush();
  if (drop_.size() < importance.size()) drop_.resize(importance.size());
  const std::span<std::uint8_t> mask(drop_.data(), importance.size());
  // The pre-discard decision for the whole stage, made once at its start (DESIGN.md §3).
  const std::size_t discarded = planner_.plan(rate, importance, mask);
  plan_ = StagePlan{stage, rate, importance.size(), discarded, importance.size() - discarded};
  // The stage extension's count is 16 bits; larger stages are a configuration error upstream,
  // and the announced count saturates rather than wrapping.
  sent_in_stage_ = 0;
  ++stats_.stages;
  stats_.packets_planned += importance.size();
  stats_.packets_discarded += discarded;
  return plan_;
}

std::size_t StageTransmitter::send(std::span<const OutgoingPacket> packets, std::size_t first,
                                   std::uint64_t now_us) {
  const std::uint64_t sent_before = stats_.packets_sent;
  RtpExtensions ext;
  ext.ids = config_.extension_ids;
  ext.stage.stage_id = plan_.stage;
  ext.stage.count = static_cast<std::uint16_t>(std::min<std::size_t>(plan_.to_send, 0xffff));
  ext.abs_send_time = abs_send_time_from_us(now_us);
  for (std::size_t k = 0; k < packets.size(); ++k) {
    const std::size_t index = first + k;
    if (index < plan_.packets && drop_[index]) continue;
    const OutgoingPacket& p = packets[k];
    if (p.payload.size() > config_.max_payload_size || p.track >= counters_.size()) {
      ++stats_.oversize;
      continue;
    }
    TrackCounters& tc = counters_[p.track];
    const TrackConfig& track = config_.tracks[p.track];
    RtpHeader h;
    h.marker = p.marker;
    h.payload_type = track.payload_type;
    h.sequence = tc.next_sequence;
    h.timestamp = p.timestamp + track.timestamp_offset;
    h.ssrc = track.ssrc;
    ext.stage.index = static_cast<std::uint16_t>(std::min<std::size_t>(sent_in_stage_, 0xffff));
    std::uint8_t* slot = slab_.get() + batch_.size() * slot_size_;
    const std::span<std::uint8_t> buf(slot, slot_size_);
    auto written = write_rtp_packet(buf, h, ext, p.payload);
    if (!written) {
      ++stats_.oversize;
      continue;
    }
    std::size_t len = *written;
    if (srtp_) {
      const SrtpResult r = srtp_->protect_rtp(buf, len);
      if (!r) {
        ++stats_.protect_errors;
        continue;
      }
      len = r.length;
    }
    ++tc.next_sequence;
    ++sent_in_stage_;
    ++tc.packets;
    tc.octets += p.payload.size();
    tc.last_timestamp = h.timestamp;
    batch_.push_back(OutDatagram{slot, len, &track.destination});
    if (batch_.size() == kBatch) flush();
  }
  flush();
  return static_cast<std::size_t>(stats_.packets_sent - sent_before);
}

void StageTransmitter::flush() {
  if (batch_.empty()) return;
  const std::size_t taken = socket_.send_batch(batch_);
  stats_.packets_sent += taken;
  stats_.send_drops += batch_.size() - taken;
  batch_.clear();
}

void StageTransmitter::send_sender_reports(std::uint64_t ntp,
                                           std::span<const std::uint32_t> rtp_now) {
  flush();
  std::uint8_t buf[512];
  for (std::size_t i = 0; i < config_.tracks.size() && i < rtp_now.size(); ++i) {
    const TrackConfig& track = config_.tracks[i];
    if (!track.rtcp_destination) continue;
    SenderReport sr;
    sr.ssrc = track.ssrc;
    sr.ntp_timestamp = ntp;
    sr.rtp_timestamp = rtp_now[i];
    sr.packet_count = static_cast<std::uint32_t>(counters_[i].packets);
    sr.octet_count = static_cast<std::uint32_t>(counters_[i].octets);
    auto n = write_sender_report_compound(
        std::span<std::uint8_t>(buf, sizeof buf - kSrtpMaxTrailer), sr, config_.cname);
    if (!n) continue;
    std::size_t len = *n;
    if (srtp_) {
      const SrtpResult r = srtp_->protect_rtcp(std::span<std::uint8_t>(buf, sizeof buf), len);
      if (!r) {
        ++stats_.protect_errors;
        continue;
      }
      len = r.length;
    }
    socket_.send(std::span<const std::uint8_t>(buf, len), *track.rtcp_destination);
  }
}

}  // namespace predrop::net

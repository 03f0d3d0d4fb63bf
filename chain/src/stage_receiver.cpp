#include "predrop/chain/stage_receiver.hpp"

#include <cstring>
#include <utility>

#include "predrop/core/stage_report.hpp"
#include "predrop/wire/rtcp.hpp"

namespace predrop::chain {

StageReceiver::StageReceiver(ReceiverConfig config, std::optional<net::SrtpSession> srtp,
                             OnPacket on_packet, OnStage on_stage)
    : config_(std::move(config)),
      srtp_(std::move(srtp)),
      on_packet_(std::move(on_packet)),
      meter_(config.meter, std::move(on_stage)),
      alert_(config_.alert),
      buffer_(config.max_datagram + net::kSrtpMaxTrailer) {}

void StageReceiver::on_datagram(std::span<const std::uint8_t> data, std::uint64_t arrival_us) {
  ++stats_.datagrams;
  if (data.size() > config_.max_datagram) {
    ++stats_.oversize;
    return;
  }
  if (wire::looks_like_rtcp(data)) {
    ++stats_.not_rtp;
    return;
  }
  std::memcpy(buffer_.data(), data.data(), data.size());
  std::size_t len = data.size();
  if (srtp_) {
    const net::SrtpResult r = srtp_->unprotect_rtp(buffer_, len);
    if (!r) {
      switch (r.error) {
        case net::SrtpError::AuthFailed:
          ++stats_.srtp_auth_failed;
          break;
        case net::SrtpError::Replay:
          ++stats_.srtp_replay;
          break;
        default:
          ++stats_.srtp_other;
          break;
      }
      return;
    }
    len = r.length;
  }
  auto view =
      wire::parse_rtp(std::span<const std::uint8_t>(buffer_.data(), len), config_.extension_ids);
  if (!view) {
    ++stats_.malformed;
    return;
  }
  if (config_.impairment && !config_.impairment(*view, arrival_us)) {
    ++stats_.impaired;
    return;
  }
  // The payload goes on first: the packet that completes a stage must be consumed (decoded,
  // aggregated) before the stage is reported as complete.
  ++stats_.delivered;
  if (on_packet_) on_packet_(*view, arrival_us);
  if (view->stage) {
    core::PacketArrival a;
    a.stage = view->stage->stage_id;
    a.index = view->stage->index;
    a.count = view->stage->count;
    a.arrival_us = arrival_us;
    // As a link counts it: the datagram (SRTP included) plus IP/UDP/Ethernet headers.
    a.bytes = static_cast<std::uint32_t>(data.size()) + core::kLinkOverheadBytes;
    if (view->abs_send_time) {
      // Both ends read CLOCK_MONOTONIC (shared by network namespaces on one host); across hosts
      // the clock offset is constant and cancels out against the base delay.
      a.one_way_delay_us = wire::abs_send_time_delta_us(wire::abs_send_time_from_us(arrival_us),
                                                        *view->abs_send_time);
    }
    meter_.on_packet(a);
    if (alert_.enabled() && on_alert_) {
      if (const auto alert = alert_.on_packet(a, meter_)) on_alert_(*alert);
    }
  } else {
    ++stats_.without_stage;
  }
}

}  // namespace predrop::chain

#include "predrop/chain/feedback.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace predrop::chain {

wire::PdfbFeedback make_feedback(const core::StageMeasurement& m, double performance,
                                 wire::PdfbMetric metric, std::uint32_t media_ssrc) {
  wire::PdfbFeedback f;
  f.metric = metric;
  f.performance_valid = std::isfinite(performance);
  f.performance = f.performance_valid ? performance : 0.0;
  f.media_ssrc = media_ssrc;
  f.stage_id = m.stage;
  f.reception_period_us = wire::saturate_u32(static_cast<std::uint64_t>(m.reception_period_us));
  f.packets_received = m.received;
  f.packets_announced = m.announced;
  f.queue_delay_valid = m.queue_delay_us.has_value();
  if (m.queue_delay_us) {
    f.queue_delay_growth_us =
        wire::saturate_i32(static_cast<std::int64_t>(std::llround(*m.queue_delay_us)));
  }
  if (m.path) {
    // PDFB v1.1 (docs/design.md §4.3).
    const core::PathMeasurement& p = *m.path;
    f.has_path = true;
    f.bytes_received = wire::saturate_u32(p.bytes_received);
    f.queue_max_us = wire::saturate_u32(
        static_cast<std::uint64_t>(std::llround(std::fmax(0.0, p.queue_max_us))));
    f.queue_min_us = wire::saturate_u32(
        static_cast<std::uint64_t>(std::llround(std::fmax(0.0, p.queue_min_us))));
    f.dispersion_bytes = wire::saturate_u32(p.dispersion_bytes);
    f.dispersion_us = wire::saturate_u32(p.dispersion_us);
    f.burst_bytes = wire::saturate_u32(p.burst_bytes);
    f.burst_send_us = wire::saturate_u32(p.burst_send_us);
    f.burst_arrival_us = wire::saturate_u32(p.burst_arrival_us);
  }
  return f;
}

core::StageReport to_stage_report(const wire::PdfbFeedback& f) {
  core::StageReport r;
  r.stage = f.stage_id;
  r.reception_period_us = f.reception_period_us;
  r.performance = f.performance_valid ? f.performance : std::numeric_limits<double>::quiet_NaN();
  r.packets_received = f.packets_received;
  r.packets_announced = f.packets_announced;
  if (f.queue_delay_valid) r.queue_delay_us = f.queue_delay_growth_us;
  if (f.has_path) {
    core::PathMeasurement p;
    p.bytes_received = f.bytes_received;
    // The largest queueing delay shares the end-of-stage delay's validity (both need OWDs).
    p.queue_max_us = f.queue_delay_valid ? f.queue_max_us : 0.0;
    p.queue_min_us = f.queue_delay_valid ? f.queue_min_us : 0.0;
    p.dispersion_bytes = f.dispersion_bytes;
    p.dispersion_us = f.dispersion_us;
    p.burst_bytes = f.burst_bytes;
    p.burst_send_us = f.burst_send_us;
    p.burst_arrival_us = f.burst_arrival_us;
    r.path = p;
  }
  return r;
}

core::StageReport rr_stage_report(const wire::RrInterval& interval, std::uint32_t stage,
                                  double stage_duration_us, std::uint32_t announced) {
  core::StageReport r;
  r.stage = stage;
  r.reception_period_us = stage_duration_us;
  r.performance = 0.0;
  r.packets_announced = announced;
  const double loss = interval.expected == 0 ? 0.0
                                             : static_cast<double>(interval.lost) /
                                                   static_cast<double>(interval.expected);
  const auto lost = static_cast<std::uint32_t>(std::llround(loss * announced));
  r.packets_received = announced - std::min(lost, announced);
  r.queue_delay_us = interval.queue_delay_us;
  return r;
}

core::Result<std::size_t> encode_feedback(std::span<std::uint8_t> out, std::uint32_t reporter_ssrc,
                                          const wire::PdfbFeedback& feedback,
                                          net::SrtpSession* srtp) {
  if (out.size() < net::kSrtpMaxTrailer) return core::make_error("feedback buffer too small");
  wire::ReceiverReport rr;
  rr.ssrc = reporter_ssrc;
  auto n =
      wire::write_feedback_compound(out.first(out.size() - net::kSrtpMaxTrailer), rr, feedback);
  if (!n) return n.error();
  if (srtp == nullptr) return *n;
  const net::SrtpResult r = srtp->protect_rtcp(out, *n);
  if (!r) return core::make_error(std::string("SRTCP protect: ") + std::string(to_string(r.error)));
  return r.length;
}

wire::PdalAlert make_alert(const core::StageAlert& alert, std::uint32_t media_ssrc) {
  const auto per_second = [](double bytes_per_us) {
    return wire::saturate_u32(
        static_cast<std::uint64_t>(std::llround(std::max(0.0, bytes_per_us) * 1e6)));
  };
  wire::PdalAlert a;
  a.media_ssrc = media_ssrc;
  a.stage_id = alert.stage;
  a.queue_us =
      wire::saturate_u32(static_cast<std::uint64_t>(std::llround(std::max(0.0, alert.queue_us))));
  a.rate_bytes_per_s = per_second(alert.rate);
  a.pair_rate_bytes_per_s = per_second(alert.pair_rate);
  return a;
}

core::StageAlert to_stage_alert(const wire::PdalAlert& alert) {
  core::StageAlert a;
  a.stage = alert.stage_id;
  a.queue_us = static_cast<double>(alert.queue_us);
  a.rate = static_cast<double>(alert.rate_bytes_per_s) / 1e6;
  a.pair_rate = static_cast<double>(alert.pair_rate_bytes_per_s) / 1e6;
  return a;
}

core::Result<std::size_t> encode_alert(std::span<std::uint8_t> out, std::uint32_t reporter_ssrc,
                                       const wire::PdalAlert& alert, net::SrtpSession* srtp) {
  if (out.size() < net::kSrtpMaxTrailer) return core::make_error("alert buffer too small");
  const auto plain = out.first(out.size() - net::kSrtpMaxTrailer);
  wire::ReceiverReport rr;
  rr.ssrc = reporter_ssrc;
  auto n = wire::write_receiver_report(plain, rr);
  if (!n) return n.error();
  auto m = wire::write_pdal(plain.subspan(*n), reporter_ssrc, alert);
  if (!m) return m.error();
  if (srtp == nullptr) return *n + *m;
  const net::SrtpResult r = srtp->protect_rtcp(out, *n + *m);
  if (!r) return core::make_error(std::string("SRTCP protect: ") + std::string(to_string(r.error)));
  return r.length;
}

core::Result<wire::RtcpCompound> decode_rtcp(std::span<std::uint8_t> buffer, std::size_t len,
                                             net::SrtpSession* srtp, std::size_t* plain_len) {
  if (plain_len != nullptr) *plain_len = 0;
  if (srtp != nullptr) {
    const net::SrtpResult r = srtp->unprotect_rtcp(buffer, len);
    if (!r) return core::make_error(std::string("SRTCP: ") + std::string(to_string(r.error)));
    len = r.length;
  }
  if (plain_len != nullptr) *plain_len = len;
  return wire::parse_rtcp_compound(std::span<const std::uint8_t>(buffer.data(), len));
}

}  // namespace predrop::chain

// The client's glue for the live glass-to-glass latency; see live_latency_meter.hpp.
#include "live_latency_meter.hpp"

#include <algorithm>
#include <chrono>

namespace predrop::client {

std::int64_t LiveLatencyMeter::system_unix_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

LiveLatencyMeter::LiveLatencyMeter(std::optional<net::SrtpSession> srtcp, WallClock wall_clock)
    : srtcp_(std::move(srtcp)), wall_clock_(wall_clock) {}

void LiveLatencyMeter::on_server_rtcp(std::span<const std::uint8_t> d) {
  if (d.size() > 1500) return;
  std::array<std::uint8_t, 1500> buf{};
  std::copy(d.begin(), d.end(), buf.begin());
  std::size_t len = d.size();
  if (srtcp_) {
    const net::SrtpResult r = srtcp_->unprotect_rtcp(buf, len);
    if (!r) return;
    len = r.length;
  }
  (void)latency_.on_rtcp(std::span<const std::uint8_t>(buf.data(), len));
}

void LiveLatencyMeter::on_access_unit(std::int64_t pts, std::uint32_t rtp) {
  decoded_rtp_[decoded_next_++ % decoded_rtp_.size()] = {pts, rtp};
}

void LiveLatencyMeter::on_picture(std::int64_t picture_pts, const StageStarts& starts) {
  if (draining_ || !latency_.clock() || starts.empty()) return;
  auto it = starts.end();
  for (auto s = starts.begin(); s != starts.end(); ++s) {
    if (s->second <= picture_pts && (it == starts.end() || s->second >= it->second)) it = s;
  }
  if (it == starts.end()) return;
  const std::int64_t now = wall_clock_();
  for (const auto& [pts, rtp] : decoded_rtp_) {
    if (pts == picture_pts) {
      latency_.on_picture(it->first, rtp, now);
      return;
    }
  }
}

}  // namespace predrop::client

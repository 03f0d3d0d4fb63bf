// Glass-to-glass latency per block of a live stream; see live_latency.hpp.
#include "live_latency.hpp"

#include <algorithm>

#include "predrop/wire/rtcp.hpp"

namespace predrop::client {

namespace {
constexpr std::uint32_t kVideoClockRate = 90000;

struct PdctVisitor final : wire::RtcpVisitor {
  std::optional<wire::PdctClock> found;
  void on_app(std::uint8_t /*subtype*/, std::uint32_t /*ssrc*/, std::string_view name,
              std::span<const std::uint8_t> data) override {
    if (name != wire::kPdctName || found) return;
    if (auto c = wire::parse_pdct_payload(data); c.ok()) found = *c;
  }
};
}  // namespace

bool LiveLatency::on_rtcp(std::span<const std::uint8_t> compound) {
  PdctVisitor v;
  if (!wire::parse_rtcp_compound(compound, v).ok() || !v.found) return false;
  clock_ = v.found;
  return true;
}

void LiveLatency::on_picture(std::uint32_t stage, std::uint32_t rtp, std::int64_t decoded_unix_us) {
  if (!clock_) return;
  const std::int64_t captured = wire::pdct_capture_unix_us(*clock_, rtp, kVideoClockRate);
  const double ms = static_cast<double>(decoded_unix_us - captured) / 1000.0;
  Sum& s = blocks_[stage];
  s.sum_ms += ms;
  s.max_ms = s.n == 0 ? ms : std::max(s.max_ms, ms);
  ++s.n;
}

std::optional<BlockLatency> LiveLatency::take(std::uint32_t stage) {
  const auto it = blocks_.find(stage);
  if (it == blocks_.end()) return std::nullopt;
  const Sum s = it->second;
  blocks_.erase(blocks_.begin(), std::next(it));  // older stages are never reported any more
  return BlockLatency{s.sum_ms / s.n, s.max_ms, s.n};
}

}  // namespace predrop::client

#include "sender_reports.hpp"

#include <algorithm>
#include <array>
#include <chrono>

#include "predrop/wire/pdct.hpp"
#include "predrop/wire/rtcp.hpp"

namespace predrop::server::detail {

namespace {
std::uint64_t wall_clock_unix_us() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(now).count());
}
}  // namespace

SenderReports::SenderReports(std::optional<wire::SrtpSuite> suite, const wire::SrtpKeyMaterial& key,
                             std::string cname, std::uint64_t now_us)
    : cname_(std::move(cname)), wall_anchor_us_(wall_clock_unix_us()), clock_anchor_us_(now_us) {
  if (suite) srtcp_.emplace(net::SrtpDirection::Outbound, *suite, key);
}

std::uint64_t SenderReports::ntp_at(std::uint64_t now_us) const {
  return wire::ntp_from_unix_us(wall_anchor_us_ + (now_us - clock_anchor_us_));
}

std::size_t SenderReports::send(std::uint64_t now_us, std::int64_t media_now_us,
                                std::span<const Track> tracks, bool bye,
                                SessionTransport& transport, std::optional<wire::PdctClock> capture,
                                std::size_t capture_track) {
  const std::uint64_t ntp = ntp_at(now_us);
  const auto media_now = static_cast<std::uint64_t>(std::max<std::int64_t>(0, media_now_us));
  std::size_t sent = 0;
  std::array<std::uint8_t, 512> buf{};
  const std::span<std::uint8_t> room(buf.data(), buf.size() - net::kSrtpMaxTrailer);
  for (std::size_t t = 0; t < tracks.size(); ++t) {
    const Track& track = tracks[t];
    const std::size_t via = track.transport_track.value_or(t);
    if (!transport.has_rtcp(via)) continue;
    wire::SenderReport sr;
    sr.ssrc = track.ssrc;
    sr.ntp_timestamp = ntp;
    sr.rtp_timestamp = track.timestamp_offset +
                       static_cast<std::uint32_t>(media_now * track.clock_rate / 1'000'000);
    sr.packet_count = static_cast<std::uint32_t>(track.packets);
    sr.octet_count = static_cast<std::uint32_t>(track.octets);
    auto n = wire::write_sender_report_compound(room, sr, cname_);
    if (!n) continue;
    std::size_t len = *n;
    if (capture && t == capture_track) {
      // An RTP timestamp dated in the publisher's clock (docs/live.md "Glass-to-glass").
      auto c = wire::write_pdct(room.subspan(len), track.ssrc, *capture);
      if (c) len += *c;
    }
    if (bye) {
      auto b = wire::write_bye(room.subspan(len), track.ssrc);
      if (!b) continue;
      len += *b;
    }
    if (srtcp_) {
      const net::SrtpResult r = srtcp_->protect_rtcp(buf, len);
      if (!r) {
        ++protect_errors_;
        continue;
      }
      len = r.length;
    }
    if (transport.send_rtcp(via, std::span<const std::uint8_t>(buf.data(), len))) ++sent;
  }
  return sent;
}

}  // namespace predrop::server::detail

#include "session_description.hpp"

#include <chrono>
#include <cstdio>

#include "predrop/net/os_random.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "predrop/wire/mikey.hpp"

namespace predrop::server::detail {

namespace {
// NTP-UTC timestamp (seconds since 1900 in the high 32 bits), for MIKEY's T payload.
std::uint64_t ntp_now() {
  constexpr std::uint64_t kNtpUnixOffsetS = 2208988800u;
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(since_epoch).count();
  const auto secs = static_cast<std::uint64_t>(us / 1'000'000) + kNtpUnixOffsetS;
  const auto frac = (static_cast<std::uint64_t>(us % 1'000'000) << 32) / 1'000'000;
  return (secs << 32) | frac;
}
}  // namespace

std::string describe_stream(const StreamDefinition& stream, const wire::SrtpKeyMaterial* key,
                            std::string_view host, const SdpSettings& settings) {
  const auto source = stream.current_source();
  return source ? describe_stream(stream, *source, key, host, settings) : std::string();
}

std::string describe_stream(const StreamDefinition& stream, const media::BlockSource& source,
                            const wire::SrtpKeyMaterial* key, std::string_view host,
                            const SdpSettings& settings) {
  rtsp::SdpSession s;
  s.session_id = std::to_string(net::random_u32());
  s.origin_address = std::string(host);
  s.name = stream.name;
  s.tool = "predrop";
  s.control = "*";
  if (const auto duration = source.duration_us()) {
    char range[64];
    std::snprintf(range, sizeof range, "npt=0-%.3f", static_cast<double>(*duration) / 1e6);
    s.range = range;
  }
  if (!settings.block_attribute.empty()) {
    s.attributes.push_back("x-predrop-block:" + settings.block_attribute);
  }
  const auto streams = source.streams();
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const media::StreamInfo& info = streams[i];
    rtsp::SdpMedia m;
    m.kind = info.media();
    m.payload_type = info.payload_type;
    m.rtpmap = info.encoding;
    m.fmtp = info.fmtp;
    m.control = "trackID=" + std::to_string(i);
    if (settings.srtp && key != nullptr) {
      m.proto = "RTP/SAVP";
      rtsp::SdpCrypto crypto;
      crypto.tag = 1;
      crypto.suite = std::string(wire::suite_name(*settings.srtp));
      crypto.key_params = "inline:" + wire::base64_encode(key->span());
      m.crypto.push_back(std::move(crypto));
      // The same key again as MIKEY (RFC 4567 a=key-mgmt), which is what GStreamer's rtspsrc
      // and live555-based players read; ffmpeg reads a=crypto and ignores this.
      wire::MikeyFields mikey;
      mikey.csb_id = net::random_u32();
      mikey.ntp_utc = ntp_now();
      for (auto& b : mikey.rand) {
        b = static_cast<std::uint8_t>(net::random_u32());
      }
      m.attributes.push_back(
          wire::format_key_mgmt_attribute(*settings.srtp, *key, mikey).substr(2));
    }
    m.extmaps.push_back(
        rtsp::SdpExtmap{kExtensionIds.stage, "", std::string(wire::kStageExtensionUri), ""});
    m.extmaps.push_back(
        rtsp::SdpExtmap{kExtensionIds.abs_send_time, "", std::string(wire::kAbsSendTimeUri), ""});
    s.media.push_back(std::move(m));
  }
  auto text = rtsp::build_sdp(s);
  return text ? *text : std::string();
}

std::string push_sdp(const std::string& sdp, const net::SocketAddress& destination) {
  std::string out;
  std::size_t pos = 0;
  std::size_t track = 0;
  while (pos < sdp.size()) {
    std::size_t eol = sdp.find("\r\n", pos);
    if (eol == std::string::npos) eol = sdp.size();
    std::string line = sdp.substr(pos, eol - pos);
    if (line.rfind("m=", 0) == 0) {
      const std::size_t sp1 = line.find(' ');
      const std::size_t sp2 = line.find(' ', sp1 + 1);
      line = line.substr(0, sp1 + 1) + std::to_string(destination.port() + 2 * track++) +
             line.substr(sp2);
    } else if (line.rfind("c=", 0) == 0) {
      line =
          std::string("c=IN ") + (destination.is_v4() ? "IP4 " : "IP6 ") + destination.ip_string();
    }
    out += line + "\r\n";
    pos = eol + 2;
  }
  return out;
}

}  // namespace predrop::server::detail

// PDCT, the capture clock APP packet; see pdct.hpp for the layout.
#include "predrop/wire/pdct.hpp"

#include <string>

#include "predrop/core/byte_io.hpp"
#include "predrop/wire/rtcp.hpp"

namespace predrop::wire {

namespace {
constexpr std::uint8_t kMajorVersion = 1;
// Seconds from the NTP epoch (1900) to the Unix epoch (1970).
constexpr std::int64_t kNtpToUnixSeconds = 2'208'988'800;
}  // namespace

core::Result<std::size_t> write_pdct(std::span<std::uint8_t> out, std::uint32_t ssrc,
                                     const PdctClock& clock) {
  core::ByteWriter w(out);
  w.write_u8(0x80);  // V=2, P=0, subtype 0
  w.write_u8(kRtcpApp);
  w.write_u16(static_cast<std::uint16_t>(kPdctPacketSize / 4 - 1));
  w.write_u32(ssrc);
  w.write_bytes({reinterpret_cast<const std::uint8_t*>(kPdctName.data()), kPdctName.size()});
  w.write_u8(kMajorVersion);
  w.write_u8(0);
  w.write_u16(0);
  w.write_u32(clock.rtp_timestamp);
  w.write_u32(static_cast<std::uint32_t>(clock.ntp >> 32));
  w.write_u32(static_cast<std::uint32_t>(clock.ntp));
  if (!w.ok()) return core::make_error("PDCT does not fit the output buffer");
  return w.position();
}

core::Result<PdctClock> parse_pdct_payload(std::span<const std::uint8_t> data) {
  if (data.empty()) return core::make_error("PDCT payload is empty");
  const unsigned major = data[0] & 0x0F;
  const unsigned minor = data[0] >> 4;
  if (major != kMajorVersion) {
    return core::make_error("PDCT major version " + std::to_string(major) +
                            " is not supported (this build reads major version 1)");
  }
  if (data.size() < kPdctPayloadSize) {
    return core::make_error("PDCT payload truncated: " + std::to_string(data.size()) +
                            " of 16 bytes");
  }
  if (minor == 0 && data.size() != kPdctPayloadSize) {
    return core::make_error(
        "PDCT v1.0 payload has trailing bytes; only a minor version > 0 may "
        "append fields");
  }
  core::ByteReader r(data.first(kPdctPayloadSize));
  r.skip(4);
  PdctClock c;
  c.rtp_timestamp = r.read_u32();
  const std::uint64_t high = r.read_u32();
  c.ntp = high << 32 | r.read_u32();
  return c;
}

std::int64_t pdct_capture_unix_us(const PdctClock& clock, std::uint32_t rtp,
                                  std::uint32_t clock_rate) {
  const auto seconds = static_cast<std::int64_t>(clock.ntp >> 32) - kNtpToUnixSeconds;
  const auto fraction_us =
      static_cast<std::int64_t>(((clock.ntp & 0xFFFFFFFFULL) * 1'000'000) >> 32);
  const std::int64_t ticks = static_cast<std::int32_t>(rtp - clock.rtp_timestamp);
  const std::int64_t rate = clock_rate == 0 ? 90000 : clock_rate;
  return seconds * 1'000'000 + fraction_us + ticks * 1'000'000 / rate;
}

}  // namespace predrop::wire

#include "predrop/wire/pdal.hpp"

#include <string>

#include "predrop/core/byte_io.hpp"
#include "predrop/wire/rtcp.hpp"

namespace predrop::wire {

namespace {
constexpr std::uint8_t kMajorVersion = 1;
}  // namespace

core::Result<std::size_t> write_pdal(std::span<std::uint8_t> out, std::uint32_t reporter_ssrc,
                                     const PdalAlert& alert) {
  core::ByteWriter w(out);
  w.write_u8(0x80);  // V=2, P=0, subtype 0
  w.write_u8(kRtcpApp);
  w.write_u16(static_cast<std::uint16_t>(kPdalPacketSize / 4 - 1));
  w.write_u32(reporter_ssrc);
  w.write_bytes({reinterpret_cast<const std::uint8_t*>(kPdalName.data()), kPdalName.size()});
  w.write_u8(kMajorVersion);
  w.write_u8(0);
  w.write_u16(0);
  w.write_u32(alert.media_ssrc);
  w.write_u32(alert.stage_id);
  w.write_u32(alert.queue_us);
  w.write_u32(alert.rate_bytes_per_s);
  w.write_u32(alert.pair_rate_bytes_per_s);
  if (!w.ok()) return core::make_error("PDAL does not fit the output buffer");
  return w.position();
}

core::Result<PdalAlert> parse_pdal_payload(std::span<const std::uint8_t> data) {
  if (data.empty()) return core::make_error("PDAL payload is empty");
  const unsigned major = data[0] & 0x0F;
  const unsigned minor = data[0] >> 4;
  if (major != kMajorVersion) {
    return core::make_error("PDAL major version " + std::to_string(major) +
                            " is not supported (this build reads major version 1)");
  }
  if (data.size() < kPdalPayloadSize) {
    return core::make_error("PDAL payload truncated: " + std::to_string(data.size()) +
                            " of 24 bytes");
  }
  if (minor == 0 && data.size() != kPdalPayloadSize) {
    return core::make_error("PDAL v1.0 payload has " +
                            std::to_string(data.size() - kPdalPayloadSize) +
                            " trailing bytes; only a minor version > 0 may append fields");
  }
  core::ByteReader r(data.first(kPdalPayloadSize));
  r.skip(4);
  PdalAlert a;
  a.media_ssrc = r.read_u32();
  a.stage_id = r.read_u32();
  a.queue_us = r.read_u32();
  a.rate_bytes_per_s = r.read_u32();
  a.pair_rate_bytes_per_s = r.read_u32();
  return a;
}

}  // namespace predrop::wire

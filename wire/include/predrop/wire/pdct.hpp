#pragma once
// PDCT: the capture clock of a live stream (docs/live.md "Glass-to-glass latency per block"),
// sent by the server to a viewer in the compound of its video track's SR. An APP packet (RFC 3550
// §6.7) that maps one RTP timestamp of the viewer's video track to the time the publisher
// captured (sent) that instant, in the publisher's own NTP clock (from the publisher's sender
// reports: RFC 3550 §6.4.1). The publisher's RTP clock runs linearly with its NTP clock (the
// assumption every SR-based lip sync makes), so one mapping dates every picture:
//   capture(rtp) = ntp + (int32)(rtp - rtp_timestamp) / clock rate.
//
//   byte  field
//   0     0x80: V=2, P=0, subtype 0
//   1     PT 204 (APP)
//   2-3   length 6 (32-bit words - 1; 28 bytes)
//   4-7   SSRC of the video track (the SR's)
//   8-11  name "PDCT"                               ASCII 0x50 0x44 0x43 0x54
//   --- payload v1.0 (16 bytes, big-endian) ---
//   12    version: low nibble major (1), high nibble minor (0)
//   13-15 reserved: written 0, ignored on read
//   16-19 RTP timestamp on the viewer's video track
//   20-27 the publisher's NTP time (RFC 3550 §4, 32.32 seconds since 1900) of that instant
//
// Versioning as PDFB/PDAL: a major-1 reader rejects another major; a minor > 0 may append 32-bit
// words, which this reader skips; a v1.0 payload is exactly 16 bytes.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "predrop/core/result.hpp"

namespace predrop::wire {

/// APP name of the capture clock.
inline constexpr std::string_view kPdctName = "PDCT";
/// Size of the v1.0 payload and of the whole APP packet.
inline constexpr std::size_t kPdctPayloadSize = 16;
inline constexpr std::size_t kPdctPacketSize = 12 + kPdctPayloadSize;

/// One mapping: this RTP timestamp was captured at this NTP time of the publisher's clock.
struct PdctClock {
  std::uint32_t rtp_timestamp = 0;
  std::uint64_t ntp = 0;

  friend bool operator==(const PdctClock&, const PdctClock&) = default;
};

/// Writes one PDCT APP packet (28 bytes) for the track of `ssrc`.
core::Result<std::size_t> write_pdct(std::span<std::uint8_t> out, std::uint32_t ssrc,
                                     const PdctClock& clock);

/// Parses PDCT application data (the bytes after the APP name), with the version rules above.
core::Result<PdctClock> parse_pdct_payload(std::span<const std::uint8_t> data);

/// The capture time of `rtp` (µs since the Unix epoch) by `clock`, at `clock_rate` Hz; RTP
/// timestamps within 2^31 ticks either side of the mapping's.
std::int64_t pdct_capture_unix_us(const PdctClock& clock, std::uint32_t rtp,
                                  std::uint32_t clock_rate);

}  // namespace predrop::wire

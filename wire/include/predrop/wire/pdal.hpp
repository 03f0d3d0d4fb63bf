#pragma once
// PDAL: predrop's interim alert (docs/design.md §4.3a), sent by a measuring receiver as soon as
// a packet of the stage in flight has queued past its threshold, so that the sender can re-plan
// the rest of that stage (docs/design.md §2.9). An APP packet (RFC 3550 §6.7) in a compound
// after an RR with no blocks, as PDFB, protected as SRTCP:
//
//   byte  field
//   0     0x80: V=2, P=0, subtype 0
//   1     PT 204 (APP)
//   2-3   length 8 (32-bit words - 1; 36 bytes)
//   4-7   reporter SSRC (the RR's)
//   8-11  name "PDAL"                               ASCII 0x50 0x44 0x41 0x4C
//   --- payload v1.0 (24 bytes, big-endian) ---
//   12    version: low nibble major (1), high nibble minor (0)
//   13-15 reserved: written 0, ignored on read
//   16-19 media SSRC the alert is about
//   20-23 stage id
//   24-27 queueing delay of the packet that raised it, µs (u32, saturating)
//   28-31 arrival rate of the stage's last 8 packets, link bytes per second (u32, saturating)
//   32-35 rate at which the stage's back-to-back pairs left the bottleneck so far, link bytes
//         per second (0: none yet)
//
// Versioning as PDFB: a major-1 reader rejects another major; a minor > 0 may append 32-bit
// words, which this reader skips; a v1.0 payload is exactly 24 bytes.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "predrop/core/result.hpp"

namespace predrop::wire {

/// APP name of the interim alert.
inline constexpr std::string_view kPdalName = "PDAL";
/// Size of the v1.0 payload and of the whole APP packet.
inline constexpr std::size_t kPdalPayloadSize = 24;
inline constexpr std::size_t kPdalPacketSize = 12 + kPdalPayloadSize;

/// One interim alert (the wire form of core::StageAlert).
struct PdalAlert {
  std::uint32_t media_ssrc = 0;
  std::uint32_t stage_id = 0;
  std::uint32_t queue_us = 0;
  std::uint32_t rate_bytes_per_s = 0;
  std::uint32_t pair_rate_bytes_per_s = 0;

  friend bool operator==(const PdalAlert&, const PdalAlert&) = default;
};

/// Writes one PDAL APP packet (36 bytes).
core::Result<std::size_t> write_pdal(std::span<std::uint8_t> out, std::uint32_t reporter_ssrc,
                                     const PdalAlert& alert);

/// Parses PDAL application data (the bytes after the APP name), with the version rules above.
core::Result<PdalAlert> parse_pdal_payload(std::span<const std::uint8_t> data);

}  // namespace predrop::wire

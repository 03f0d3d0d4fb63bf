// Generic NACK, PLI and FIR; layouts and rules in predrop/wire/rtcp_nack.hpp.
#include "predrop/wire/rtcp_nack.hpp"

#include "predrop/core/byte_io.hpp"
#include "predrop/wire/transport_cc.hpp"

namespace predrop::wire {
namespace {

using core::load_u16_be;
using core::load_u32_be;

constexpr std::size_t kHeaderSize = 12;  // RTCP header, sender SSRC, media SSRC
constexpr std::size_t kNackFciSize = 4;  // PID, BLP
constexpr std::size_t kFirFciSize = 8;   // SSRC, seq nr, reserved

// The packet's length from its header (RFC 3550 §6.4.1), if it is version 2 with packet type
// `pt` and FMT `fmt`, holds at least the fixed part and fits in `d`.
std::optional<std::size_t> checked_length(std::span<const std::uint8_t> d, std::uint8_t pt,
                                          std::uint8_t fmt) {
  if (d.size() < kHeaderSize || (d[0] >> 6) != 2 || (d[0] & 0x1F) != fmt || d[1] != pt) {
    return std::nullopt;
  }
  const std::size_t length = (std::size_t{load_u16_be(d.data() + 2)} + 1) * 4;
  if (length > d.size() || length < kHeaderSize) return std::nullopt;
  return length;
}

}  // namespace

std::optional<GenericNack> parse_generic_nack(std::span<const std::uint8_t> d,
                                              std::vector<std::uint16_t>& sequences,
                                              std::size_t max_sequences) {
  const auto length = checked_length(d, kRtcpRtpfb, kGenericNackFmt);
  if (!length || *length < kHeaderSize + kNackFciSize) return std::nullopt;
  GenericNack n;
  n.sender_ssrc = load_u32_be(d.data() + 4);
  n.media_ssrc = load_u32_be(d.data() + 8);
  // The length is a whole number of words past the header: every word is one FCI.
  n.fcis = static_cast<std::uint16_t>((*length - kHeaderSize) / kNackFciSize);
  const auto add = [&](std::uint16_t seq) {
    if (sequences.size() < max_sequences) {
      sequences.push_back(seq);
    } else {
      ++n.truncated;
    }
  };
  for (std::size_t at = kHeaderSize; at + kNackFciSize <= *length; at += kNackFciSize) {
    const std::uint16_t pid = load_u16_be(d.data() + at);
    const std::uint16_t blp = load_u16_be(d.data() + at + 2);
    add(pid);
    for (unsigned i = 0; i < 16; ++i) {
      if ((blp >> i) & 1U) add(static_cast<std::uint16_t>(pid + i + 1));
    }
  }
  return n;
}

std::optional<KeyFrameRequest> parse_key_frame_request(std::span<const std::uint8_t> d) {
  if (d.size() < kHeaderSize) return std::nullopt;
  const bool fir = (d[0] & 0x1F) == kFirFmt;
  const auto length = checked_length(d, kRtcpPsfb, fir ? kFirFmt : kPliFmt);
  if (!length) return std::nullopt;
  KeyFrameRequest r;
  r.kind = fir ? KeyFrameRequestKind::kFir : KeyFrameRequestKind::kPli;
  r.sender_ssrc = load_u32_be(d.data() + 4);
  if (!fir) {
    r.media_ssrc = load_u32_be(d.data() + 8);
    return r;
  }
  if (*length < kHeaderSize + kFirFciSize) return std::nullopt;  // a FIR names its source in an FCI
  r.media_ssrc = load_u32_be(d.data() + kHeaderSize);
  return r;
}

std::size_t write_generic_nack(std::uint32_t sender_ssrc, std::uint32_t media_ssrc,
                               std::span<const std::uint16_t> lost, std::span<std::uint8_t> out) {
  if (lost.empty() || out.size() < kHeaderSize + kNackFciSize) return 0;
  std::size_t end = kHeaderSize;
  for (const std::uint16_t seq : lost) {
    bool placed = false;
    for (std::size_t at = kHeaderSize; at < end && !placed; at += kNackFciSize) {
      const std::uint16_t pid = load_u16_be(out.data() + at);
      const auto diff = static_cast<std::uint16_t>(seq - pid);
      if (diff == 0) {
        placed = true;
      } else if (diff <= 16) {
        const auto blp =
            static_cast<std::uint16_t>(load_u16_be(out.data() + at + 2) | (1U << (diff - 1)));
        core::store_u16_be(out.data() + at + 2, blp);
        placed = true;
      }
    }
    if (placed) continue;
    // The length field counts words: at most 65535 - 2 FCIs.
    if (out.size() - end < kNackFciSize || (end - kHeaderSize) / kNackFciSize >= 65533) return 0;
    core::store_u16_be(out.data() + end, seq);
    core::store_u16_be(out.data() + end + 2, 0);
    end += kNackFciSize;
  }
  out[0] = 0x80 | kGenericNackFmt;
  out[1] = kRtcpRtpfb;
  core::store_u16_be(out.data() + 2, static_cast<std::uint16_t>(end / 4 - 1));
  core::store_u32_be(out.data() + 4, sender_ssrc);
  core::store_u32_be(out.data() + 8, media_ssrc);
  return end;
}

}  // namespace predrop::wire

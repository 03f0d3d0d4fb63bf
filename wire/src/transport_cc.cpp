// Transport-cc feedback parse/write; layout and rules in predrop/wire/transport_cc.hpp.
#include "predrop/wire/transport_cc.hpp"

#include "predrop/core/byte_io.hpp"

namespace predrop::wire {
namespace {

using core::load_u16_be;
using core::load_u32_be;

constexpr std::size_t kFixedSize = 20;  // RTCP header, two SSRCs, base/count, ref time/fb count

// Reads the chunks into per-packet symbols (0..2) stored in `packets[first..]`'s received flag
// and `deltas_size` the bytes of deltas they announce; returns the offset after the chunks.
std::optional<std::size_t> read_chunks(std::span<const std::uint8_t> d, std::size_t at,
                                       std::size_t count, std::vector<std::uint8_t>& symbols) {
  while (symbols.size() < count) {
    if (d.size() - at < 2) return std::nullopt;
    const std::uint16_t c = load_u16_be(d.data() + at);
    at += 2;
    const std::size_t left = count - symbols.size();
    if ((c & 0x8000) == 0) {  // run length chunk (§3.1.3)
      const auto symbol = static_cast<std::uint8_t>((c >> 13) & 0x3);
      const std::size_t run = c & 0x1FFF;
      if (symbol == 3 || run == 0) return std::nullopt;
      symbols.insert(symbols.end(), std::min(run, left), symbol);
    } else if ((c & 0x4000) == 0) {  // status vector, 14 one-bit symbols (§3.1.4)
      for (int i = 13; i >= 0 && symbols.size() < count; --i) {
        symbols.push_back(static_cast<std::uint8_t>((c >> i) & 1));
      }
    } else {  // status vector, 7 two-bit symbols
      for (int i = 6; i >= 0 && symbols.size() < count; --i) {
        const auto symbol = static_cast<std::uint8_t>((c >> (2 * i)) & 0x3);
        if (symbol == 3) return std::nullopt;
        symbols.push_back(symbol);
      }
    }
  }
  return at;
}

}  // namespace

std::optional<TwccFeedback> parse_transport_cc(std::span<const std::uint8_t> d,
                                               std::vector<TwccPacket>& packets) {
  if (d.size() < kFixedSize || (d[0] >> 6) != 2 || (d[0] & 0x1F) != kTransportCcFmt ||
      d[1] != kRtcpRtpfb) {
    return std::nullopt;
  }
  const std::size_t length = (std::size_t{load_u16_be(d.data() + 2)} + 1) * 4;
  if (length > d.size() || length < kFixedSize) return std::nullopt;
  d = d.first(length);
  TwccFeedback f;
  f.sender_ssrc = load_u32_be(d.data() + 4);
  f.media_ssrc = load_u32_be(d.data() + 8);
  f.base_sequence = load_u16_be(d.data() + 12);
  f.status_count = load_u16_be(d.data() + 14);
  const std::uint32_t ref = core::load_u24_be(d.data() + 16);
  f.reference_time = static_cast<std::int32_t>(ref << 8) >> 8;  // 24-bit two's complement
  f.feedback_count = d[19];

  // Symbols are kept per call in a thread-local scratch vector (capacity kept: no allocation in
  // steady state); a feedback covers at most 65535 packets.
  thread_local std::vector<std::uint8_t> symbols;
  symbols.clear();
  const auto after = read_chunks(d, kFixedSize, f.status_count, symbols);
  if (!after) return std::nullopt;
  std::size_t at = *after;
  const std::size_t first = packets.size();
  std::int64_t t = std::int64_t{f.reference_time} * kTwccReferenceUs;
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    TwccPacket p;
    p.sequence = static_cast<std::uint16_t>(f.base_sequence + i);
    if (symbols[i] != 0) {
      const std::size_t n = symbols[i] == 1 ? 1 : 2;
      if (d.size() - at < n) {
        packets.resize(first);
        return std::nullopt;
      }
      const std::int64_t delta =
          n == 1 ? d[at] : static_cast<std::int16_t>(load_u16_be(d.data() + at));
      at += n;
      t += delta * kTwccDeltaUs;
      p.received = true;
      p.arrival_us = t;
    }
    packets.push_back(p);
  }
  return f;
}

std::size_t write_transport_cc(const TwccFeedback& h, std::span<const TwccPacket> packets,
                               std::span<std::uint8_t> out) {
  const std::size_t n = packets.size();
  if (n == 0 || n > 0xFFFF) return 0;
  // Symbols and deltas first, to size the message.
  std::vector<std::uint8_t> symbols(n, 0);
  std::vector<std::uint8_t> deltas;
  std::int64_t t = std::int64_t{h.reference_time} * kTwccReferenceUs;
  for (std::size_t i = 0; i < n; ++i) {
    if (!packets[i].received) continue;
    const std::int64_t diff = packets[i].arrival_us - t;
    if (diff % kTwccDeltaUs != 0) return 0;
    const std::int64_t delta = diff / kTwccDeltaUs;
    if (delta >= 0 && delta <= 255) {
      symbols[i] = 1;
      deltas.push_back(static_cast<std::uint8_t>(delta));
    } else if (delta >= -32768 && delta <= 32767) {
      symbols[i] = 2;
      deltas.push_back(static_cast<std::uint8_t>((delta >> 8) & 0xFF));
      deltas.push_back(static_cast<std::uint8_t>(delta & 0xFF));
    } else {
      return 0;
    }
    t = packets[i].arrival_us;
  }
  const std::size_t chunks = (n + 6) / 7;
  const std::size_t body = kFixedSize + 2 * chunks + deltas.size();
  const std::size_t total = (body + 3) & ~std::size_t{3};
  if (out.size() < total) return 0;
  std::uint8_t* p = out.data();
  p[0] = static_cast<std::uint8_t>(0x80 | kTransportCcFmt);
  p[1] = kRtcpRtpfb;
  core::store_u16_be(p + 2, static_cast<std::uint16_t>(total / 4 - 1));
  core::store_u32_be(p + 4, h.sender_ssrc);
  core::store_u32_be(p + 8, h.media_ssrc);
  core::store_u16_be(p + 12, packets[0].sequence);
  core::store_u16_be(p + 14, static_cast<std::uint16_t>(n));
  core::store_u24_be(p + 16, static_cast<std::uint32_t>(h.reference_time) & 0xFFFFFF);
  p[19] = h.feedback_count;
  std::size_t at = kFixedSize;
  for (std::size_t c = 0; c < chunks; ++c) {
    std::uint16_t chunk = 0xC000;  // status vector, two-bit symbols
    for (std::size_t k = 0; k < 7; ++k) {
      const std::size_t i = c * 7 + k;
      const std::uint16_t s = i < n ? symbols[i] : 0;
      chunk = static_cast<std::uint16_t>(chunk | (s << (2 * (6 - k))));
    }
    core::store_u16_be(p + at, chunk);
    at += 2;
  }
  for (const std::uint8_t b : deltas) {
    p[at++] = b;
  }
  while (at < total) {
    p[at++] = 0;
  }
  return total;
}

}  // namespace predrop::wire

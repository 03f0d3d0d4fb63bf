#pragma once
// What the RTP payload-format fuzz targets share (fuzz_h264_depacketizer, fuzz_h265_payload,
// fuzz_vp8_payload, fuzz_vp9_payload): the record format that feeds a depacketizer arbitrary
// packets, a packetizer's output collected as whole payloads within its limit, and those payloads
// pushed back into a depacketizer in order with the marker on the last.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "bitstream.hpp"  // media/src: Bytes
#include "fuzz_check.hpp"

namespace predrop::fuzz {

/// Feeds `data` into `d` as records (2-byte sequence, 1-byte flags: bit 0 marker, bit 1 a new
/// timestamp 3000 ticks on; 1-byte length, payload; a short last payload is cut), then flushes.
template <typename Depacketizer>
void push_records(Depacketizer& d, const std::uint8_t* data, std::size_t size) {
  std::uint32_t timestamp = 0;
  std::size_t i = 0;
  while (size - i >= 4) {
    const auto sequence = static_cast<std::uint16_t>((data[i] << 8) | data[i + 1]);
    const std::uint8_t flags = data[i + 2];
    std::size_t length = data[i + 3];
    i += 4;
    if (length > size - i) length = size - i;
    if (flags & 2) timestamp += 3000;
    d.push(sequence, timestamp, flags & 1, std::span(data + i, length));
    i += length;
  }
  d.flush();
}

/// The payloads a packetizer hands to its emit(head, body) callback, each checked to be at most
/// `max_payload` bytes.
struct Payloads {
  std::size_t max_payload;
  std::vector<std::vector<std::uint8_t>> list;

  /// The packetizer's callback.
  auto emit() {
    return [this](media::detail::Bytes head, media::detail::Bytes body) {
      std::vector<std::uint8_t> p(head.begin(), head.end());
      p.insert(p.end(), body.begin(), body.end());
      PREDROP_FUZZ_CHECK(p.size() <= max_payload);
      list.push_back(std::move(p));
    };
  }

  /// Pushes every payload into `d` at timestamp 0, sequence 0, 1, ..., marker on the last.
  template <typename Depacketizer>
  void push_into(Depacketizer& d) const {
    for (std::size_t i = 0; i < list.size(); ++i) {
      d.push(static_cast<std::uint16_t>(i), 0, i + 1 == list.size(), list[i]);
    }
  }
};

/// One frame packetized by `packetize(emit)` (payloads of at most `max_payload` bytes) and
/// depacketized by a `Depacketizer` must come back as exactly one access unit equal to it.
template <typename Depacketizer, typename Packetize>
void frame_round_trip(std::span<const std::uint8_t> frame, std::size_t max_payload,
                      Packetize packetize) {
  std::vector<std::uint8_t> got;
  std::size_t count = 0;
  Depacketizer d([&](const auto& au) {
    ++count;
    got.assign(au.data.begin(), au.data.end());
  });
  Payloads payloads{max_payload, {}};
  packetize(payloads.emit());
  payloads.push_into(d);
  PREDROP_FUZZ_CHECK(count == 1);
  PREDROP_FUZZ_CHECK(got == std::vector<std::uint8_t>(frame.begin(), frame.end()));
}

/// The payload targets' entry: the first byte picks the mode, odd for `round_trip`, even for
/// `depacketize`, each given the rest of the input.
template <typename RoundTrip, typename Depacketize>
int run_payload_target(const std::uint8_t* data, std::size_t size, RoundTrip round_trip,
                       Depacketize depacketize) {
  if (size == 0) return 0;
  if (data[0] & 1) {
    round_trip(data + 1, size - 1);
  } else {
    depacketize(data + 1, size - 1);
  }
  return 0;
}

}  // namespace predrop::fuzz

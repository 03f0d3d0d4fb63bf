#pragma once
// RTP -> H.264 Annex-B access units, RFC 6184 packetization-mode=1 receive side: single NAL unit
// packets (§5.6), STAP-A (§5.7.1) and FU-A (§5.8). Sequence-number gaps mark the access unit as
// damaged; an FU-A whose start, end or any middle fragment is missing is dropped entirely rather
// than glued into a broken NAL unit, so the decoder sees a missing slice and conceals it.
// STAP-B, MTAP and FU-B (interleaved mode only) are counted as unsupported and skipped.
//
// Threading: one instance per stream, used from one thread. Allocation: the access-unit buffer
// grows to the largest unit seen and is reused; push() allocates nothing in steady state.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace predrop::media {

/// One reassembled access unit: NAL units with 4-byte start codes, keyed by RTP timestamp.
struct AccessUnit {
  std::uint32_t rtp_timestamp = 0;
  /// Valid only during the callback.
  std::span<const std::uint8_t> data;
  /// A packet of it (or just before it) was lost, or a fragment was dropped.
  bool damaged = false;
};

/// Counters, for statistics and tests.
struct DepacketizerStats {
  std::uint64_t packets = 0;
  /// Packets missing according to sequence-number gaps.
  std::uint64_t lost = 0;
  /// FU-A fragments discarded because their NAL unit could not be completed.
  std::uint64_t dropped_fragments = 0;
  /// Payloads that were empty, truncated or of a type this receiver does not handle.
  std::uint64_t malformed = 0;
  std::uint64_t access_units = 0;
  std::uint64_t damaged_access_units = 0;
};

/// Reassembles RTP payloads of one H.264 stream into Annex-B access units.
class H264Depacketizer {
 public:
  using Callback = std::function<void(const AccessUnit&)>;

  /// `on_access_unit` receives each unit when its marker packet arrives or when a packet with a
  /// different timestamp starts the next one.
  explicit H264Depacketizer(Callback on_access_unit);

  /// Feeds one RTP packet's payload with its header's sequence number, timestamp and marker bit.
  void push(std::uint16_t sequence, std::uint32_t rtp_timestamp, bool marker,
            std::span<const std::uint8_t> payload);
  /// Emits the unit in progress, if any (end of stream or of a block).
  void flush();
  const DepacketizerStats& stats() const { return stats_; }

 private:
  void emit();
  void append_start_code_and(std::span<const std::uint8_t> nal);
  void abort_fragment();

  Callback on_access_unit_;
  std::vector<std::uint8_t> buffer_;
  std::uint32_t timestamp_ = 0;
  bool have_unit_ = false;
  bool damaged_ = false;
  bool have_sequence_ = false;
  std::uint16_t last_sequence_ = 0;
  bool in_fragment_ = false;
  std::size_t fragment_start_ = 0;
  DepacketizerStats stats_;
};

}  // namespace predrop::media

#pragma once
// RTP -> access units, the receive side of every video payload format. The base class does what
// all of them share: sequence-number gaps mark the access unit in progress as damaged, a new RTP
// timestamp or the marker bit ends a unit (RFC 6184 §5.1, RFC 7798 §4.1, RFC 7741 §4.1), and a
// fragmented unit whose start, end or any middle fragment is missing is dropped entirely rather
// than glued into a broken unit, so the decoder sees a missing slice (or frame) and conceals it.
// Each codec's unit (h264_, h265_, vp8_depacketizer) only parses its payloads.
//
// Threading: one instance per stream, used from one thread. Allocation: the access-unit buffer
// grows to the largest unit seen and is reused; push() allocates nothing in steady state.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "predrop/media/codec.hpp"

namespace predrop::media {

/// One reassembled access unit, keyed by RTP timestamp: H.264/H.265 NAL units with 4-byte start
/// codes (Annex B), or one VP8 frame.
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
  /// Fragments discarded because their unit could not be completed.
  std::uint64_t dropped_fragments = 0;
  /// Payloads that were empty, truncated or of a type this receiver does not handle.
  std::uint64_t malformed = 0;
  std::uint64_t access_units = 0;
  std::uint64_t damaged_access_units = 0;
};

/// Reassembles RTP payloads of one video stream into access units.
class Depacketizer {
 public:
  using Callback = std::function<void(const AccessUnit&)>;
  virtual ~Depacketizer() = default;
  Depacketizer(const Depacketizer&) = delete;
  Depacketizer& operator=(const Depacketizer&) = delete;

  /// Feeds one RTP packet's payload with its header's sequence number, timestamp and marker bit.
  /// `on_access_unit` receives each unit when its marker packet arrives or when a packet with a
  /// different timestamp starts the next one.
  void push(std::uint16_t sequence, std::uint32_t rtp_timestamp, bool marker,
            std::span<const std::uint8_t> payload);
  /// Emits the unit in progress, if any (end of stream or of a block).
  void flush();
  /// Drops the unit in progress and forgets the sequence numbers: the next packet starts a new
  /// RTP stream (a relay that reconnected to its upstream; its numbering starts anywhere).
  void reset();
  const DepacketizerStats& stats() const { return stats_; }

 protected:
  explicit Depacketizer(Callback on_access_unit);
  /// Parses one payload (with its packet's marker bit) into the unit in progress, using the
  /// helpers below.
  virtual void on_payload(std::span<const std::uint8_t> payload, bool marker) = 0;

  /// Appends bytes to the unit.
  void append(std::span<const std::uint8_t> bytes) {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  }
  /// Appends a 4-byte start code and a NAL unit.
  void append_nal(std::span<const std::uint8_t> nal);
  /// Bytes in the unit so far.
  std::size_t unit_size() const { return buffer_.size(); }
  /// Marks where a fragmented unit starts (call before appending its first part).
  void begin_fragment();
  bool in_fragment() const { return in_fragment_; }
  void end_fragment() { in_fragment_ = false; }
  /// Drops the partial fragmented unit; the access unit is damaged.
  void abort_fragment();
  /// A fragment with nothing to attach to was dropped; the access unit is damaged.
  void drop_fragment();
  /// A payload this receiver cannot read; the access unit is damaged.
  void malformed();
  /// The units of an aggregation packet (RFC 6184 STAP-A, RFC 7798 AP): { 16-bit size, NAL unit }
  /// repeated from `payload[offset]` on. A size below `min_unit` or past the end, or a lone size
  /// byte, is malformed and ends the packet; the units before it are kept.
  void append_aggregated(std::span<const std::uint8_t> payload, std::size_t offset,
                         std::size_t min_unit);
  /// One part of a fragmented unit (RFC 6184 FU-A, RFC 7798 FU): `start` begins the unit with
  /// its rebuilt `nal_header`; a later part continues the unit in progress, and one with nothing
  /// to attach to is dropped; `end` completes it.
  void append_fragment(bool start, bool end, std::span<const std::uint8_t> nal_header,
                       std::span<const std::uint8_t> part);

 private:
  void emit();

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

/// The depacketizer of a video codec (H.264, H.265, VP8, VP9, AV1); nullptr for an audio codec.
std::unique_ptr<Depacketizer> make_depacketizer(Codec codec, Depacketizer::Callback on_access_unit);

}  // namespace predrop::media

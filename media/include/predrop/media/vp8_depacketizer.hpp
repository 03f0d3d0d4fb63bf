#pragma once
// RTP -> VP8 frames, RFC 7741 receive side: the payload descriptor (§4.2, every optional field)
// is stripped and a frame's payloads are concatenated from its first packet (S = 1, PID = 0) to
// its marker. A frame with any packet missing is dropped whole, like a broken FU: VP8 has no
// resynchronisation point inside a partition, so a frame with a hole is garbage to libvpx.
#include <utility>

#include "predrop/media/depacketizer.hpp"

namespace predrop::media {

/// Reassembles RTP payloads of one VP8 stream into frames.
class Vp8Depacketizer final : public Depacketizer {
 public:
  explicit Vp8Depacketizer(Callback on_access_unit) : Depacketizer(std::move(on_access_unit)) {}

 private:
  void on_payload(std::span<const std::uint8_t> payload, bool marker) override;
};

}  // namespace predrop::media

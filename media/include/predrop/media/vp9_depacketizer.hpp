#pragma once
// RTP -> VP9 samples, RFC 9628 receive side: the payload descriptor (§4.2, every optional field,
// the scalability structure skipped) is stripped and a picture's payloads are concatenated from
// its B packet to its E packet (or marker). A picture with any packet missing, or without its B
// packet, is dropped whole, as for VP8. Spatial layers (several pictures per timestamp) are not
// sent by predrop and would be delivered as one unit.
#include <utility>

#include "predrop/media/depacketizer.hpp"

namespace predrop::media {

/// Reassembles RTP payloads of one VP9 stream into samples.
class Vp9Depacketizer final : public Depacketizer {
 public:
  explicit Vp9Depacketizer(Callback on_access_unit) : Depacketizer(std::move(on_access_unit)) {}

 private:
  void on_payload(std::span<const std::uint8_t> payload, bool marker) override;
};

}  // namespace predrop::media

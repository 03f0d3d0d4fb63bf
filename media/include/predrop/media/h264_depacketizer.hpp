#pragma once
// RTP -> H.264 Annex-B access units, RFC 6184 packetization-mode=1 receive side: single NAL unit
// packets (§5.6), STAP-A (§5.7.1) and FU-A (§5.8); loss handling in Depacketizer. STAP-B, MTAP
// and FU-B (interleaved mode only) are counted as malformed and skipped.
#include <utility>

#include "predrop/media/depacketizer.hpp"

namespace predrop::media {

/// Reassembles RTP payloads of one H.264 stream into Annex-B access units.
class H264Depacketizer final : public Depacketizer {
 public:
  explicit H264Depacketizer(Callback on_access_unit) : Depacketizer(std::move(on_access_unit)) {}

 private:
  void on_payload(std::span<const std::uint8_t> payload, bool marker) override;
};

}  // namespace predrop::media

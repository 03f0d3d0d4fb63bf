#pragma once
// RTP -> H.265 Annex-B access units, RFC 7798 receive side without DONL (sprop-max-don-diff = 0):
// single NAL unit packets (§4.4.1), aggregation packets (§4.4.2) and fragmentation units
// (§4.4.3); loss handling in Depacketizer. PACI (§4.4.4) and unknown types count as malformed.
#include <utility>

#include "predrop/media/depacketizer.hpp"

namespace predrop::media {

/// Reassembles RTP payloads of one H.265 stream into Annex-B access units.
class H265Depacketizer final : public Depacketizer {
 public:
  explicit H265Depacketizer(Callback on_access_unit) : Depacketizer(std::move(on_access_unit)) {}

 private:
  void on_payload(std::span<const std::uint8_t> payload, bool marker) override;
};

}  // namespace predrop::media

#pragma once
// RTP -> AV1 temporal units, the receive side of the AOMedia "RTP Payload Format For AV1" (v1.0
// §4.4, §7): the aggregation header (Z, Y, W, N) is read, OBU elements (LEB128-length-prefixed,
// or the last of W without one) are restored to OBUs with obu_has_size_field = 1 and their size,
// an OBU fragmented over packets (Y, then Z) is joined, and each temporal unit starts with a
// temporal delimiter, so that a decoder (libdav1d, libaom) gets the low-overhead bitstream format
// (AV1 spec §5.2). An OBU with any fragment missing is dropped whole.
#include <cstdint>
#include <utility>
#include <vector>

#include "predrop/media/depacketizer.hpp"

namespace predrop::media {

/// Reassembles RTP payloads of one AV1 stream into temporal units.
class Av1Depacketizer final : public Depacketizer {
 public:
  explicit Av1Depacketizer(Callback on_access_unit) : Depacketizer(std::move(on_access_unit)) {}

 private:
  void on_payload(std::span<const std::uint8_t> payload, bool marker) override;
  void append_obu();

  std::vector<std::uint8_t> obu_;  // the OBU element in progress (header without size, data)
};

}  // namespace predrop::media

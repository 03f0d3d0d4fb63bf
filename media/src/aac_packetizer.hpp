#pragma once
// Private to media/src: AAC into RTP payloads per RFC 3640 mode AAC-hbr — one access unit per
// packet, fragmented when larger than the payload limit. MPEG-TS carries ADTS frames, which are
// unwrapped to raw access units (and give the AudioSpecificConfig when extradata has none).
#include <cstdint>
#include <utility>
#include <vector>

#include "staging.hpp"

namespace predrop::media::detail {

/// Packetizes the access units of one AAC stream.
class AacPacketizer {
 public:
  AacPacketizer(std::size_t max_payload, Warn warn)
      : max_payload_(max_payload), warn_(std::move(warn)) {}

  /// The AudioSpecificConfig from the container's extradata (may be empty: then from ADTS).
  void configure(Bytes extradata) { config_.assign(extradata.begin(), extradata.end()); }
  /// Stages one access unit; returns false if it was skipped (with a warning).
  bool add(Bytes access_unit, PayloadSink& sink);
  /// The AudioSpecificConfig, for the SDP's config= (empty if neither extradata nor ADTS).
  const std::vector<std::uint8_t>& config() const { return config_; }

 private:
  std::size_t max_payload_;
  Warn warn_;
  std::vector<std::uint8_t> config_;
};

}  // namespace predrop::media::detail

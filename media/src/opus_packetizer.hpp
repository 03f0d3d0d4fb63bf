#pragma once
// Private to media/src: Opus into RTP payloads per RFC 7587 — one Opus packet per RTP packet,
// never fragmented; the marker bit on the first packet of a talkspurt (without DTX: the first).
#include <cstdint>
#include <utility>

#include "staging.hpp"

namespace predrop::media::detail {

/// Packetizes the packets of one Opus stream.
class OpusPacketizer {
 public:
  OpusPacketizer(std::size_t max_payload, Warn warn)
      : max_payload_(max_payload), warn_(std::move(warn)) {}

  /// Stages one Opus packet; returns false if it was skipped (larger than max_payload).
  bool add(Bytes packet, PayloadSink& sink);

 private:
  std::size_t max_payload_;
  Warn warn_;
  bool marker_sent_ = false;
};

}  // namespace predrop::media::detail

// The sent-packet history of NACK retransmission; rules in predrop/chain/retransmission.hpp.
#include "predrop/chain/retransmission.hpp"

#include <bit>
#include <cstring>

namespace predrop::chain {

SentPacketRing::SentPacketRing(std::size_t slots, std::size_t max_payload)
    : mask_(std::bit_ceil(std::max<std::size_t>(slots, 1)) - 1),
      max_payload_(max_payload),
      entries_(std::make_unique<SentRtpPacket[]>(mask_ + 1)),
      payloads_(std::make_unique<std::uint8_t[]>((mask_ + 1) * max_payload)) {}

void SentPacketRing::record(std::uint16_t sequence, bool marker, std::uint32_t timestamp,
                            std::span<const std::uint8_t> payload) {
  const std::size_t slot = sequence & mask_;
  SentRtpPacket& e = entries_[slot];
  e.valid = payload.size() <= max_payload_;
  if (!e.valid) return;
  e.sequence = sequence;
  e.marker = marker;
  e.resent = 0;
  e.size = static_cast<std::uint16_t>(payload.size());
  e.timestamp = timestamp;
  if (!payload.empty()) {
    std::memcpy(&payloads_[slot * max_payload_], payload.data(), payload.size());
  }
}

SentRtpPacket* SentPacketRing::find(std::uint16_t sequence) {
  SentRtpPacket& e = entries_[sequence & mask_];
  return e.valid && e.sequence == sequence ? &e : nullptr;
}

std::span<const std::uint8_t> SentPacketRing::payload(const SentRtpPacket& p) const {
  return {&payloads_[(p.sequence & mask_) * max_payload_], p.size};
}

}  // namespace predrop::chain

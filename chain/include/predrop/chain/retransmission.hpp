#pragma once
// NACK-driven retransmission for a WebRTC peer (docs/webrtc.md "NACK and RTX"): the history of
// the packets a StageTransmitter actually sent on its retransmitted track, and the rate cap that
// bounds what a receiver's NACKs can make it resend.
//
//   history: SentPacketRing, a fixed ring of the last `slots` packets sent, by RTP sequence
//            number (the sent numbers are contiguous over sent packets, so the ring holds the
//            last `slots` of them exactly). Pre-discarded packets never take a number and are
//            never in it: a NACK can only ever bring back a packet that went out once.
//   cap:     RetransmitBudget, a byte credit: each first transmission adds `fraction` of its
//            bytes (up to `burst_bytes`), each retransmission spends its own. So over any
//            stretch retransmitted bytes <= fraction x sent bytes + burst_bytes, whatever a
//            receiver asks for (forged NACKs, floods).
//
// Contract: everything is allocated at construction (slots x max_payload bytes); record() and
// find() allocate nothing and never fail. Threading: the owner's loop thread.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace predrop::chain {

/// Settings of a transmitter's retransmission (RFC 4588 RTX).
struct RetransmitConfig {
  std::uint8_t track = 0;  ///< The track whose packets are kept and resent (the video).
  std::uint32_t ssrc = 0;  ///< The RTX stream's SSRC (a=ssrc-group:FID).
  std::uint8_t payload_type = 0;
  std::uint16_t initial_sequence = 0;  ///< The RTX stream's own sequence numbers start here.
  /// Packets kept: 256 is 2.5 s at 1 Mbit/s of 1250-byte packets, 0.2 s at 12 Mbit/s; a browser
  /// NACKs within ~1 RTT + its jitter buffer. A power of two.
  std::size_t slots = 256;
  /// Retransmitted bytes <= fraction x sent bytes (+ burst_bytes).
  double fraction = 0.25;
  std::size_t burst_bytes = std::size_t{64} * 1024;
  /// A packet is resent at most this many times (the browser NACKs again after an RTT).
  std::uint8_t max_per_packet = 2;
};

/// What was kept of one sent packet.
struct SentRtpPacket {
  std::uint16_t sequence = 0;
  bool valid = false;
  bool marker = false;
  std::uint8_t resent = 0;      ///< Times retransmitted.
  std::uint16_t size = 0;       ///< Payload bytes.
  std::uint32_t timestamp = 0;  ///< As sent (the track's offset included).
};

/// The last `slots` packets sent on one track, by sequence number.
class SentPacketRing {
 public:
  /// `slots` is rounded up to a power of two (at least 1); payloads up to `max_payload` bytes.
  SentPacketRing(std::size_t slots, std::size_t max_payload);

  /// Keeps packet `sequence` (overwrites the one `slots` before it); a payload longer than
  /// max_payload is not kept (the slot is emptied).
  void record(std::uint16_t sequence, bool marker, std::uint32_t timestamp,
              std::span<const std::uint8_t> payload);
  /// The packet sent under `sequence`, or nullptr if never sent or overwritten.
  SentRtpPacket* find(std::uint16_t sequence);
  /// The payload kept for `p` (which find() returned).
  std::span<const std::uint8_t> payload(const SentRtpPacket& p) const;
  std::size_t slots() const { return mask_ + 1; }

 private:
  std::size_t mask_;
  std::size_t max_payload_;
  std::unique_ptr<SentRtpPacket[]> entries_;
  std::unique_ptr<std::uint8_t[]> payloads_;
};

/// The retransmission byte credit.
class RetransmitBudget {
 public:
  RetransmitBudget(double fraction, std::size_t burst_bytes)
      : fraction_(fraction), burst_(static_cast<double>(burst_bytes)) {}
  /// A first transmission of `bytes` went out.
  void on_sent(std::size_t bytes) {
    credit_ = std::min(burst_, credit_ + fraction_ * static_cast<double>(bytes));
  }
  /// Takes `bytes` for a retransmission; false (nothing taken) if the credit is short.
  bool take(std::size_t bytes) {
    if (credit_ < static_cast<double>(bytes)) return false;
    credit_ -= static_cast<double>(bytes);
    return true;
  }
  double credit() const { return credit_; }

 private:
  double fraction_;
  double burst_;
  double credit_ = 0.0;
};

/// Counters of a transmitter's retransmissions.
struct RetransmitStats {
  std::uint64_t requested = 0;  ///< Sequence numbers NACKed.
  std::uint64_t sent = 0;       ///< RTX packets protected and handed to the batch.
  std::uint64_t bytes = 0;      ///< Their bytes on the wire (SRTP included).
  /// Their RTP payload octets (OSN + original payload): what the RTX stream's SR counts (RFC
  /// 3550 §6.4.1).
  std::uint64_t octets = 0;
  std::uint64_t unknown = 0;   ///< Not in the history: never sent (pre-discarded), too old, forged.
  std::uint64_t capped = 0;    ///< Refused by the byte credit.
  std::uint64_t repeated = 0;  ///< Refused: already resent max_per_packet times.
};

}  // namespace predrop::chain

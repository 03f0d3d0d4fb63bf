#pragma once
// The ingress chain of one peer: SRTP unprotect -> RTP parse -> stage accounting (reception
// period, received vs announced, queueing delay from abs-send-time) -> hand the payload on.
// Malformed, forged and replayed packets are counted drops, never errors that stop the stream.
//
// Threading: loop thread. The per-packet path copies the datagram once (SRTP decrypts in place
// and the receive slab is read-only) into a buffer allocated at construction.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "predrop/core/reception_meter.hpp"
#include "predrop/core/stage_alert_detector.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/wire/rtp.hpp"

namespace predrop::chain {

/// An optional stage between parsing and accounting, for tests and benchmarks that impair the
/// stream on the receiving side (drop a packet: return false; delay it: raise arrival_us).
using ReceiveImpairment =
    std::function<bool(const wire::RtpPacketView& packet, std::uint64_t& arrival_us)>;

/// Settings of a receiver.
struct ReceiverConfig {
  wire::RtpExtensionIds extension_ids{1, 2};
  core::ReceptionMeterConfig meter;
  /// Interim alerts (docs/design.md §2.9); off unless a threshold is set.
  core::StageAlertConfig alert;
  std::size_t max_datagram = 2048;
  ReceiveImpairment impairment;  ///< Empty in production.
};

/// Counters of a receiver; every dropped datagram lands in exactly one of the drop counters.
struct ReceiverStats {
  std::uint64_t datagrams = 0;
  std::uint64_t delivered = 0;
  std::uint64_t oversize = 0;
  std::uint64_t not_rtp = 0;  ///< RTCP or garbage on the RTP port.
  std::uint64_t malformed = 0;
  std::uint64_t srtp_auth_failed = 0;
  std::uint64_t srtp_replay = 0;
  std::uint64_t srtp_other = 0;
  std::uint64_t without_stage = 0;  ///< RTP without the stage extension (still delivered).
  std::uint64_t impaired = 0;       ///< Dropped by the configured impairment.
};

/// Ingress chain for one peer.
class StageReceiver {
 public:
  /// A packet that passed: the parsed view (valid only during the call) and its arrival time.
  using OnPacket = std::function<void(const wire::RtpPacketView& packet, std::uint64_t arrival_us)>;
  using OnStage = core::ReceptionMeter::OnStage;

  /// `srtp` empty means plain RTP.
  StageReceiver(ReceiverConfig config, std::optional<net::SrtpSession> srtp, OnPacket on_packet,
                OnStage on_stage);

  /// Feeds one datagram as received from the socket.
  void on_datagram(std::span<const std::uint8_t> data, std::uint64_t arrival_us);
  /// Called with each interim alert the receiver raises (config.alert), on the loop thread.
  void set_on_alert(std::function<void(const core::StageAlert&)> on_alert) {
    on_alert_ = std::move(on_alert);
  }
  /// Closes idle stages; call from a timer.
  void poll(std::uint64_t now_us) { meter_.poll(now_us); }
  /// Closes every open stage (end of stream).
  void flush() { meter_.flush(); }

  const ReceiverStats& stats() const { return stats_; }
  const core::ReceptionMeterStats& meter_stats() const { return meter_.stats(); }

 private:
  ReceiverConfig config_;
  std::optional<net::SrtpSession> srtp_;
  OnPacket on_packet_;
  core::ReceptionMeter meter_;
  core::StageAlertDetector alert_;
  std::function<void(const core::StageAlert&)> on_alert_;
  std::vector<std::uint8_t> buffer_;
  ReceiverStats stats_;
};

}  // namespace predrop::chain

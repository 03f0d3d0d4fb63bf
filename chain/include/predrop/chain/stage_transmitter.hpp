#pragma once
// The egress chain of one peer (a streaming session, a DDL relay's downlink to one worker, a
// worker's uplink): plan the stage's discards -> write the RTP header with the stage extension ->
// copy the payload -> SRTP protect -> batch -> sendmmsg. This is where packets are pre-discarded.
//
// The media or tensor packets are shared and read-only; per peer only the discard, the header,
// the encryption and the send differ (docs/design.md §5). Sequence numbers are renumbered over the
// packets actually sent, so a receiver's RTCP loss figures show network loss only.
//
// Batching: by default each send() call ends with one sendmmsg of what it produced. While a
// SendBatchScope is open on the thread, every transmitter on that scope's socket writes its
// packets straight into the scope's shared SendBatch instead, so that many sessions paced by one
// timer tick share full sendmmsg batches (the server opens one around each pacing tick).
//
// Threading: loop thread. Memory: everything is allocated at construction or first use (the
// discard mask grows only when a stage is larger than any before; the private batch slab is
// allocated the first time a packet goes out without a shared batch); the per-packet path
// allocates nothing.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "predrop/chain/picture_id.hpp"
#include "predrop/chain/retransmission.hpp"
#include "predrop/chain/transport_feedback.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/wire/rtcp.hpp"
#include "predrop/wire/rtp.hpp"

namespace predrop::chain {

/// One RTP stream (track) of the peer.
struct TrackConfig {
  std::uint32_t ssrc = 0;
  std::uint8_t payload_type = 96;
  std::uint16_t initial_sequence = 0;
  std::uint32_t timestamp_offset = 0;  ///< Added to every packet's media timestamp.
  net::SocketAddress destination;      ///< Where RTP goes.
  /// The peer's RTCP port; the transmitter's owner sends the SRs (server::StreamSession).
  std::optional<net::SocketAddress> rtcp_destination;
  /// VP8/VP9: PictureIDs are renumbered over the pictures sent (picture_id.hpp).
  PictureIdField picture_id = PictureIdField::kNone;
};

/// Static settings of a transmitter.
struct TransmitterConfig {
  /// Stage extension, abs-send-time and transport-wide sequence ids (a=extmap; 0 = none).
  wire::RtpExtensionIds extension_ids{1, 2};
  std::vector<TrackConfig> tracks;
  std::size_t max_payload_size = 1400;
  std::string cname = "predrop";
  /// A packet sent more than this after its due time (OutgoingPacket::due_us) is late, and so is
  /// its stage. 20 ms is below one frame period at 30 fps: a later packet would go out after the
  /// next picture's own send time.
  std::uint64_t late_after_us = 20'000;
};

/// One packet of the shared, packetized content.
struct OutgoingPacket {
  std::uint8_t track = 0;
  bool marker = false;
  std::uint32_t timestamp = 0;  ///< Media clock, before the track's offset.
  std::span<const std::uint8_t> payload;
  std::uint64_t due_us = 0;  ///< When the schedule wanted it sent (monotonic); 0 = untracked.
};

/// What begin_stage() decided.
struct StagePlan {
  std::uint32_t stage = 0;
  double rate = 0.0;
  std::size_t packets = 0;    ///< Packets in the stage before discarding.
  std::size_t discarded = 0;  ///< Pre-discarded.
  std::size_t to_send = 0;    ///< packets - discarded; announced in the stage extension.
};

/// Counters of one track.
struct TrackCounters {
  std::uint64_t packets = 0;
  std::uint64_t octets = 0;  ///< Payload octets, as RTCP SR counts them.
  std::uint16_t next_sequence = 0;
  std::uint32_t last_timestamp = 0;
};

/// Counters of the transmitter.
struct TransmitterStats {
  std::uint64_t stages = 0;
  std::uint64_t packets_planned = 0;
  std::uint64_t packets_discarded = 0;  ///< Pre-discarded by the planner.
  std::uint64_t packets_sent = 0;       ///< Handed to the kernel.
  std::uint64_t send_drops = 0;         ///< Refused by the kernel (queue full) or errors.
  std::uint64_t protect_errors = 0;
  std::uint64_t oversize = 0;      ///< Payloads larger than max_payload_size (not sent).
  std::uint64_t late_packets = 0;  ///< Sent more than late_after_us after their due time.
  std::uint64_t late_stages = 0;   ///< Stages with at least one late packet.
  std::uint64_t max_lag_us = 0;    ///< Largest send time - due time seen.
  std::uint64_t max_lead_us = 0;   ///< Largest due time - send time seen (sent early).
};

class StageTransmitter;

/// Where a transmitter's protected packets go instead of its UDP socket: the last step of the
/// chain made replaceable, for RTSP interleaved TCP (the server frames each packet on the
/// client's RTSP connection). Loop thread only; must not allocate per packet.
class PacketSink {
 public:
  virtual ~PacketSink() = default;
  /// Takes `batch` (datagram i belongs to track tracks[i]); returns how many were accepted, in
  /// order. The rest count as the transmitter's send_drops. The bytes live only for the call.
  virtual std::size_t send_batch(std::span<const net::OutDatagram> batch,
                                 std::span<const std::uint8_t> tracks) = 0;
};

/// A sendmmsg batch that the transmitters of one socket share while a SendBatchScope is open:
/// packets are written (header, payload, SRTP) directly into its slots, and the whole batch goes
/// to the kernel when it is full or when the scope closes. Loop thread only.
class SendBatch {
 public:
  /// `slot_size` bytes per packet slot (a transmitter whose packets may be larger keeps its
  /// private batch); `capacity` slots, at most net::UdpEndpoint::kMaxSendBatch.
  SendBatch(net::UdpEndpoint& socket, std::size_t slot_size,
            std::size_t capacity = net::UdpEndpoint::kMaxSendBatch);
  ~SendBatch();
  SendBatch(const SendBatch&) = delete;
  SendBatch& operator=(const SendBatch&) = delete;

  /// Hands every queued datagram to the kernel and credits each owner's counters.
  void flush();
  /// Datagrams queued and not yet flushed.
  std::size_t size() const { return datagrams_.size(); }
  /// sendmmsg calls made so far (for benchmarks).
  std::uint64_t flushes() const { return flushes_; }
  net::UdpEndpoint& socket() { return socket_; }
  std::size_t slot_size() const { return slot_size_; }

 private:
  friend class StageTransmitter;
  std::uint8_t* next_slot() { return slab_.get() + datagrams_.size() * slot_size_; }
  void push(std::size_t len, const net::SocketAddress* to, StageTransmitter* owner);

  net::UdpEndpoint& socket_;
  std::size_t slot_size_;
  std::size_t capacity_;
  std::unique_ptr<std::uint8_t[]> slab_;
  std::vector<net::OutDatagram> datagrams_;
  std::vector<StageTransmitter*> owners_;
  std::uint64_t flushes_ = 0;
};

/// While alive, transmitters on `batch`'s socket (on this thread) queue into `batch`; the
/// destructor flushes it and restores the scope that was open before (scopes nest).
class SendBatchScope {
 public:
  explicit SendBatchScope(SendBatch& batch);
  ~SendBatchScope();
  SendBatchScope(const SendBatchScope&) = delete;
  SendBatchScope& operator=(const SendBatchScope&) = delete;

 private:
  SendBatch* previous_;
};

/// Egress chain for one peer.
class StageTransmitter {
 public:
  /// `srtp` empty means plain RTP. The socket must outlive the transmitter.
  StageTransmitter(net::UdpEndpoint& socket, TransmitterConfig config,
                   std::optional<net::SrtpSession> srtp, core::DiscardPlanner planner);
  ~StageTransmitter();
  StageTransmitter(const StageTransmitter&) = delete;
  StageTransmitter& operator=(const StageTransmitter&) = delete;

  /// Starts stage `stage` of importance.size() packets at discard rate `rate`: decides which
  /// packets go. Flushes anything still batched from the previous stage.
  StagePlan begin_stage(std::uint32_t stage, double rate, std::span<const std::uint8_t> importance);
  /// Plans the discards of the current stage's packets `from` .. from + rest.size() - 1 (none of
  /// them sent yet) anew at `rate`, e.g. after a report that arrived while the stage is on the
  /// wire. The packets sent from now on announce the new count (a receiver keeps the latest
  /// count it saw); the earlier ones keep theirs. Returns the updated plan.
  StagePlan replan_rest(double rate, std::span<const std::uint8_t> rest, std::size_t from);
  /// Sends `packets`, which are the current stage's packets first .. first + size - 1, skipping
  /// the discarded ones; stamps abs-send-time with `now_us` (monotonic). Returns how many were
  /// handed to the kernel, or, inside a SendBatchScope for this socket, how many were queued
  /// into the shared batch (stats().packets_sent counts them when the batch is flushed).
  /// Without a scope the private batch is flushed before returning.
  std::size_t send(std::span<const OutgoingPacket> packets, std::size_t first,
                   std::uint64_t now_us);
  /// Records every packet sent from now on in `log` (nullptr: none) under the transport-wide
  /// sequence number it carries (extension_ids.transport_sequence); the log must outlive its use.
  void set_send_log(TransportSendLog* log) { send_log_ = log; }
  /// Keeps the packets sent on `config.track` from now on (allocated here, once) so that
  /// retransmit() can resend them as RTX (RFC 4588); called at most once, before sending.
  void enable_retransmission(const RetransmitConfig& config);
  /// Resends the packets of the retransmitted track sent under `sequences` (a NACK's list) as
  /// RTX packets: the RTX payload type, SSRC and own sequence numbers, the original timestamp
  /// and marker, the original sequence number (OSN) in the payload's first two bytes, protected
  /// like every packet, with the next transport-wide sequence number (logged as a
  /// retransmission: docs/webrtc.md). A number never sent (pre-discarded), no longer kept, or
  /// already resent max_per_packet times is refused, and so is everything beyond the byte credit;
  /// all counted in retransmit_stats(). Sent at once (private batch). Returns how many went.
  std::size_t retransmit(std::span<const std::uint16_t> sequences, std::uint64_t now_us);
  /// Counters of retransmit(); all zero without enable_retransmission().
  const RetransmitStats& retransmit_stats() const;
  /// The transport-wide sequence number the next packet sent gets.
  std::uint16_t next_transport_sequence() const { return next_transport_sequence_; }
  /// Sends every later packet to `sink` instead of the socket (nullptr: the socket again); the
  /// sink must outlive its use. A transmitter with a sink never joins a shared SendBatch.
  void set_sink(PacketSink* sink);

  /// Prefetch hints for a caller that knows which transmitter it serves next, in two steps a
  /// little apart: first the object itself (no load), then, once it is cached, what its fields
  /// point to (track settings, counters, header templates, the discard mask at packet
  /// `next_index` of the stage, the SRTP context). Hints only.
  void prefetch_object() const;
  void prefetch_targets(std::size_t next_index) const;

  /// The plan of the current stage.
  const StagePlan& plan() const { return plan_; }
  /// True when packet `index` of the current stage goes out (not pre-discarded).
  bool will_send(std::size_t index) const { return index >= plan_.packets || drop_[index] == 0; }
  const TrackCounters& track(std::size_t i) const { return counters_[i]; }
  /// Every track's counters, in the order of TransmitterConfig::tracks.
  std::span<const TrackCounters> tracks() const { return counters_; }
  const TransmitterConfig& config() const { return config_; }
  const TransmitterStats& stats() const { return stats_; }

 private:
  friend class SendBatch;
  void flush();
  void build_templates();

  net::UdpEndpoint& socket_;
  TransmitterConfig config_;
  std::optional<net::SrtpSession> srtp_;
  core::DiscardPlanner planner_;
  std::vector<TrackCounters> counters_;
  std::vector<PictureIdRenumber> picture_ids_;  // per track
  std::vector<std::uint8_t> drop_;              // Discard mask of the current stage.
  StagePlan plan_;
  std::size_t sent_in_stage_ = 0;
  bool stage_late_ = false;
  // Per track, the header of the current stage with everything but the per-packet fields
  // (marker, sequence, timestamp, stage index, abs-send-time) already in place.
  std::vector<std::array<std::uint8_t, 32>> templates_;
  std::size_t header_size_;
  std::size_t stage_offset_ = 0;  // Offset of the stage element's data (0 = not negotiated).
  std::size_t abs_offset_ = 0;    // Offset of the abs-send-time data (0 = not negotiated).
  // Offset of the transport-wide sequence number's data (0 = not negotiated); the number counts
  // the packets actually sent, over all tracks (one transport).
  std::size_t transport_offset_ = 0;
  std::uint16_t next_transport_sequence_ = 0;
  TransportSendLog* send_log_ = nullptr;
  // NACK retransmission (nullptr: not negotiated): history, credit, RTX numbering, slab.
  struct Rtx;
  std::unique_ptr<Rtx> rtx_;
  bool templates_ok_ =
      false;  // False: ids the template cannot hold; wire::write_rtp_packet is used.
  // Private batch slab: kBatch slots of slot_size_ bytes, and their datagram descriptors.
  static constexpr std::size_t kBatch = 32;
  std::size_t slot_size_;
  std::unique_ptr<std::uint8_t[]> slab_;
  std::vector<net::OutDatagram> batch_;
  std::array<std::uint8_t, kBatch> batch_tracks_{};  // Track of each datagram in batch_.
  PacketSink* sink_ = nullptr;
  std::size_t in_shared_ = 0;    // Datagrams of ours queued in a shared batch, not yet flushed.
  SendBatch* shared_ = nullptr;  // The batch holding them.
  TransmitterStats stats_;
};

}  // namespace predrop::chain

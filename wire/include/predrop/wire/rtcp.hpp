#pragma once
// RTCP codec: RFC 3550 §6.4.1 (SR), §6.4.2 (RR), §6.5 (SDES, CNAME item §6.5.1), §6.6 (BYE),
// §6.7 (APP), compound packet rules §6.1 and the validity checks of Appendix A.2; demultiplexing
// from RTP per RFC 5761 §4. Plus predrop's feedback, an APP packet named "PDFB" (docs/design.md
// §4).
//
// PDFB = APP packet (RFC 3550 §6.7), PT 204, subtype 0, name "PDFB", 48 bytes in total:
//
//   byte  field                                   notes
//   0     V=2 | P=0 | subtype=0                   0x80
//   1     PT = 204                                0xCC
//   2-3   length = 11                             32-bit words minus one
//   4-7   SSRC of the reporter                    same as the RR's sender SSRC
//   8-11  name "PDFB"                             ASCII 0x50 0x44 0x46 0x42
//   --- PDFB payload v1 (36 bytes, all big-endian) ---
//   12    version                                 low nibble = major (1), high nibble = minor (0)
//   13    metric code                             1 = PSNR dB, 2 = loss delta (DDL error
//                                                 reduction), 3 = other; 0 is invalid
//   14-15 flags                                   bit0 = P valid, bit1 = queue-delay growth valid,
//                                                 other bits reserved: written 0, ignored on read
//   16-19 media SSRC the report refers to
//   20-23 stage id                                from the stage extension
//   24-27 reception period L in µs                first to last received packet; saturates
//   28-31 packets received in the stage
//   32-35 packets announced for the stage         the stage extension's `count`; 0 = unknown
//   36-43 performance P                           IEEE-754 binary64; finite when bit0 is set
//   44-47 one-way queue-delay growth in µs        i32: OWD of the last packets minus the stage's
//                                                 minimum OWD; saturates
//   --- appended by PDFB v1.1 (version byte 0x11; 32 more bytes: packet 80 bytes, length 19) ---
//   48-51 bytes received                          link bytes (UDP payload + 42) of the stage
//   52-55 largest queueing delay in µs            of any packet of the stage; valid with bit1
//   56-59 smallest queueing delay in µs           of any packet: the queue that stood throughout
//   60-63 dispersion bytes                        link bytes of the packet pairs that left the
//   64-67 dispersion µs                           bottleneck back to back, and their arrival gaps:
//                                                 bytes / µs is the bottleneck rate; 0 / 0 = none
//   68-71 burst bytes                             the stage's largest burst: link bytes after its
//   72-75 burst send span µs                      first packet, first-to-last send time (abs-send-
//   76-79 burst arrival span µs                   time) and first-to-last arrival time
//   (all u32, saturating; core::PathMeasurement, core/include/predrop/core/reception_meter.hpp)
//
// Versioning: the version byte is (minor << 4) | major, so v1.0 is 0x01. A reader of major 1
// rejects any other major with an error naming both versions. Minor revisions may only append
// fields after byte 47 (in 32-bit words, as APP data must be); a reader skips what it does not
// know. Trailing bytes are accepted only if the minor is > 0: a v1.0 packet must be exactly 48
// bytes, so a truncated or padded v1.0 packet is caught rather than silently misread. A minor of
// 1 or more must carry at least v1.1's 32 bytes (68 bytes of payload); a v1.1 reader skips what
// a later minor appends. write_pdfb() writes v1.1 when the record has the path fields, else v1.0,
// so that a receiver without them still sends exactly what a v1.0 reader expects.
//
// Contract: pure functions over caller memory; no allocation on success (errors carry a message
// string). parse_rtcp_compound() validates the framing of the whole compound before it decodes
// any packet, so a visitor never sees packets from a compound whose lengths do not add up; a
// malformed body (e.g. an RR whose report blocks overrun it) stops the walk with an error after
// the packets before it were delivered.
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

#include "predrop/core/result.hpp"

namespace predrop::wire {

/// RTCP packet types (RFC 3550 §12.1).
inline constexpr std::uint8_t kRtcpSenderReport = 200;
inline constexpr std::uint8_t kRtcpReceiverReport = 201;
inline constexpr std::uint8_t kRtcpSdes = 202;
inline constexpr std::uint8_t kRtcpBye = 203;
inline constexpr std::uint8_t kRtcpApp = 204;
/// SDES item type of CNAME (RFC 3550 §6.5.1).
inline constexpr std::uint8_t kSdesCname = 1;
/// Report blocks one SR/RR can carry: the RC field has 5 bits (RFC 3550 §6.4.1).
inline constexpr std::size_t kMaxReportBlocks = 31;
/// Wire size of one report block (RFC 3550 §6.4.1).
inline constexpr std::size_t kReportBlockSize = 24;

/// APP name of predrop feedback.
inline constexpr std::string_view kPdfbName = "PDFB";
/// APP subtype of predrop feedback.
inline constexpr std::uint8_t kPdfbSubtype = 0;
/// Major version of the PDFB payload this code reads and writes.
inline constexpr std::uint8_t kPdfbMajorVersion = 1;
/// Size of the v1 PDFB payload (APP application-dependent data).
inline constexpr std::size_t kPdfbPayloadSize = 36;
/// Size of a whole PDFB APP packet.
inline constexpr std::size_t kPdfbPacketSize = 12 + kPdfbPayloadSize;
/// Size of the v1.1 PDFB payload (v1.0 plus eight words of path measurements).
inline constexpr std::size_t kPdfbPayloadSizeV11 = kPdfbPayloadSize + 32;
/// Size of a whole PDFB v1.1 APP packet.
inline constexpr std::size_t kPdfbPacketSizeV11 = 12 + kPdfbPayloadSizeV11;

/// One reception report block (RFC 3550 §6.4.1).
struct ReportBlock {
  std::uint32_t ssrc = 0;            ///< Source this block reports on.
  std::uint8_t fraction_lost = 0;    ///< Loss since the last report, in 1/256.
  std::int32_t cumulative_lost = 0;  ///< 24-bit signed on the wire; the writer clamps.
  std::uint32_t extended_highest_sequence = 0;
  std::uint32_t jitter = 0;               ///< Interarrival jitter in timestamp units.
  std::uint32_t last_sr = 0;              ///< LSR: middle 32 bits of the last SR's NTP time.
  std::uint32_t delay_since_last_sr = 0;  ///< DLSR in 1/65536 s.

  friend bool operator==(const ReportBlock&, const ReportBlock&) = default;
};

/// Up to 31 report blocks stored inline, so SR/RR values never allocate.
class ReportBlocks {
 public:
  /// Number of blocks held.
  std::size_t size() const { return size_; }
  /// True if no block is held.
  bool empty() const { return size_ == 0; }
  /// Appends a block; false (and nothing changes) when 31 are already held.
  bool push_back(const ReportBlock& block) {
    if (size_ == kMaxReportBlocks) {
      return false;
    }
    items_[size_++] = block;
    return true;
  }
  /// Removes all blocks.
  void clear() { size_ = 0; }
  /// The i-th block; i < size().
  const ReportBlock& operator[](std::size_t i) const { return items_[i]; }
  /// The held blocks.
  std::span<const ReportBlock> span() const { return {items_.data(), size_}; }
  /// Iteration over the held blocks.
  const ReportBlock* begin() const { return items_.data(); }
  const ReportBlock* end() const { return items_.data() + size_; }

  friend bool operator==(const ReportBlocks& a, const ReportBlocks& b) {
    if (a.size_ != b.size_) {
      return false;
    }
    for (std::size_t i = 0; i < a.size_; ++i) {
      if (!(a.items_[i] == b.items_[i])) {
        return false;
      }
    }
    return true;
  }

 private:
  std::array<ReportBlock, kMaxReportBlocks> items_{};
  std::size_t size_ = 0;
};

/// Sender report (RFC 3550 §6.4.1).
struct SenderReport {
  std::uint32_t ssrc = 0;
  std::uint64_t ntp_timestamp = 0;  ///< 32.32 fixed-point seconds since 1900.
  std::uint32_t rtp_timestamp = 0;
  std::uint32_t packet_count = 0;
  std::uint32_t octet_count = 0;
  ReportBlocks blocks;

  friend bool operator==(const SenderReport&, const SenderReport&) = default;
};

/// Receiver report (RFC 3550 §6.4.2); zero blocks is valid (nothing received yet).
struct ReceiverReport {
  std::uint32_t ssrc = 0;
  ReportBlocks blocks;

  friend bool operator==(const ReceiverReport&, const ReceiverReport&) = default;
};

/// What P means in a PDFB report.
enum class PdfbMetric : std::uint8_t {
  kPsnrDb = 1,     ///< PSNR of the decoded block in dB (streaming mode).
  kLossDelta = 2,  ///< Training loss reduction loss(s-1) - loss(s) (DDL mode).
  kOther = 3,      ///< Application-defined.
};

/// predrop feedback for one stage (PDFB payload v1, see the table above).
struct PdfbFeedback {
  PdfbMetric metric = PdfbMetric::kPsnrDb;
  bool performance_valid = false;  ///< flags bit0.
  bool queue_delay_valid = false;  ///< flags bit1.
  std::uint32_t media_ssrc = 0;
  std::uint32_t stage_id = 0;
  std::uint32_t reception_period_us = 0;  ///< L; use saturate_u32().
  std::uint32_t packets_received = 0;
  std::uint32_t packets_announced = 0;     ///< 0 = unknown.
  double performance = 0.0;                ///< P; must be finite if performance_valid.
  std::int32_t queue_delay_growth_us = 0;  ///< use saturate_i32().
  /// v1.1: the path fields below are present (written as minor 1, read from minor >= 1).
  bool has_path = false;
  std::uint32_t bytes_received = 0;    ///< Link bytes received.
  std::uint32_t queue_max_us = 0;      ///< Largest queueing delay of any packet.
  std::uint32_t queue_min_us = 0;      ///< Smallest queueing delay of any packet.
  std::uint32_t dispersion_bytes = 0;  ///< Bytes of the back-to-back pairs (0: none).
  std::uint32_t dispersion_us = 0;     ///< Their arrival gaps.
  std::uint32_t burst_bytes = 0;       ///< Largest burst: bytes after its first packet.
  std::uint32_t burst_send_us = 0;     ///< Its send span.
  std::uint32_t burst_arrival_us = 0;  ///< Its arrival span.

  friend bool operator==(const PdfbFeedback&, const PdfbFeedback&) = default;
};

/// Clamps a count or duration to the u32 fields of PDFB.
constexpr std::uint32_t saturate_u32(std::uint64_t v) {
  return v > std::numeric_limits<std::uint32_t>::max() ? std::numeric_limits<std::uint32_t>::max()
                                                       : static_cast<std::uint32_t>(v);
}

/// Clamps a signed duration to the i32 field of PDFB.
constexpr std::int32_t saturate_i32(std::int64_t v) {
  if (v > std::numeric_limits<std::int32_t>::max()) {
    return std::numeric_limits<std::int32_t>::max();
  }
  if (v < std::numeric_limits<std::int32_t>::min()) {
    return std::numeric_limits<std::int32_t>::min();
  }
  return static_cast<std::int32_t>(v);
}

/// Seconds from the NTP epoch (1900) to the Unix epoch (RFC 868).
inline constexpr std::uint64_t kNtpUnixOffsetSeconds = 2'208'988'800;

/// 64-bit NTP timestamp (RFC 3550 §4) of a wall-clock time given in µs since the Unix epoch.
constexpr std::uint64_t ntp_from_unix_us(std::uint64_t unix_us) {
  const std::uint64_t seconds = unix_us / 1'000'000 + kNtpUnixOffsetSeconds;
  const std::uint64_t fraction = ((unix_us % 1'000'000) << 32) / 1'000'000;
  return (seconds << 32) | fraction;
}

/// The middle 32 bits of an NTP timestamp, as carried in LSR (RFC 3550 §6.4.1).
constexpr std::uint32_t ntp_compact(std::uint64_t ntp) {
  return static_cast<std::uint32_t>(ntp >> 16);
}

/// True if a datagram on an rtcp-mux port is RTCP rather than RTP (RFC 5761 §4: second byte
/// 192..223, i.e. RTP payload types 64..95 with the marker bit set are never used).
constexpr bool looks_like_rtcp(std::span<const std::uint8_t> datagram) {
  return datagram.size() >= 4 && datagram[1] >= 192 && datagram[1] <= 223;
}

// ---- writers: each writes one packet (or a compound) and returns the bytes written ----

/// Writes an SR with its report blocks.
core::Result<std::size_t> write_sender_report(std::span<std::uint8_t> out, const SenderReport& sr);

/// Writes an RR with its report blocks (zero is fine).
core::Result<std::size_t> write_receiver_report(std::span<std::uint8_t> out,
                                                const ReceiverReport& rr);

/// Writes an SDES packet with one chunk holding one CNAME item (at most 255 bytes).
core::Result<std::size_t> write_sdes_cname(std::span<std::uint8_t> out, std::uint32_t ssrc,
                                           std::string_view cname);

/// Writes a BYE packet for one SSRC without a reason.
core::Result<std::size_t> write_bye(std::span<std::uint8_t> out, std::uint32_t ssrc);

/// Writes one PDFB APP packet: v1.1 (80 bytes) with has_path, else v1.0 (48 bytes). Fails if
/// metric is 0 or if performance_valid is set and P is not finite.
core::Result<std::size_t> write_pdfb(std::span<std::uint8_t> out, std::uint32_t reporter_ssrc,
                                     const PdfbFeedback& feedback);

/// Writes the feedback compound: RR, then SDES CNAME if cname is not empty (RFC 3550 §6.1 wants
/// one; predrop peers do not need it), then one PDFB per entry of feedback (at least one), each
/// with the RR's SSRC as reporter.
core::Result<std::size_t> write_feedback_compound(std::span<std::uint8_t> out,
                                                  const ReceiverReport& rr,
                                                  std::span<const PdfbFeedback> feedback,
                                                  std::string_view cname = {});

/// write_feedback_compound() with a single PDFB.
core::Result<std::size_t> write_feedback_compound(std::span<std::uint8_t> out,
                                                  const ReceiverReport& rr,
                                                  const PdfbFeedback& feedback,
                                                  std::string_view cname = {});

/// Writes an SR, followed by SDES CNAME if cname is not empty (what ffmpeg and GStreamer expect
/// from a sender for lip sync).
core::Result<std::size_t> write_sender_report_compound(std::span<std::uint8_t> out,
                                                       const SenderReport& sr,
                                                       std::string_view cname = {});

// ---- parsers ----

/// Parses PDFB application data (the bytes after the APP name), with the version rules above.
core::Result<PdfbFeedback> parse_pdfb_payload(std::span<const std::uint8_t> data);

/// Parses one standalone PDFB APP packet (header, subtype 0, name "PDFB", payload). The
/// reporter SSRC goes to *reporter_ssrc if given.
core::Result<PdfbFeedback> parse_pdfb(std::span<const std::uint8_t> packet,
                                      std::uint32_t* reporter_ssrc = nullptr);

/// Receives the packets of a compound in order. Every method has an empty default.
class RtcpVisitor {
 public:
  RtcpVisitor() = default;
  RtcpVisitor(const RtcpVisitor&) = default;
  RtcpVisitor& operator=(const RtcpVisitor&) = default;
  RtcpVisitor(RtcpVisitor&&) = default;
  RtcpVisitor& operator=(RtcpVisitor&&) = default;
  virtual ~RtcpVisitor() = default;
  /// An SR.
  virtual void on_sender_report(const SenderReport& /*sr*/) {}
  /// An RR.
  virtual void on_receiver_report(const ReceiverReport& /*rr*/) {}
  /// One SDES item; text views the caller's buffer.
  virtual void on_sdes_item(std::uint32_t /*ssrc*/, std::uint8_t /*type*/,
                            std::string_view /*text*/) {}
  /// One SSRC leaving (a BYE lists one or more).
  virtual void on_bye(std::uint32_t /*ssrc*/) {}
  /// A PDFB APP packet.
  virtual void on_pdfb(std::uint32_t /*reporter_ssrc*/, const PdfbFeedback& /*feedback*/) {}
  /// Any other APP packet; data views the caller's buffer.
  virtual void on_app(std::uint8_t /*subtype*/, std::uint32_t /*ssrc*/, std::string_view /*name*/,
                      std::span<const std::uint8_t> /*data*/) {}
  /// A packet of another type (RTPFB 205, PSFB 206, XR 207, ...), whole and unparsed.
  virtual void on_other(std::uint8_t /*packet_type*/, std::span<const std::uint8_t> /*packet*/) {}
};

/// Walks a compound RTCP packet (RFC 3550 §6.1, A.2): every packet has version 2, the first is
/// an SR or RR, lengths add up to the datagram, padding only on the last packet. Accepts SR/RR
/// followed by any mix of SDES, BYE, APP and unknown types (what ffmpeg, GStreamer and VLC send).
core::Status parse_rtcp_compound(std::span<const std::uint8_t> compound, RtcpVisitor& visitor);

/// At most this many PDFB reports are kept by the summary parser; more are counted as dropped.
inline constexpr std::size_t kMaxPdfbPerCompound = 4;

/// Summary of a compound for callers that want values rather than callbacks.
struct RtcpCompound {
  std::optional<SenderReport> sender_report;                 ///< Set if the first packet is an SR.
  std::optional<ReceiverReport> receiver_report;             ///< Set if the first packet is an RR.
  std::array<PdfbFeedback, kMaxPdfbPerCompound> feedback{};  ///< The first feedback_count PDFBs.
  std::size_t feedback_count = 0;
  std::size_t feedback_dropped = 0;  ///< PDFBs beyond kMaxPdfbPerCompound.
  std::string_view cname;            ///< First CNAME seen; views the caller's buffer.
  bool has_bye = false;
  std::size_t packet_count = 0;  ///< Packets in the compound.

  /// The PDFB reports kept.
  std::span<const PdfbFeedback> pdfb() const { return {feedback.data(), feedback_count}; }
};

/// parse_rtcp_compound() into an RtcpCompound.
core::Result<RtcpCompound> parse_rtcp_compound(std::span<const std::uint8_t> compound);

}  // namespace predrop::wire

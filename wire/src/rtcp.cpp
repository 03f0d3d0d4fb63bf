// RTCP codec; see rtcp.hpp for the RFC sections and the PDFB layout.
#include "predrop/wire/rtcp.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "predrop/core/byte_io.hpp"

namespace predrop::wire {
namespace {

using core::make_error;
using core::Result;
using core::Status;

constexpr std::uint8_t kVersionBits = 2 << 6;
constexpr std::uint8_t kPaddingBit = 0x20;
constexpr std::size_t kHeaderSize = 4;
constexpr std::size_t kSenderInfoSize = 24;  // SSRC + NTP + RTP ts + packet and octet counts
constexpr std::int32_t kMaxCumulativeLost = 0x7FFFFF;
constexpr std::int32_t kMinCumulativeLost = -0x800000;
constexpr std::uint16_t kPdfbFlagPerformance = 0x0001;
constexpr std::uint16_t kPdfbFlagQueueDelay = 0x0002;

// One packet of a compound after framing checks.
struct PacketRef {
  std::uint8_t count = 0;  // RC, SC or APP subtype: the low five bits of the first byte
  std::uint8_t type = 0;
  std::span<const std::uint8_t> packet;  // whole packet including header and padding
  std::span<const std::uint8_t> body;    // after the 4-byte header, padding removed
};

// Frames the packet at `offset` (RFC 3550 A.2 checks). Does not look into the body.
Status frame_packet(std::span<const std::uint8_t> compound, std::size_t offset, PacketRef& out) {
  if (compound.size() - offset < kHeaderSize) {
    return make_error("RTCP packet header truncated");
  }
  const std::uint8_t* p = compound.data() + offset;
  if ((p[0] >> 6) != 2) {
    return make_error("RTCP version is not 2");
  }
  const std::size_t size = (std::size_t{core::load_u16_be(p + 2)} + 1) * 4;
  if (size > compound.size() - offset) {
    return make_error("RTCP packet length field exceeds the datagram");
  }
  out.count = p[0] & 0x1F;
  out.type = p[1];
  out.packet = compound.subspan(offset, size);
  out.body = out.packet.subspan(kHeaderSize);
  if ((p[0] & kPaddingBit) != 0) {
    // RFC 3550 §6.4.1: only the last packet of a compound may be padded; the last octet counts
    // the padding, itself included.
    if (offset + size != compound.size()) {
      return make_error("RTCP padding bit set on a packet that is not the last of the compound");
    }
    const std::size_t pad = out.packet.back();
    if (pad == 0 || pad > out.body.size()) {
      return make_error("RTCP padding count is invalid");
    }
    out.body = out.body.first(out.body.size() - pad);
  }
  return core::Ok{};
}

// Checks the framing of every packet before anything is decoded.
Result<std::size_t> check_compound(std::span<const std::uint8_t> compound) {
  if (compound.size() < kHeaderSize) {
    return make_error("RTCP datagram shorter than one header");
  }
  std::size_t offset = 0;
  std::size_t packets = 0;
  while (offset < compound.size()) {
    PacketRef ref;
    if (Status s = frame_packet(compound, offset, ref); !s) {
      return s.error();
    }
    if (packets == 0 && ref.type != kRtcpSenderReport && ref.type != kRtcpReceiverReport) {
      return make_error("RTCP compound must start with an SR or RR (RFC 3550 §6.1)");
    }
    offset += ref.packet.size();
    ++packets;
  }
  return packets;
}

ReportBlock read_report_block(core::ByteReader& r) {
  ReportBlock b;
  b.ssrc = r.read_u32();
  b.fraction_lost = r.read_u8();
  const std::uint32_t lost = r.read_u24();
  // Sign-extend the 24-bit two's complement value.
  b.cumulative_lost = static_cast<std::int32_t>(lost ^ 0x800000u) - 0x800000;
  b.extended_highest_sequence = r.read_u32();
  b.jitter = r.read_u32();
  b.last_sr = r.read_u32();
  b.delay_since_last_sr = r.read_u32();
  return b;
}

void write_report_block(core::ByteWriter& w, const ReportBlock& b) {
  std::int32_t lost = b.cumulative_lost;
  if (lost > kMaxCumulativeLost) {
    lost = kMaxCumulativeLost;
  }
  if (lost < kMinCumulativeLost) {
    lost = kMinCumulativeLost;
  }
  w.write_u32(b.ssrc);
  w.write_u8(b.fraction_lost);
  w.write_u24(static_cast<std::uint32_t>(lost) & 0xFFFFFFu);
  w.write_u32(b.extended_highest_sequence);
  w.write_u32(b.jitter);
  w.write_u32(b.last_sr);
  w.write_u32(b.delay_since_last_sr);
}

Status read_report_blocks(core::ByteReader& r, std::size_t count, ReportBlocks& blocks) {
  if (count * kReportBlockSize > r.remaining()) {
    return make_error("RTCP report blocks overrun the packet");
  }
  for (std::size_t i = 0; i < count; ++i) {
    blocks.push_back(read_report_block(r));
  }
  return core::Ok{};
}

void write_header(core::ByteWriter& w, std::uint8_t count, std::uint8_t type,
                  std::size_t total_size) {
  w.write_u8(static_cast<std::uint8_t>(kVersionBits | count));
  w.write_u8(type);
  w.write_u16(static_cast<std::uint16_t>(total_size / 4 - 1));
}

Result<std::size_t> finish(const core::ByteWriter& w, const char* what) {
  if (!w.ok()) {
    return make_error(std::string(what) + " does not fit the output buffer");
  }
  return w.position();
}

Status decode_sender_report(const PacketRef& ref, SenderReport& sr) {
  core::ByteReader r(ref.body);
  sr.ssrc = r.read_u32();
  sr.ntp_timestamp = r.read_u64();
  sr.rtp_timestamp = r.read_u32();
  sr.packet_count = r.read_u32();
  sr.octet_count = r.read_u32();
  if (!r.ok()) {
    return make_error("RTCP SR shorter than its sender info");
  }
  // Bytes after the blocks are a profile-specific extension (§6.4.1) and are ignored.
  return read_report_blocks(r, ref.count, sr.blocks);
}

Status decode_receiver_report(const PacketRef& ref, ReceiverReport& rr) {
  core::ByteReader r(ref.body);
  rr.ssrc = r.read_u32();
  if (!r.ok()) {
    return make_error("RTCP RR shorter than its SSRC");
  }
  return read_report_blocks(r, ref.count, rr.blocks);
}

// RFC 3550 §6.5: SC chunks of SSRC + items, each chunk ended by a null item and padded to 32
// bits. Leniency: a chunk that reaches the end of the packet without a null item is accepted.
Status decode_sdes(const PacketRef& ref, RtcpVisitor& visitor) {
  const std::span<const std::uint8_t> body = ref.body;
  std::size_t i = 0;
  for (std::size_t chunk = 0; chunk < ref.count; ++chunk) {
    if (body.size() - i < 4) {
      return make_error("RTCP SDES chunk truncated");
    }
    const std::uint32_t ssrc = core::load_u32_be(&body[i]);
    i += 4;
    while (i < body.size()) {
      const std::uint8_t type = body[i];
      if (type == 0) {
        i = (i + 4) & ~std::size_t{3};  // the null octet, then up to the next 32-bit boundary
        break;
      }
      if (body.size() - i < 2) {
        return make_error("RTCP SDES item header truncated");
      }
      const std::size_t len = body[i + 1];
      if (len > body.size() - i - 2) {
        return make_error("RTCP SDES item overruns the packet");
      }
      const auto* text = reinterpret_cast<const char*>(&body[i + 2]);  // bytes as chars, no struct
      visitor.on_sdes_item(ssrc, type, std::string_view(text, len));
      i += 2 + len;
    }
    if (i > body.size()) {
      i = body.size();  // padding of the last chunk may be cut by P-removal
    }
  }
  return core::Ok{};
}

Status decode_bye(const PacketRef& ref, RtcpVisitor& visitor) {
  if (std::size_t{ref.count} * 4 > ref.body.size()) {
    return make_error("RTCP BYE SSRC list overruns the packet");
  }
  for (std::size_t k = 0; k < ref.count; ++k) {
    visitor.on_bye(core::load_u32_be(&ref.body[4 * k]));
  }
  // The optional reason text is not needed by predrop and is not validated.
  return core::Ok{};
}

Status decode_app(const PacketRef& ref, RtcpVisitor& visitor) {
  if (ref.body.size() < 8) {
    return make_error("RTCP APP packet shorter than SSRC and name");
  }
  const std::uint32_t ssrc = core::load_u32_be(ref.body.data());
  const std::string_view name(reinterpret_cast<const char*>(&ref.body[4]), 4);
  const std::span<const std::uint8_t> data = ref.body.subspan(8);
  if (name == kPdfbName && ref.count == kPdfbSubtype) {
    auto fb = parse_pdfb_payload(data);
    if (!fb) {
      return fb.error();
    }
    visitor.on_pdfb(ssrc, *fb);
  } else {
    visitor.on_app(ref.count, ssrc, name, data);
  }
  return core::Ok{};
}

Status walk(std::span<const std::uint8_t> compound, RtcpVisitor& visitor) {
  std::size_t offset = 0;
  while (offset < compound.size()) {
    PacketRef ref;
    if (Status s = frame_packet(compound, offset, ref); !s) {
      return s;
    }
    offset += ref.packet.size();
    Status s = core::Ok{};
    switch (ref.type) {
      case kRtcpSenderReport: {
        SenderReport sr;
        s = decode_sender_report(ref, sr);
        if (s) {
          visitor.on_sender_report(sr);
        }
        break;
      }
      case kRtcpReceiverReport: {
        ReceiverReport rr;
        s = decode_receiver_report(ref, rr);
        if (s) {
          visitor.on_receiver_report(rr);
        }
        break;
      }
      case kRtcpSdes:
        s = decode_sdes(ref, visitor);
        break;
      case kRtcpBye:
        s = decode_bye(ref, visitor);
        break;
      case kRtcpApp:
        s = decode_app(ref, visitor);
        break;
      default:
        visitor.on_other(ref.type, ref.packet);
        break;
    }
    if (!s) {
      return s;
    }
  }
  return core::Ok{};
}

class SummaryVisitor final : public RtcpVisitor {
 public:
  explicit SummaryVisitor(RtcpCompound& c) : c_(c) {}
  void on_sender_report(const SenderReport& sr) override {
    if (!c_.sender_report && !c_.receiver_report) {
      c_.sender_report = sr;
    }
  }
  void on_receiver_report(const ReceiverReport& rr) override {
    if (!c_.sender_report && !c_.receiver_report) {
      c_.receiver_report = rr;
    }
  }
  void on_sdes_item(std::uint32_t, std::uint8_t type, std::string_view text) override {
    if (type == kSdesCname && c_.cname.empty()) {
      c_.cname = text;
    }
  }
  void on_bye(std::uint32_t) override { c_.has_bye = true; }
  void on_pdfb(std::uint32_t, const PdfbFeedback& fb) override {
    if (c_.feedback_count < kMaxPdfbPerCompound) {
      c_.feedback[c_.feedback_count++] = fb;
    } else {
      ++c_.feedback_dropped;
    }
  }

 private:
  RtcpCompound& c_;
};

}  // namespace

Result<std::size_t> write_sender_report(std::span<std::uint8_t> out, const SenderReport& sr) {
  const std::size_t size = kHeaderSize + kSenderInfoSize + sr.blocks.size() * kReportBlockSize;
  core::ByteWriter w(out);
  write_header(w, static_cast<std::uint8_t>(sr.blocks.size()), kRtcpSenderReport, size);
  w.write_u32(sr.ssrc);
  w.write_u64(sr.ntp_timestamp);
  w.write_u32(sr.rtp_timestamp);
  w.write_u32(sr.packet_count);
  w.write_u32(sr.octet_count);
  for (const ReportBlock& b : sr.blocks) {
    write_report_block(w, b);
  }
  return finish(w, "RTCP SR");
}

Result<std::size_t> write_receiver_report(std::span<std::uint8_t> out, const ReceiverReport& rr) {
  const std::size_t size = kHeaderSize + 4 + rr.blocks.size() * kReportBlockSize;
  core::ByteWriter w(out);
  write_header(w, static_cast<std::uint8_t>(rr.blocks.size()), kRtcpReceiverReport, size);
  w.write_u32(rr.ssrc);
  for (const ReportBlock& b : rr.blocks) {
    write_report_block(w, b);
  }
  return finish(w, "RTCP RR");
}

Result<std::size_t> write_sdes_cname(std::span<std::uint8_t> out, std::uint32_t ssrc,
                                     std::string_view cname) {
  if (cname.size() > 255) {
    return make_error("RTCP SDES CNAME longer than 255 bytes");
  }
  // Chunk: SSRC, CNAME item (type, length, text), at least one null octet, padded to 32 bits.
  const std::size_t chunk = (4 + 2 + cname.size() + 1 + 3) & ~std::size_t{3};
  const std::size_t size = kHeaderSize + chunk;
  core::ByteWriter w(out);
  write_header(w, 1, kRtcpSdes, size);
  w.write_u32(ssrc);
  w.write_u8(kSdesCname);
  w.write_u8(static_cast<std::uint8_t>(cname.size()));
  w.write_bytes({reinterpret_cast<const std::uint8_t*>(cname.data()), cname.size()});
  w.write_zeros(size - w.position());
  return finish(w, "RTCP SDES");
}

Result<std::size_t> write_bye(std::span<std::uint8_t> out, std::uint32_t ssrc) {
  core::ByteWriter w(out);
  write_header(w, 1, kRtcpBye, 8);
  w.write_u32(ssrc);
  return finish(w, "RTCP BYE");
}

Result<std::size_t> write_pdfb(std::span<std::uint8_t> out, std::uint32_t reporter_ssrc,
                               const PdfbFeedback& fb) {
  if (static_cast<std::uint8_t>(fb.metric) == 0) {
    return make_error("PDFB metric code 0 is invalid");
  }
  if (fb.performance_valid && !std::isfinite(fb.performance)) {
    return make_error("PDFB performance marked valid must be finite");
  }
  core::ByteWriter w(out);
  write_header(w, kPdfbSubtype, kRtcpApp, fb.has_path ? kPdfbPacketSizeV11 : kPdfbPacketSize);
  w.write_u32(reporter_ssrc);
  w.write_bytes({reinterpret_cast<const std::uint8_t*>(kPdfbName.data()), kPdfbName.size()});
  // Minor version in the high nibble: 1 with the path fields, 0 without.
  w.write_u8(static_cast<std::uint8_t>((fb.has_path ? 0x10 : 0x00) | kPdfbMajorVersion));
  w.write_u8(static_cast<std::uint8_t>(fb.metric));
  w.write_u16(static_cast<std::uint16_t>((fb.performance_valid ? kPdfbFlagPerformance : 0) |
                                         (fb.queue_delay_valid ? kPdfbFlagQueueDelay : 0)));
  w.write_u32(fb.media_ssrc);
  w.write_u32(fb.stage_id);
  w.write_u32(fb.reception_period_us);
  w.write_u32(fb.packets_received);
  w.write_u32(fb.packets_announced);
  w.write_f64(fb.performance);
  w.write_i32(fb.queue_delay_growth_us);
  if (fb.has_path) {
    w.write_u32(fb.bytes_received);
    w.write_u32(fb.queue_max_us);
    w.write_u32(fb.queue_min_us);
    w.write_u32(fb.dispersion_bytes);
    w.write_u32(fb.dispersion_us);
    w.write_u32(fb.burst_bytes);
    w.write_u32(fb.burst_send_us);
    w.write_u32(fb.burst_arrival_us);
  }
  return finish(w, "RTCP PDFB");
}

Result<std::size_t> write_feedback_compound(std::span<std::uint8_t> out, const ReceiverReport& rr,
                                            std::span<const PdfbFeedback> feedback,
                                            std::string_view cname) {
  if (feedback.empty()) {
    return make_error("PDFB compound needs at least one report");
  }
  auto n = write_receiver_report(out, rr);
  if (!n) {
    return n;
  }
  std::size_t used = *n;
  if (!cname.empty()) {
    n = write_sdes_cname(out.subspan(used), rr.ssrc, cname);
    if (!n) {
      return n;
    }
    used += *n;
  }
  for (const PdfbFeedback& fb : feedback) {
    n = write_pdfb(out.subspan(used), rr.ssrc, fb);
    if (!n) {
      return n;
    }
    used += *n;
  }
  return used;
}

Result<std::size_t> write_feedback_compound(std::span<std::uint8_t> out, const ReceiverReport& rr,
                                            const PdfbFeedback& feedback, std::string_view cname) {
  return write_feedback_compound(out, rr, std::span<const PdfbFeedback>(&feedback, 1), cname);
}

Result<std::size_t> write_sender_report_compound(std::span<std::uint8_t> out,
                                                 const SenderReport& sr, std::string_view cname) {
  auto n = write_sender_report(out, sr);
  if (!n || cname.empty()) {
    return n;
  }
  auto m = write_sdes_cname(out.subspan(*n), sr.ssrc, cname);
  if (!m) {
    return m;
  }
  return *n + *m;
}

Result<PdfbFeedback> parse_pdfb_payload(std::span<const std::uint8_t> data) {
  if (data.empty()) {
    return make_error("PDFB payload is empty");
  }
  const unsigned major = data[0] & 0x0F;
  const unsigned minor = data[0] >> 4;
  if (major != kPdfbMajorVersion) {
    return make_error("PDFB major version " + std::to_string(major) +
                      " is not supported (this build reads major version 1)");
  }
  if (data.size() < kPdfbPayloadSize) {
    return make_error("PDFB v1 payload truncated: " + std::to_string(data.size()) + " of 36 bytes");
  }
  if (minor == 0 && data.size() != kPdfbPayloadSize) {
    return make_error("PDFB v1.0 payload has " + std::to_string(data.size() - kPdfbPayloadSize) +
                      " trailing bytes; only a minor version > 0 may append fields");
  }
  if (minor >= 1 && data.size() < kPdfbPayloadSizeV11) {
    return make_error("PDFB v1." + std::to_string(minor) + " payload truncated: " +
                      std::to_string(data.size()) + " of at least 68 bytes");
  }
  core::ByteReader r(data.first(kPdfbPayloadSize));
  r.skip(1);
  PdfbFeedback fb;
  const std::uint8_t metric = r.read_u8();
  if (metric == 0) {
    return make_error("PDFB metric code 0 is invalid");
  }
  fb.metric = static_cast<PdfbMetric>(metric);
  const std::uint16_t flags = r.read_u16();
  fb.performance_valid = (flags & kPdfbFlagPerformance) != 0;
  fb.queue_delay_valid = (flags & kPdfbFlagQueueDelay) != 0;
  fb.media_ssrc = r.read_u32();
  fb.stage_id = r.read_u32();
  fb.reception_period_us = r.read_u32();
  fb.packets_received = r.read_u32();
  fb.packets_announced = r.read_u32();
  fb.performance = r.read_f64();
  fb.queue_delay_growth_us = r.read_i32();
  if (minor >= 1) {
    // v1.1's words; anything a later minor appended after them is skipped. A reader of their
    // own: one reader over data.first(minor >= 1 ? 64 : 36) failed valid v1.1 input when built
    // with GCC 12.2 at -O2 (correct at -O0 and with ASan/UBSan); not understood, not kept.
    core::ByteReader v11(data.subspan(kPdfbPayloadSize, kPdfbPayloadSizeV11 - kPdfbPayloadSize));
    fb.has_path = true;
    fb.bytes_received = v11.read_u32();
    fb.queue_max_us = v11.read_u32();
    fb.queue_min_us = v11.read_u32();
    fb.dispersion_bytes = v11.read_u32();
    fb.dispersion_us = v11.read_u32();
    fb.burst_bytes = v11.read_u32();
    fb.burst_send_us = v11.read_u32();
    fb.burst_arrival_us = v11.read_u32();
    if (!v11.ok()) return make_error("PDFB v1.1 payload truncated");
  }
  // Cannot fail: the length was checked above. Kept as a guard against future edits.
  if (!r.ok()) {
    return make_error("PDFB payload truncated");
  }
  if (fb.performance_valid && !std::isfinite(fb.performance)) {
    return make_error("PDFB performance marked valid is not finite");
  }
  return fb;
}

Result<PdfbFeedback> parse_pdfb(std::span<const std::uint8_t> packet,
                                std::uint32_t* reporter_ssrc) {
  PacketRef ref;
  if (packet.size() < kHeaderSize) {
    return make_error("RTCP packet header truncated");
  }
  if (Status s = frame_packet(packet, 0, ref); !s) {
    return s.error();
  }
  if (ref.packet.size() != packet.size()) {
    return make_error("RTCP APP length field does not match the packet size");
  }
  if (ref.type != kRtcpApp) {
    return make_error("RTCP packet is not APP (PT 204)");
  }
  if (ref.body.size() < 8) {
    return make_error("RTCP APP packet shorter than SSRC and name");
  }
  const std::string_view name(reinterpret_cast<const char*>(&ref.body[4]), 4);
  if (name != kPdfbName) {
    return make_error("RTCP APP name is not PDFB");
  }
  if (ref.count != kPdfbSubtype) {
    return make_error("RTCP APP PDFB subtype is not 0");
  }
  if (reporter_ssrc != nullptr) {
    *reporter_ssrc = core::load_u32_be(ref.body.data());
  }
  return parse_pdfb_payload(ref.body.subspan(8));
}

Status parse_rtcp_compound(std::span<const std::uint8_t> compound, RtcpVisitor& visitor) {
  auto checked = check_compound(compound);
  if (!checked) {
    return checked.error();
  }
  return walk(compound, visitor);
}

Result<RtcpCompound> parse_rtcp_compound(std::span<const std::uint8_t> compound) {
  auto checked = check_compound(compound);
  if (!checked) {
    return checked.error();
  }
  RtcpCompound c;
  c.packet_count = *checked;
  SummaryVisitor visitor(c);
  if (Status s = walk(compound, visitor); !s) {
    return s.error();
  }
  return c;
}

}  // namespace predrop::wire

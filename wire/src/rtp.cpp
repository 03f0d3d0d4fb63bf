// RTP header codec; see rtp.hpp for the RFC sections and the layout contract.
#include "predrop/wire/rtp.hpp"

#include <cstring>

#include "predrop/core/byte_io.hpp"

namespace predrop::wire {
namespace {

using core::Error;
using core::make_error;
using core::Result;
using core::Status;

constexpr std::uint8_t kVersionBits = kRtpVersion << 6;
constexpr std::uint8_t kPaddingBit = 0x20;
constexpr std::uint8_t kExtensionBit = 0x10;
constexpr std::uint8_t kMarkerBit = 0x80;
constexpr std::uint8_t kOneByteReservedId = 15;  // RFC 8285 §4.2: stop processing at id 15.

// Records one extension element found while walking a block. Elements under a negotiated id with
// an unexpected size are ignored: the packet stays usable, only the tag is missing. The first
// element of a given id wins (RFC 8285 §4 allows one element per id and packet).
void record_element(std::uint8_t id, std::span<const std::uint8_t> data, const RtpExtensionIds& ids,
                    RtpPacketView& view) {
  if (id == ids.stage && data.size() == kStageExtensionSize && !view.stage) {
    view.stage = StageExtension{core::load_u32_be(data.data()), core::load_u16_be(data.data() + 4),
                                core::load_u16_be(data.data() + 6)};
  } else if (id == ids.abs_send_time && data.size() == kAbsSendTimeSize && !view.abs_send_time) {
    view.abs_send_time = core::load_u24_be(data.data());
  } else if (id == ids.transport_sequence && data.size() == kTransportSequenceSize &&
             !view.transport_sequence) {
    view.transport_sequence = core::load_u16_be(data.data());
  }
}

// RFC 8285 §4.2: one-byte header = 4-bit id, 4-bit (length - 1). A zero byte is padding. We treat
// any byte with id 0 as a single padding byte, as libwebrtc does, to be lenient with senders that
// leave garbage in the length nibble of padding.
Status walk_one_byte_elements(std::span<const std::uint8_t> block, const RtpExtensionIds& ids,
                              RtpPacketView& view) {
  std::size_t i = 0;
  while (i < block.size()) {
    const std::uint8_t b = block[i];
    const std::uint8_t id = b >> 4;
    if (id == 0) {
      ++i;
      continue;
    }
    if (id == kOneByteReservedId) {
      break;
    }
    const std::size_t len = static_cast<std::size_t>(b & 0x0F) + 1;
    if (len > block.size() - i - 1) {
      return make_error("RTP one-byte extension element overruns its block");
    }
    record_element(id, block.subspan(i + 1, len), ids, view);
    i += 1 + len;
  }
  return core::Ok{};
}

// RFC 8285 §4.3: two-byte header = 8-bit id, 8-bit length (0..255). A zero id byte is padding.
Status walk_two_byte_elements(std::span<const std::uint8_t> block, const RtpExtensionIds& ids,
                              RtpPacketView& view) {
  std::size_t i = 0;
  while (i < block.size()) {
    const std::uint8_t id = block[i];
    if (id == 0) {
      ++i;
      continue;
    }
    if (block.size() - i < 2) {
      return make_error("RTP two-byte extension element header truncated");
    }
    const std::size_t len = block[i + 1];
    if (len > block.size() - i - 2) {
      return make_error("RTP two-byte extension element overruns its block");
    }
    record_element(id, block.subspan(i + 2, len), ids, view);
    i += 2 + len;
  }
  return core::Ok{};
}

Status check_ids(const RtpExtensionIds& ids) {
  if (ids.stage > kMaxOneByteExtensionId || ids.abs_send_time > kMaxOneByteExtensionId ||
      ids.transport_sequence > kMaxOneByteExtensionId) {
    return make_error("RTP extension id must be 1..14 for one-byte elements (RFC 8285 §4.2)");
  }
  if (ids.stage != 0 && ids.stage == ids.abs_send_time) {
    return make_error("RTP stage and abs-send-time extensions need different ids");
  }
  if (ids.transport_sequence != 0 &&
      (ids.transport_sequence == ids.stage || ids.transport_sequence == ids.abs_send_time)) {
    return make_error("RTP transport-wide sequence extension needs its own id");
  }
  return core::Ok{};
}

std::size_t extension_body_size(const RtpExtensionIds& ids) {
  std::size_t n = 0;
  if (ids.stage != 0) {
    n += 1 + kStageExtensionSize;
  }
  if (ids.abs_send_time != 0) {
    n += 1 + kAbsSendTimeSize;
  }
  if (ids.transport_sequence != 0) {
    n += 1 + kTransportSequenceSize;
  }
  return (n + 3) & ~std::size_t{3};
}

}  // namespace

std::uint32_t RtpPacketView::csrc(std::size_t i) const {
  return core::load_u32_be(csrcs.data() + 4 * i);
}

Result<RtpPacketView> parse_rtp(std::span<const std::uint8_t> packet, const RtpExtensionIds& ids) {
  core::ByteReader r(packet);
  const std::uint8_t b0 = r.read_u8();
  const std::uint8_t b1 = r.read_u8();
  RtpPacketView v;
  v.header.sequence = r.read_u16();
  v.header.timestamp = r.read_u32();
  v.header.ssrc = r.read_u32();
  if (!r.ok()) {
    return make_error("RTP packet shorter than the 12-byte fixed header");
  }
  if ((b0 >> 6) != kRtpVersion) {
    return make_error("RTP version is not 2");
  }
  v.header.marker = (b1 & kMarkerBit) != 0;
  v.header.payload_type = b1 & 0x7F;
  v.csrc_count = b0 & 0x0F;

  v.csrcs = r.read_bytes(std::size_t{v.csrc_count} * 4);
  if (!r.ok()) {
    return make_error("RTP CSRC list overruns the packet");
  }

  if ((b0 & kExtensionBit) != 0) {
    v.has_extension = true;
    v.extension_profile = r.read_u16();
    const std::size_t words = r.read_u16();
    v.extension_data = r.read_bytes(words * 4);
    if (!r.ok()) {
      return make_error("RTP header extension overruns the packet");
    }
  }
  v.header_size = r.position();

  std::span<const std::uint8_t> payload = r.rest();
  if ((b0 & kPaddingBit) != 0) {
    // RFC 3550 §5.1: the last octet counts the padding octets, itself included.
    if (payload.empty()) {
      return make_error("RTP padding bit set but no room for the count");
    }
    const std::size_t pad = payload.back();
    if (pad == 0) {
      return make_error("RTP padding count is zero");
    }
    if (pad > payload.size()) {
      return make_error("RTP padding count exceeds the payload");
    }
    v.padding_size = pad;
    payload = payload.first(payload.size() - pad);
  }
  v.payload = payload;

  if (v.has_extension) {
    Status s = core::Ok{};
    if (v.extension_profile == kOneByteExtensionProfile) {
      s = walk_one_byte_elements(v.extension_data, ids, v);
    } else if ((v.extension_profile & 0xFFF0) == kTwoByteExtensionProfile) {
      s = walk_two_byte_elements(v.extension_data, ids, v);
    }
    if (!s) {
      return s.error();
    }
  }
  return v;
}

std::size_t rtp_header_size(const RtpExtensionIds& ids) {
  const std::size_t body = extension_body_size(ids);
  return kRtpFixedHeaderSize + (body == 0 ? 0 : 4 + body);
}

Result<std::size_t> write_rtp_header(std::span<std::uint8_t> out, const RtpHeader& header,
                                     const RtpExtensions& ext) {
  if (Status s = check_ids(ext.ids); !s) {
    return s.error();
  }
  if (header.payload_type > 0x7F) {
    return make_error("RTP payload type must be 0..127");
  }
  const std::size_t body = extension_body_size(ext.ids);
  core::ByteWriter w(out);
  w.write_u8(kVersionBits | (body != 0 ? kExtensionBit : 0));
  w.write_u8(static_cast<std::uint8_t>((header.marker ? kMarkerBit : 0) | header.payload_type));
  w.write_u16(header.sequence);
  w.write_u32(header.timestamp);
  w.write_u32(header.ssrc);
  if (body != 0) {
    w.write_u16(kOneByteExtensionProfile);
    w.write_u16(static_cast<std::uint16_t>(body / 4));
    const std::size_t body_start = w.position();
    if (ext.ids.stage != 0) {
      w.write_u8(static_cast<std::uint8_t>(ext.ids.stage << 4 | (kStageExtensionSize - 1)));
      w.write_u32(ext.stage.stage_id);
      w.write_u16(ext.stage.index);
      w.write_u16(ext.stage.count);
    }
    if (ext.ids.abs_send_time != 0) {
      w.write_u8(static_cast<std::uint8_t>(ext.ids.abs_send_time << 4 | (kAbsSendTimeSize - 1)));
      w.write_u24(ext.abs_send_time);
    }
    if (ext.ids.transport_sequence != 0) {
      w.write_u8(static_cast<std::uint8_t>(ext.ids.transport_sequence << 4 |
                                           (kTransportSequenceSize - 1)));
      w.write_u16(ext.transport_sequence);
    }
    w.write_zeros(body - (w.position() - body_start));
  }
  if (!w.ok()) {
    return make_error("RTP header does not fit the output buffer");
  }
  return w.position();
}

Result<std::size_t> write_rtp_packet(std::span<std::uint8_t> out, const RtpHeader& header,
                                     const RtpExtensions& ext,
                                     std::span<const std::uint8_t> payload) {
  auto n = write_rtp_header(out, header, ext);
  if (!n) {
    return n;
  }
  if (payload.size() > out.size() - *n) {
    return make_error("RTP payload does not fit the buffer");
  }
  if (!payload.empty()) {
    std::memcpy(out.data() + *n, payload.data(), payload.size());
  }
  return *n + payload.size();
}

Result<RtpHeaderLayout> RtpHeaderLayout::create(const RtpExtensionIds& ids) {
  if (Status s = check_ids(ids); !s) {
    return s.error();
  }
  RtpHeaderLayout l;
  l.ids_ = ids;
  l.header_size_ = rtp_header_size(ids);
  std::size_t next = kRtpFixedHeaderSize + 4;  // first element header byte
  if (ids.stage != 0) {
    l.stage_offset_ = next + 1;
    next += 1 + kStageExtensionSize;
  }
  if (ids.abs_send_time != 0) {
    l.abs_offset_ = next + 1;
    next += 1 + kAbsSendTimeSize;
  }
  if (ids.transport_sequence != 0) {
    l.transport_offset_ = next + 1;
  }
  return l;
}

bool RtpHeaderLayout::matches(std::span<const std::uint8_t> packet) const {
  if (packet.size() < header_size_) {
    return false;
  }
  const bool has_ext = header_size_ > kRtpFixedHeaderSize;
  // V=2, P=0, CC=0 and X as the layout says.
  if ((packet[0] & 0xEF) != kVersionBits) {
    return false;
  }
  if (((packet[0] & kExtensionBit) != 0) != has_ext) {
    return false;
  }
  if (!has_ext) {
    return true;
  }
  if (core::load_u16_be(&packet[12]) != kOneByteExtensionProfile) {
    return false;
  }
  if (core::load_u16_be(&packet[14]) != (header_size_ - kRtpFixedHeaderSize - 4) / 4) {
    return false;
  }
  if (stage_offset_ != 0 &&
      packet[stage_offset_ - 1] != (ids_.stage << 4 | (kStageExtensionSize - 1))) {
    return false;
  }
  if (abs_offset_ != 0 &&
      packet[abs_offset_ - 1] != (ids_.abs_send_time << 4 | (kAbsSendTimeSize - 1))) {
    return false;
  }
  if (transport_offset_ != 0 && packet[transport_offset_ - 1] !=
                                    (ids_.transport_sequence << 4 | (kTransportSequenceSize - 1))) {
    return false;
  }
  return true;
}

Status RtpHeaderLayout::patch(std::span<std::uint8_t> packet, const RtpHeader& header,
                              const StageExtension& stage, std::uint32_t abs_send_time) const {
  if (!matches(packet)) {
    return make_error("RTP buffer does not hold a header of this layout");
  }
  if (header.payload_type > 0x7F) {
    return make_error("RTP payload type must be 0..127");
  }
  std::uint8_t* p = packet.data();
  p[1] = static_cast<std::uint8_t>((header.marker ? kMarkerBit : 0) | header.payload_type);
  core::store_u16_be(p + 2, header.sequence);
  core::store_u32_be(p + 4, header.timestamp);
  core::store_u32_be(p + 8, header.ssrc);
  if (stage_offset_ != 0) {
    core::store_u32_be(p + stage_offset_, stage.stage_id);
    core::store_u16_be(p + stage_offset_ + 4, stage.index);
    core::store_u16_be(p + stage_offset_ + 6, stage.count);
  }
  if (abs_offset_ != 0) {
    core::store_u24_be(p + abs_offset_, abs_send_time);
  }
  return core::Ok{};
}

Status RtpHeaderLayout::patch_abs_send_time(std::span<std::uint8_t> packet,
                                            std::uint32_t abs_send_time) const {
  if (abs_offset_ == 0) {
    return make_error("RTP layout has no abs-send-time element");
  }
  if (!matches(packet)) {
    return make_error("RTP buffer does not hold a header of this layout");
  }
  core::store_u24_be(packet.data() + abs_offset_, abs_send_time);
  return core::Ok{};
}

}  // namespace predrop::wire

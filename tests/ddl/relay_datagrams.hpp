#pragma once
// Hand-made worker datagrams for the relay tests and fuzz_ddl_relay: a control compound
// (ddl/include/predrop/ddl/protocol.hpp) and a tensor-chunk RTP packet with the stage extension
// (docs/design.md §4.1, §4.6), each SRTP/SRTCP-protected with a caller's outbound session, or
// plain without one. Header-only; the results own their bytes.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "predrop/ddl/chunk.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/wire/rtp.hpp"

namespace predrop::test {

/// The control compound `m`, protected with `srtcp` (nullptr: plain); empty if it cannot be made.
inline std::vector<std::uint8_t> control_datagram(const ddl::ControlMessage& m,
                                                  net::SrtpSession* srtcp) {
  std::vector<std::uint8_t> out(ddl::kMaxControlDatagram);
  auto n = ddl::encode_control(out, m, srtcp);
  if (!n) return {};
  out.resize(*n);
  return out;
}

/// One RTP packet of a worker's gradient: `values` at `offset` of a tensor of `tensor_elements`,
/// stage extension {stage, index, count} under id 1 (the relay's default), payload type 96,
/// protected with `srtp` (nullptr: plain); empty if it cannot be made.
inline std::vector<std::uint8_t> chunk_datagram(std::uint32_t ssrc, std::uint16_t sequence,
                                                wire::StageExtension stage,
                                                std::uint32_t tensor_elements, std::uint32_t offset,
                                                std::span<const float> values,
                                                net::SrtpSession* srtp) {
  std::vector<std::uint8_t> payload(ddl::chunk_payload_size(values.size()));
  auto len = ddl::encode_chunk(
      {0, 0, static_cast<std::uint16_t>(values.size()), tensor_elements, offset}, values, payload);
  if (!len) return {};
  payload.resize(*len);
  wire::RtpHeader h;
  h.payload_type = 96;
  h.sequence = sequence;
  h.timestamp = stage.stage_id;
  h.ssrc = ssrc;
  wire::RtpExtensions ext;
  ext.ids = {1, 0};
  ext.stage = stage;
  std::vector<std::uint8_t> out(payload.size() + 64 + net::kSrtpMaxTrailer);
  auto n = wire::write_rtp_packet(out, h, ext, payload);
  if (!n) return {};
  std::size_t size = *n;
  if (srtp != nullptr) {
    const net::SrtpResult r = srtp->protect_rtp(out, size);
    if (!r) return {};
    size = r.length;
  }
  out.resize(size);
  return out;
}

}  // namespace predrop::test

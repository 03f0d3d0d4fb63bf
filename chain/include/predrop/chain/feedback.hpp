#pragma once
// Per-stage feedback between the receiver's measurements and the sender's control unit: the one
// place that maps a StageMeasurement + P onto the PDFB wire record and a PDFB back onto a
// core::StageReport, and that wraps the RR+PDFB compound in SRTCP.
#include <cstdint>
#include <span>

#include "predrop/core/rate_controller.hpp"
#include "predrop/core/reception_meter.hpp"
#include "predrop/core/result.hpp"
#include "predrop/core/stage_report.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/wire/pdal.hpp"
#include "predrop/wire/rr_tracker.hpp"
#include "predrop/wire/rtcp.hpp"

namespace predrop::chain {

/// The PDFB record for a measured stage and the receiver's performance value.
wire::PdfbFeedback make_feedback(const core::StageMeasurement& m, double performance,
                                 wire::PdfbMetric metric, std::uint32_t media_ssrc);

/// The control unit's view of a received PDFB. Invalid P (flag clear) becomes NaN, which the
/// controller rejects with a clear error.
core::StageReport to_stage_report(const wire::PdfbFeedback& feedback);

/// The control unit's view of one stage covered by a standard Receiver Report interval
/// (docs/rtsp.md "Adaptation from Receiver Reports"). An RR covers several stages (players send
/// one every 2-7 s); each stage covered gets its own report: `announced` is the stage's packets
/// inside the interval, received applies the interval's loss fraction to them (RR loss is
/// network loss only: sequence numbers count packets sent); L is the stage's scheduled duration
/// (an RR says nothing about the reception period); the queueing delay is RTT minus the base RTT
/// when the RTT is known; P is 0 (no picture score: the policy must not need one).
core::StageReport rr_stage_report(const wire::RrInterval& interval, std::uint32_t stage,
                                  double stage_duration_us, std::uint32_t announced);

/// Writes RR (no blocks) + PDFB and protects it with `srtp` when given. `out` needs room for the
/// SRTCP trailer. Returns the datagram length.
core::Result<std::size_t> encode_feedback(std::span<std::uint8_t> out, std::uint32_t reporter_ssrc,
                                          const wire::PdfbFeedback& feedback,
                                          net::SrtpSession* srtp);

/// The PDAL record of a receiver's interim alert (rates in link bytes per second on the wire).
wire::PdalAlert make_alert(const core::StageAlert& alert, std::uint32_t media_ssrc);

/// The control unit's view of a received PDAL.
core::StageAlert to_stage_alert(const wire::PdalAlert& alert);

/// Writes RR (no blocks) + PDAL and protects it with `srtp` when given. `out` needs room for the
/// SRTCP trailer. Returns the datagram length.
core::Result<std::size_t> encode_alert(std::span<std::uint8_t> out, std::uint32_t reporter_ssrc,
                                       const wire::PdalAlert& alert, net::SrtpSession* srtp);

/// Unprotects `buffer[0, len)` in place when `srtp` is given, then parses the compound. When
/// `plain_len` is given it receives the length of the plain RTCP (0 if SRTCP failed), so that a
/// caller can walk packets the summary does not keep (transport-cc) or a reduced-size packet.
core::Result<wire::RtcpCompound> decode_rtcp(std::span<std::uint8_t> buffer, std::size_t len,
                                             net::SrtpSession* srtp,
                                             std::size_t* plain_len = nullptr);

}  // namespace predrop::chain

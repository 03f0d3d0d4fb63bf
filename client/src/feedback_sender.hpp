#pragma once
// The measuring client's feedback path (docs/design.md §2.3, §2.9): builds the per-block report
// (RR + PDFB) and the interim alert (RR + PDAL) for the scored track, protects them with the
// client's SRTCP context, and sends them to that track's server RTCP port. The server is the RTSP
// session's, not the URL's: after a DESCRIBE redirect (an origin's edge, docs/edge.md) they
// differ. Each report is built in a stack buffer: nothing is allocated per report.
// Threading: loop thread.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "predrop/core/rate_controller.hpp"
#include "predrop/core/reception_meter.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/rtsp/client_session.hpp"

namespace predrop::client {

/// Sends the scored track's PDFB reports and PDAL alerts over its RTCP socket.
class FeedbackSender {
 public:
  /// `session` must outlive the sender; `track` is the scored track's index in its tracks();
  /// `srtcp` protects what is sent (none: plain RTCP); `reporter_ssrc` is our RR's SSRC.
  FeedbackSender(const rtsp::ClientSession& session, std::size_t track,
                 std::optional<net::SrtpSession> srtcp, std::uint32_t reporter_ssrc);

  /// The scored track's RTCP socket, once SETUP opened it; it must outlive the sender. Until
  /// then nothing is sent.
  void use_socket(net::UdpEndpoint& rtcp) { rtcp_ = &rtcp; }

  /// Sends the block's RR + PDFB with its measurement and its PSNR `psnr_db` (NaN: none).
  void send_report(const core::StageMeasurement& m, double psnr_db);
  /// Sends an RR + PDAL for the block in flight; true when it went out.
  bool send_alert(const core::StageAlert& alert);

 private:
  std::uint32_t media_ssrc() const;
  void send(std::span<const std::uint8_t> datagram);

  const rtsp::ClientSession& session_;
  std::size_t track_;
  std::optional<net::SrtpSession> srtcp_;
  std::uint32_t reporter_ssrc_;
  net::UdpEndpoint* rtcp_ = nullptr;
};

}  // namespace predrop::client

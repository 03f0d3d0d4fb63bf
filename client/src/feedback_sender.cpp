#include "feedback_sender.hpp"

#include <utility>

#include "predrop/chain/feedback.hpp"
#include "predrop/wire/pdal.hpp"

namespace predrop::client {

FeedbackSender::FeedbackSender(const rtsp::ClientSession& session, std::size_t track,
                               std::optional<net::SrtpSession> srtcp, std::uint32_t reporter_ssrc)
    : session_(session), track_(track), srtcp_(std::move(srtcp)), reporter_ssrc_(reporter_ssrc) {}

void FeedbackSender::send_report(const core::StageMeasurement& m, double psnr_db) {
  const auto fb = chain::make_feedback(m, psnr_db, wire::PdfbMetric::kPsnrDb, media_ssrc());
  std::uint8_t buf[256];  // RR + PDFB v1.1 + SRTCP trailer
  const auto n = chain::encode_feedback(buf, reporter_ssrc_, fb, srtcp_ ? &*srtcp_ : nullptr);
  if (n) send(std::span<const std::uint8_t>(buf, *n));
}

bool FeedbackSender::send_alert(const core::StageAlert& alert) {
  const auto pdal = chain::make_alert(alert, media_ssrc());
  std::uint8_t buf[wire::kPdalPacketSize + 8 + net::kSrtpMaxTrailer];  // RR + PDAL + SRTCP
  const auto n = chain::encode_alert(buf, reporter_ssrc_, pdal, srtcp_ ? &*srtcp_ : nullptr);
  if (!n) return false;
  send(std::span<const std::uint8_t>(buf, *n));
  return true;
}

std::uint32_t FeedbackSender::media_ssrc() const {
  return session_.tracks()[track_].ssrc.value_or(0);
}

void FeedbackSender::send(std::span<const std::uint8_t> datagram) {
  if (rtcp_ == nullptr) return;
  // The session's server, at the port its SETUP answer gave the track's RTCP.
  const auto to = session_.server().with_port(session_.tracks()[track_].server_port.rtcp);
  rtcp_->send(datagram, to);
}

}  // namespace predrop::client

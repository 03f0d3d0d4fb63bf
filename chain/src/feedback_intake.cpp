#include "predrop/chain/feedback_intake.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "predrop/chain/feedback.hpp"
#include "predrop/wire/rtcp_nack.hpp"

namespace predrop::chain {

namespace {
// The reports of one read(): an RR covers at most the ledger's stages, a compound carries at
// most kMaxPdfbPerCompound PDFB records. One array per thread (the owner reads one datagram at a
// time), so that a thousand sessions do not each keep one.
constexpr std::size_t kMaxReports = StageLedger::kStages + wire::kMaxPdfbPerCompound;
thread_local std::array<core::StageReport, kMaxReports> reports;
// The largest RTCP compound a receiver sends that the server reads (its RTCP buffer).
constexpr std::size_t kMaxDatagram = 4096 + net::kSrtpMaxTrailer;

// Calls visit(packet) for each packet of a plain RTCP compound, in order, up to the first that
// does not frame (RFC 3550 §6.4: version 2, length in 32-bit words minus one).
template <typename Visit>
void for_each_rtcp_packet(std::span<const std::uint8_t> plain, Visit&& visit) {
  std::size_t at = 0;
  while (plain.size() - at >= 4 && (plain[at] >> 6) == 2) {
    const std::size_t size = (std::size_t{plain[at + 2]} << 8 | plain[at + 3]) * 4 + 4;
    if (size > plain.size() - at) break;
    visit(plain.subspan(at, size));
    at += size;
  }
}
}  // namespace

FeedbackIntake::FeedbackIntake(IntakeConfig config) : config_(std::move(config)) {
  if (config_.suite) {
    in_.emplace(net::SrtpDirection::Inbound, *config_.suite, config_.key);
    for (const IntakeTrack& t : config_.tracks) {
      if (t.client_suite) {
        client_in_.emplace_back(net::SrtpDirection::Inbound, *t.client_suite, t.client_key);
      }
    }
    if (!client_in_.empty() || !config_.pdfb) copy_.resize(kMaxDatagram);
  }
  // Every receiver without PDFB has its RRs read (RTT, jitter, refused blocks); only with
  // rr_reports do they become stage reports.
  if (!config_.pdfb) {
    for (const IntakeTrack& t : config_.tracks) {
      rr_.emplace_back(t.initial_sequence, t.clock_rate);
    }
  }
  if (config_.rtcp_fb) nacked_.reserve(kMaxNacked);
}

FeedbackIntake::~FeedbackIntake() = default;
FeedbackIntake::FeedbackIntake(FeedbackIntake&&) noexcept = default;
FeedbackIntake& FeedbackIntake::operator=(FeedbackIntake&&) noexcept = default;

void FeedbackIntake::note_sender_report(std::uint32_t ntp_compact) {
  for (auto& tracker : rr_) {
    tracker.note_sender_report(ntp_compact);
  }
}

core::StageReport* FeedbackIntake::next_slot() {
  return count_ < reports.size() ? &reports[count_++] : nullptr;
}

const Intake& FeedbackIntake::read(std::span<std::uint8_t> buffer, std::size_t len,
                                   std::uint32_t arrival_compact,
                                   std::span<const std::uint64_t> packets_sent,
                                   const StageLedger& ledger) {
  out_ = Intake{};
  count_ = 0;
  // A receiver without PDFB may send its RRs as plain RTCP although the session is SRTP (ffmpeg
  // 5.1 keys only its SRTP input from a=crypto and writes RTCP unprotected): those are read for
  // the RR path only, with an LSR required (the SR times travel encrypted, so a valid LSR is
  // what an off-path sender lacks).
  const bool plain_rr = in_ && !config_.pdfb && !rr_.empty();
  const bool retry = (!client_in_.empty() || plain_rr) && len <= copy_.size();
  if (retry) std::copy_n(buffer.begin(), len, copy_.begin());
  // SRTCP opened under the session key or a key the receiver announced (a WebRTC peer's own,
  // from DTLS-SRTP): plain_len is what the last key opened, whether it parsed as a compound or
  // not. Transport-cc is read from there, in a compound or alone: a reduced-size message
  // (RFC 5506) is no compound but authenticated all the same.
  std::size_t plain_len = 0;
  auto compound = decode_rtcp(buffer, len, in_ ? &*in_ : nullptr, &plain_len);
  nacked_.clear();
  const bool fb = twcc_ != nullptr || config_.rtcp_fb;
  const auto reduced_size_twcc = [&] {
    if (compound || !fb || plain_len == 0) return false;
    if (read_rtcp_fb(std::span<const std::uint8_t>(buffer.data(), plain_len), ledger) == 0) {
      return false;
    }
    out_.authenticated = true;
    out_.reports = std::span<const core::StageReport>(reports.data(), count_);
    return true;
  };
  if (reduced_size_twcc()) return out_;
  // A receiver that announced its own key protects its SRTCP with that, one key per track.
  for (std::size_t k = 0; !compound && plain_len == 0 && retry && k < client_in_.size(); ++k) {
    std::copy_n(copy_.begin(), len, buffer.begin());
    compound = decode_rtcp(buffer, len, &client_in_[k], &plain_len);
    if (reduced_size_twcc()) return out_;
  }
  if (!compound && retry && plain_rr) {
    std::copy_n(copy_.begin(), len, buffer.begin());
    auto plain = decode_rtcp(buffer, len, nullptr);
    // It counts only if a block of it passed the RR checks; anything else is an error, as any
    // compound that fails SRTCP.
    if (plain && plain->receiver_report && plain->feedback_count == 0 &&
        read_rr(*plain->receiver_report, false, arrival_compact, packets_sent, ledger) > 0) {
      out_.unprotected_rr = true;
      out_.from_rr = true;
      out_.reports = std::span<const core::StageReport>(reports.data(), count_);
      return out_;
    }
  }
  if (!compound) {
    out_.error = true;
    count_ = 0;
    return out_;
  }
  out_.authenticated = true;
  // Before the RR: from the first transport-cc message on, RR intervals make no reports.
  if (fb) (void)read_rtcp_fb(std::span<const std::uint8_t>(buffer.data(), plain_len), ledger);
  if (compound->receiver_report) {
    out_.receiver_report = true;
    const auto& blocks = compound->receiver_report->blocks;
    if (blocks.size() > 0) {
      out_.fraction_lost = blocks[0].fraction_lost;
      out_.jitter = blocks[0].jitter;
    }
    if (!rr_.empty()) {
      out_.from_rr = !twcc_seen_;
      (void)read_rr(*compound->receiver_report, true, arrival_compact, packets_sent, ledger);
    }
  }
  if (config_.pdfb) {
    read_pdfb(*compound, ledger);
    read_alerts(std::span<const std::uint8_t>(buffer.data(), plain_len), ledger);
  }
  out_.reports = std::span<const core::StageReport>(reports.data(), count_);
  return out_;
}

void FeedbackIntake::read_pdfb(const wire::RtcpCompound& compound, const StageLedger& ledger) {
  for (const wire::PdfbFeedback& fb : compound.pdfb()) {
    core::StageReport report = to_stage_report(fb);
    const StageRecord* r = ledger.find(report.stage);
    core::StageReport* slot = r != nullptr ? next_slot() : nullptr;
    if (slot == nullptr) {
      // A report for a stage this sender never sent (or long forgotten).
      ++out_.unknown_stages;
      continue;
    }
    report.rate_used = r->rate_used();
    *slot = report;
  }
}

void FeedbackIntake::read_alerts(std::span<const std::uint8_t> plain, const StageLedger& ledger) {
  // The compound parsed already (lengths add up); walk it for APP packets named PDAL.
  for_each_rtcp_packet(plain, [&](std::span<const std::uint8_t> packet) {
    if (packet.size() < 12 || packet[1] != wire::kRtcpApp || (packet[0] & 0x1F) != 0 ||
        std::string_view(reinterpret_cast<const char*>(packet.data() + 8), 4) != wire::kPdalName) {
      return;
    }
    const auto alert = wire::parse_pdal_payload(packet.subspan(12));
    const StageRecord* r = alert ? ledger.find(alert->stage_id) : nullptr;
    if (r == nullptr || r->settled) {
      ++out_.alerts_refused;
      return;
    }
    out_.alert = to_stage_alert(*alert);
  });
}

std::uint32_t FeedbackIntake::read_rr(const wire::ReceiverReport& rr, bool authenticated,
                                      std::uint32_t arrival_compact,
                                      std::span<const std::uint64_t> packets_sent,
                                      const StageLedger& ledger) {
  std::uint32_t passed = 0;
  // docs/rtsp.md "Adaptation from Receiver Reports": a report block about one of our tracks
  // covers the packets since the last block used; every stage it covers whole, oldest first,
  // gets one report with its own packets and the interval's loss fraction and queueing delay.
  for (const wire::ReportBlock& block : rr.blocks) {
    std::size_t t = 0;
    while (t < config_.tracks.size() && config_.tracks[t].ssrc != block.ssrc) {
      ++t;
    }
    if (t >= config_.tracks.size() || t >= kLedgerTracks || t >= packets_sent.size()) continue;
    if (!authenticated && block.last_sr == 0) {
      ++out_.rr_blocks_refused;  // unprotected and naming no SR: nothing vouches for it
      continue;
    }
    auto iv = rr_[t].measure(block, packets_sent[t], arrival_compact);
    if (!iv) {
      ++out_.rr_blocks_refused;
      continue;
    }
    ++passed;
    ++out_.rr_blocks_passed;
    if (iv->rtt_us) out_.rtt_us = iv->rtt_us;
    out_.jitter_us = iv->jitter_us;
    if (config_.rr_reports && !twcc_seen_ && iv->expected != 0) (void)cover(*iv, t, ledger);
  }
  return passed;
}

bool FeedbackIntake::ours(std::uint32_t media_ssrc) const {
  // The first track only: the video, which is what the RTX history keeps and key frames are
  // about (a WHEP session's Opus track is the second one, and a NACK naming it must not make
  // the video's packets of those numbers go again).
  return !config_.tracks.empty() && config_.tracks.front().ssrc == media_ssrc;
}

std::uint32_t FeedbackIntake::read_rtcp_fb(std::span<const std::uint8_t> plain,
                                           const StageLedger& ledger) {
  std::uint32_t messages = 0;
  for_each_rtcp_packet(plain, [&](std::span<const std::uint8_t> packet) {
    const std::uint8_t fmt = packet[0] & 0x1F;
    if (packet[1] == wire::kRtcpRtpfb && fmt == wire::kTransportCcFmt && twcc_ != nullptr) {
      twcc_packets_.clear();
      if (!wire::parse_transport_cc(packet, twcc_packets_)) return;
      ++messages;
      ++out_.transport_cc;
      twcc_seen_ = true;
      measure_transport_cc(ledger);
    } else if (packet[1] == wire::kRtcpRtpfb && fmt == wire::kGenericNackFmt && config_.rtcp_fb) {
      const std::size_t before = nacked_.size();
      const auto n = wire::parse_generic_nack(packet, nacked_, kMaxNacked);
      if (!n) return;
      ++messages;
      if (!ours(n->media_ssrc)) {
        nacked_.resize(before);  // about a stream we do not send
        return;
      }
      ++out_.nacks;
      out_.nacked_truncated += n->truncated;
      out_.nacked = std::span<const std::uint16_t>(nacked_.data(), nacked_.size());
    } else if (packet[1] == wire::kRtcpPsfb && config_.rtcp_fb) {
      const auto r = wire::parse_key_frame_request(packet);
      if (!r) return;
      ++messages;
      if (!ours(r->media_ssrc)) return;
      if (r->kind == wire::KeyFrameRequestKind::kPli) {
        ++out_.plis;
      } else {
        ++out_.firs;
      }
    }
  });
  return messages;
}

void FeedbackIntake::measure_transport_cc(const StageLedger& ledger) {
  for (const core::StageMeasurement& m : twcc_->on_feedback(twcc_packets_)) {
    const StageRecord* r = ledger.find(m.stage);
    core::StageReport* slot = r != nullptr && !r->settled ? next_slot() : nullptr;
    if (slot == nullptr) {
      ++out_.unknown_stages;  // long forgotten, or settled by an RR before transport-cc came
      continue;
    }
    // The same mapping (and rounding) as the measuring client's PDFB v1.1 record, P = 0: the
    // browser scores no picture (the policy must not need one, as with RRs).
    *slot = to_stage_report(make_feedback(m, 0.0, wire::PdfbMetric::kOther, 0));
    slot->rate_used = r->rate_used();
  }
  // The sender's own interim alert from the browser's arrival times: handed on as a client's
  // PDAL is (read_alerts), for a stage still unsettled.
  if (const auto& alert = twcc_->alert()) {
    const StageRecord* r = ledger.find(alert->stage);
    if (r != nullptr && !r->settled) out_.alert = *alert;
  }
}

bool FeedbackIntake::cover(const wire::RrInterval& iv, std::size_t t, const StageLedger& ledger) {
  if (ledger.newest() == kNoStage) return false;
  const std::uint64_t covered_end = iv.highest_index + 1;
  const std::uint64_t covered_begin = covered_end - iv.expected;
  // Stages before `lower` are settled (or covered by an earlier block of this datagram).
  std::uint32_t lower = ledger.oldest_unsettled();
  if (out_.covered_through && StageLedger::before(lower, *out_.covered_through + 1)) {
    lower = *out_.covered_through + 1;
  }
  // The newest ended, unsettled stage all of whose packets on this track are covered.
  std::optional<std::uint32_t> last;
  for (std::uint32_t back = 0; back < StageLedger::kStages; ++back) {
    const std::uint32_t s = ledger.newest() - back;
    const StageRecord* r = ledger.find(s);
    if (r == nullptr || StageLedger::before(s, lower)) break;
    if (r->ended && r->end_packet[t] <= covered_end) {
      last = s;
      break;
    }
  }
  // None yet (the RR came within a stage): keep the baseline, the next RR covers both.
  if (!last) return false;
  rr_[t].commit(iv);
  ++out_.rr_intervals;
  for (std::uint32_t s = lower; !StageLedger::before(*last, s); ++s) {
    const StageRecord* r = ledger.find(s);
    if (r == nullptr || r->settled) continue;
    core::StageReport* slot = next_slot();
    if (slot == nullptr) break;
    const std::uint64_t lo = std::max(r->first_packet[t], covered_begin);
    const std::uint64_t hi = r->end_packet[t];
    const auto announced = static_cast<std::uint32_t>(hi > lo ? hi - lo : 0);
    *slot = rr_stage_report(iv, s, r->duration_us, announced);
    slot->rate_used = r->rate_used();
  }
  out_.covered_through = *last;
  return true;
}

}  // namespace predrop::chain

// StreamSession (stream_session.hpp) owns one client's chain and applies what its units return:
//   session_chain.hpp        the chain's settings from the session's configuration, once
//   block_packets.hpp        a block's packets for the tracks set up, in link bytes
//   sender_report_table.hpp  what each SR says; sender_reports.hpp sends it
//   rtcp_counts.hpp          what an RTCP datagram adds to the counters
//   page_report_hold.hpp     browser reports held for the page's P
//   stage_records.hpp        what the ledger keeps of a stage beside its report
//   block_trace.hpp          a stage's row of the block trace
// The schedule, the stage in flight, the ledger and the controller's calls are here.
#include "predrop/server/stream_session.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

#include "block_packets.hpp"
#include "block_trace.hpp"
#include "page_report_hold.hpp"
#include "predrop/chain/feedback.hpp"
#include "predrop/core/log.hpp"
#include "predrop/core/stage_report.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/wire/rtp.hpp"
#include "rtcp_counts.hpp"
#include "sender_report_table.hpp"
#include "sender_reports.hpp"
#include "session_chain.hpp"
#include "stage_records.hpp"

namespace predrop::server {

namespace {
constexpr std::uint64_t kSenderReportIntervalUs = 1'000'000;
// The first SR follows PLAY by this much, after the first media: GStreamer's srtpdec failed to
// unprotect an SR that reached it with the PLAY response (1 run in ~10 of interop_gstreamer,
// "unprotect failed code 13", no stream context yet), and an SR for a stream not yet sent tells
// a player nothing.
constexpr std::uint64_t kFirstSenderReportDelayUs = 100'000;

// The packets of one pump() on their way to the transmitter: one array per thread (the pacer
// pumps one session at a time), so that a thousand sessions do not each keep a cold copy.
thread_local std::array<chain::OutgoingPacket, 64> staging;
}  // namespace

StreamSession::StreamSession(std::shared_ptr<const media::BlockSource> source,
                             std::unique_ptr<SessionTransport> transport, const net::Clock& clock,
                             StreamSessionConfig config,
                             std::unique_ptr<core::RateController> controller, OnBlock on_block)
    : source_(std::move(source)),
      config_(std::move(config)),
      controller_(std::move(controller)),
      on_block_(std::move(on_block)),
      transport_(std::move(transport)) {
  paced_ = config_.paced;
  feedback_ = config_.feedback;
  report_timeout_us_ = config_.report_timeout_us;
  detail::SessionChain chain = detail::session_chain(config_, source_->streams());
  sender_reports_ = std::make_unique<detail::SenderReports>(
      config_.srtp_suite, config_.key, chain.transmitter.cname, clock.now_us());
  if (config_.page_quality) page_ = std::make_unique<detail::PageReportHold>();
  page_track_ = chain.page_track;
  track_of_stream_ = std::move(chain.track_of_stream);
  stream_track_ = track_of_stream_.data();
  filter_streams_ = chain.filter_streams;
  packet_overhead_ = chain.packet_overhead;
  intake_.emplace(std::move(chain.intake));
  std::optional<net::SrtpSession> srtp_out;
  if (config_.srtp_suite) {
    srtp_out.emplace(net::SrtpDirection::Outbound, *config_.srtp_suite, config_.key);
  }
  const std::size_t largest = source_->max_block_packets();
  if (config_.discard == core::DiscardPolicy::kPriority) {
    discard_order_.resize(largest);
    removable_.resize(largest + 1);
  }
  core::DiscardPlanner planner(config_.discard, config_.discard_seed);
  planner.set_whole_levels(config_.whole_frames);
  transmitter_ = std::make_unique<chain::StageTransmitter>(
      transport_->rtp_socket(), std::move(chain.transmitter), std::move(srtp_out), planner);
  tx_ = transmitter_.get();
  // prefetch_fields() brings in the first two cache lines: the hot fields must stay in them.
  assert(reinterpret_cast<const char*>(&rtp_offset_ + 1) - reinterpret_cast<const char*>(this) <=
         128);
  if (chain::PacketSink* sink = transport_->media_sink()) transmitter_->set_sink(sink);
  if (config_.retransmission) transmitter_->enable_retransmission(*config_.retransmission);
  if (config_.rtcp_fb) protected_importance_.resize(largest);
  if (config_.extension_ids.transport_sequence != 0) {
    twcc_ = std::make_unique<chain::TransportFeedback>(
        core::ReceptionMeterConfig{}, core::StageAlertConfig{config_.transport_alert_us});
    transmitter_->set_send_log(&twcc_->send_log());
    intake_->set_transport_feedback(twcc_.get());
  }
  if (filter_streams_) {
    filtered_index_.resize(largest);
    filtered_importance_.resize(largest);
  }
  sequence_ = source_->join_sequence();
  (void)fetch(clock.now_us());
}

StreamSession::~StreamSession() = default;

std::size_t StreamSession::note_page_quality(const PageQuality& report, std::uint64_t now_us) {
  ++stats_.page_reports;
  stats_.last_page_quality = report.p;
  stats_.page_frames_decoded += report.frames_decoded;
  stats_.page_freeze_ms += report.freeze_ms;
  if (!page_) return 0;
  if (!report.has_rtp || !page_->join().add({report.p, report.rtp_from, report.rtp_to})) {
    ++stats_.page_reports_unattributed;
  }
  std::uint64_t with_page_p = 0;
  if (apply_page_reports(page_->release(now_us), with_page_p)) replan_current(now_us);
  return with_page_p;
}

bool StreamSession::apply_page_reports(std::span<const detail::HandedReport> handed,
                                       std::uint64_t& with_page_p) {
  bool taken = false;
  for (const detail::HandedReport& h : handed) {
    taken = apply_report(h.report, false) || taken;
    if (h.from_page) {
      ++stats_.page_quality_blocks;
      ++with_page_p;
    }
  }
  return taken;
}

SessionStats StreamSession::stats() const {
  SessionStats s = detail::with_retransmits(stats_, transmitter_->retransmit_stats());
  s.interleaved_drops = transport_->drops();
  return s;
}

bool StreamSession::fetch(std::uint64_t now_us) {
  switch (source_->read(sequence_, block_)) {
    case media::BlockState::kReady:
      break;
    case media::BlockState::kNotYet:
      // Not produced yet: look again shortly; the block goes out from when it comes.
      if (!waited_) ++stats_.source_waits;
      waited_ = true;
      retry_us_ = now_us + kSourcePollUs;
      return false;
    case media::BlockState::kGone:
      // The session fell behind the source's ring: on at the source's join point (a key frame),
      // from now.
      ++stats_.source_rejoins;
      sequence_ = source_->join_sequence();
      anchor_on_fetch_ = true;
      if (source_->read(sequence_, block_) != media::BlockState::kReady) {
        retry_us_ = now_us + kSourcePollUs;
        return false;
      }
      break;
    case media::BlockState::kEnded:
      finished_ = true;
      return false;
  }
  take_block();
  // A block that came late (or the first one after play()) starts now: the schedule moves on
  // from here instead of sending the late block at once.
  if (anchor_on_fetch_ || (waited_ && play_start_us_ + block_start_us_ < now_us)) {
    play_start_us_ = now_us - block_start_us_;
  }
  anchor_on_fetch_ = false;
  waited_ = false;
  return true;
}

void StreamSession::take_block() {
  have_block_ = true;
  key_protected_ = false;  // protect_key_frame() made it for the block before
  block_start_us_ = block_.start_us;
  block_packets_ = block_.packets.data();
  block_arena_ = block_.arena.data();
  rtp_offset_ = block_.rtp_offset;
  if (!filter_streams_) {
    block_index_ = nullptr;
    block_size_ = static_cast<std::uint32_t>(block_.packets.size());
    return;
  }
  // Only the packets of the streams set up, in order (within the size the source promised).
  block_size_ = detail::pick_packets(block_.packets, block_.importance, track_of_stream_,
                                     filtered_index_, filtered_importance_);
  block_index_ = filtered_index_.data();
}

std::span<const std::uint8_t> StreamSession::block_importance() const {
  if (key_protected_) {
    return std::span<const std::uint8_t>(protected_importance_).first(block_size_);
  }
  if (filter_streams_) {
    return std::span<const std::uint8_t>(filtered_importance_).first(block_size_);
  }
  return block_.importance;
}

std::uint16_t StreamSession::next_sequence(std::size_t track) const {
  return transmitter_->track(track).next_sequence;
}

std::uint32_t StreamSession::rtp_timestamp_at_start(std::size_t track) const {
  const SessionTrack& t = config_.tracks[track];
  return t.timestamp_offset + (have_block_ ? block_.rtp_start[t.media_stream] : 0);
}

void StreamSession::play(std::uint64_t now_us) {
  if (playing_ || finished_ || bye_sent_) return;
  playing_ = true;
  // Re-anchor the schedule so that the next block starts now (also after a pause).
  if (have_block_) {
    play_start_us_ = now_us - block_start_us_;
  } else {
    anchor_on_fetch_ = true;
  }
  next_sr_us_ = now_us + kFirstSenderReportDelayUs;
  if (last_heard_us_ == 0) last_heard_us_ = now_us;
  if (paused_at_us_ != 0) {
    controller_->on_resume(static_cast<double>(now_us - std::min(now_us, paused_at_us_)));
    paused_at_us_ = 0;
  }
}

void StreamSession::pause(std::uint64_t now_us) {
  if (!playing_) return;
  playing_ = false;
  paused_at_us_ = std::max<std::uint64_t>(now_us, 1);
  controller_->on_pause();
  // The stage in flight stops part way; its receiver reports what came before the PAUSE (RFC
  // 8867 §5.8 on the bed: 23 of 149 packets, read as 85 % network loss, and the estimate fell to
  // a sixth of the session's share for the 10 blocks after the resume).
  if (stage_open_) {
    if (chain::StageRecord* r = ledger_.find(stage_)) ledger_.extra(*r).paused = true;
  }
}

void StreamSession::protect_key_frame() {
  const auto importance = block_importance();
  if (importance.size() > protected_importance_.size()) return;
  std::transform(
      importance.begin(), importance.end(), protected_importance_.begin(),
      [](std::uint8_t v) { return v == media::kImportanceKey ? media::kImportanceNever : v; });
  key_protected_ = true;
  ++stats_.key_frames_protected;
}

void StreamSession::begin_stage(std::uint64_t now_us) {
  // A PLI or FIR since the last block: the server cannot make a key frame, but the next block
  // starts with one, and that one goes whatever R is (docs/webrtc.md "PLI and FIR").
  key_protected_ = false;
  if (key_frame_requested_) {
    key_frame_requested_ = false;
    protect_key_frame();
  }
  // Model-based policies size R from the block's real bytes and the bytes sent so far (the
  // difference between two stages' counts is what a stage sent); the others answer rate().
  // Bytes as the link counts them, like the receiver's PDFB v1.1 counts and a shaper's rate.
  core::StageStart next{stage_, detail::link_bytes(block_view(), 0, packet_overhead_),
                        static_cast<double>(block_.duration_us), 0};
  next.bytes_before = link_bytes_sent();
  next.packets = block_size_;
  next.removable = discard_curve(0);
  next.disposable_packets = detail::disposable_packets(block_importance());
  const double rate = controller_->rate_for_next(next);
  const auto plan = transmitter_->begin_stage(stage_, rate, block_importance());
  // Every block starts with the pacer's burst (core::PacingLimit): its leading packets go back
  // to back and their dispersion reads the bottleneck's rate, block after block. The bucket
  // starts full, or empty when the burst is to be paid back (repay_burst).
  const auto pacing = paced_ ? controller_->pacing() : std::nullopt;
  pace_free_us_ = pacing && pacing->repay_burst ? std::max(pace_free_us_, now_us) : 0;
  lead_bytes_ = 0.0;
  const std::uint64_t end_us =
      play_start_us_ + block_start_us_ + static_cast<std::uint64_t>(block_.duration_us);
  // A stage whose slot is needed again and that was neither reported nor timed out is missing
  // (sessions without PDFB have no missing reports: an RR covers several blocks).
  chain::StageRecord& r =
      ledger_.open(stage_, end_us + report_timeout_us_, [&](const chain::StageRecord& old) {
        if (config_.feedback) report_missing(old);
      });
  detail::record_begin(r, rate, plan, static_cast<double>(block_.duration_us),
                       transmitter_->tracks());
  ledger_.extra(r) = StageExtra{block_.index, next.bytes_before, rate};
  if (page_) page_->join().begin_block(stage_, rtp_timestamp_at_start(page_track_));
  stage_open_ = true;
  cursor_ = 0;
  ++stats_.stages_started;
  (void)now_us;
}

std::span<const std::uint64_t> StreamSession::discard_curve(std::size_t first) {
  if (config_.discard != core::DiscardPolicy::kPriority) return {};
  return detail::discard_curve(block_view(), block_importance().subspan(first), first,
                               packet_overhead_, discard_order_, removable_);
}

detail::BlockPackets StreamSession::block_view() const {
  return detail::BlockPackets{block_packets_, block_index_, block_size_};
}

std::uint64_t StreamSession::link_bytes_sent() const {
  std::uint64_t bytes = 0;
  for (const chain::TrackCounters& t : transmitter_->tracks()) {
    bytes += t.octets + t.packets * packet_overhead_;
  }
  return bytes;
}

void StreamSession::replan_current(std::uint64_t now_us) {
  if (!stage_open_ || !playing_) return;
  chain::StageRecord* r = ledger_.find(stage_);
  const std::size_t n = block_size_;
  if (r == nullptr || cursor_ >= n) return;
  StageExtra& extra = ledger_.extra(*r);
  const std::uint64_t start = play_start_us_ + block_start_us_;
  core::StageProgress p;
  p.stage = stage_;
  p.elapsed_us = now_us > start ? static_cast<double>(now_us - start) : 0.0;
  p.duration_us = static_cast<double>(block_.duration_us);
  const std::uint64_t sent = link_bytes_sent();
  p.sent_bytes = sent > extra.bytes_before ? sent - extra.bytes_before : 0;
  p.rest_bytes = detail::link_bytes(block_view(), cursor_, packet_overhead_);
  p.rate = extra.rest_rate;
  p.rest_packets = static_cast<std::uint32_t>(n - cursor_);
  p.removable = discard_curve(cursor_);
  const auto rate = controller_->rate_for_rest(p);
  core::log(core::LogLevel::kDebug, "session",
            "stage %u: report %.0f ms into the block, %zu of %zu packets handed over, rest R "
            "%.3f -> %.3f%s",
            p.stage, p.elapsed_us / 1000.0, cursor_, n, p.rate, rate.value_or(p.rate),
            rate ? "" : " (kept)");
  if (!rate) return;
  const auto updated =
      transmitter_->replan_rest(*rate, block_importance().subspan(cursor_), cursor_);
  r->discarded = static_cast<std::uint32_t>(updated.discarded);
  extra.rest_rate = *rate;
  ++r->replans;
  ++stats_.replans;
}

void StreamSession::end_stage() {
  if (chain::StageRecord* r = ledger_.find(stage_)) {
    detail::record_end(*r, transmitter_->plan(), transmitter_->tracks());
  }
  stage_open_ = false;
  ++stage_;
  ++sequence_;
  have_block_ = false;  // pump() asks the source for the next one
  if (config_.max_stages != 0 && stage_ >= config_.max_stages) finished_ = true;
}

std::size_t StreamSession::pump(std::uint64_t now_us, std::uint64_t send_until_us) {
  if (!playing_ || bye_sent_) return 0;
  if (page_ && page_->held() != 0) {
    // Browser reports whose wait for the page's P ended go on without it.
    std::uint64_t with_page_p = 0;
    if (apply_page_reports(page_->release(now_us), with_page_p)) replan_current(now_us);
  }
  send_until_us = std::max(send_until_us, now_us);
  std::size_t sent = 0;
  while (!finished_) {
    if (!have_block_ && (now_us < retry_us_ || !fetch(now_us))) break;
    const std::uint64_t start = play_start_us_ + block_start_us_;
    if (!stage_open_) {
      if (send_until_us < start) break;
      begin_stage(now_us);
    }
    const std::size_t n = block_size_;
    // Gather the packets that are due into the staging array and hand them over in batches.
    // A policy that knows the path's rate also caps the pace (RateController::pacing_rate):
    // a packet that goes out waits until the bytes before it have had their time at that rate.
    const std::optional<core::PacingLimit> pacing = paced_ ? controller_->pacing() : std::nullopt;
    while (cursor_ < n) {
      std::size_t k = 0;
      const std::size_t first = cursor_;
      while (cursor_ < n && k < staging.size()) {
        const media::RtpPacket& p = block_packet(cursor_);
        // With a pacing limit the block's first packets, up to the burst, go at once, back to
        // back (their dispersion reads the bottleneck's rate); the rest at the pace.
        const bool sends = pacing && tx_->will_send(cursor_);
        const double bytes = static_cast<double>(p.payload_size + packet_overhead_);
        const bool lead = sends && lead_bytes_ + bytes <= pacing->burst_bytes;
        if (paced_ && !lead &&
            start + static_cast<std::uint64_t>(p.send_offset_us) > send_until_us) {
          break;
        }
        if (sends) {
          if (!lead && pace_free_us_ > send_until_us) break;
          if (lead) lead_bytes_ += bytes;
          pace_free_us_ = static_cast<std::uint64_t>(core::next_pacing_time(
              static_cast<double>(pace_free_us_), static_cast<double>(now_us), bytes, *pacing));
        }
        const int track = stream_track_[p.stream];
        // Due time: the packet's place in the paced schedule, or the block start in burst mode;
        // the transmitter counts packets sent too long after it as late.
        const std::uint64_t due =
            start + (paced_ ? static_cast<std::uint64_t>(p.send_offset_us) : 0);
        staging[k++] = chain::OutgoingPacket{
            static_cast<std::uint8_t>(track), p.marker, p.rtp_timestamp + rtp_offset_[p.stream],
            std::span(block_arena_ + p.payload_offset, p.payload_size), due};
        ++cursor_;
      }
      if (k == 0) break;
      sent += tx_->send(std::span(staging.data(), k), first, now_us);
    }
    if (cursor_ < n) break;
    end_stage();
  }
  if (finished_ && stage_open_) stage_open_ = false;
  if (finished_ && !end_bye_sent_) {
    // The media ended (the source's end, or max_stages): say so with an RTCP BYE (RFC 3550
    // §6.6), after the last packet, so that a player ends its stream at once instead of waiting
    // for a time-out (ffmpeg and GStreamer both end on BYE). The session itself stays until
    // TEARDOWN or its time-out, so the last blocks' reports still reach the controller.
    end_bye_sent_ = true;
    (void)send_rtcp(now_us, true);
  } else if (!end_bye_sent_ && now_us >= next_sr_us_) {
    send_sender_reports(now_us);
  }
  check_missing_reports(now_us);
  return sent;
}

void StreamSession::prefetch_fields() const {
  const auto* self = reinterpret_cast<const char*>(this);
  __builtin_prefetch(self);
  __builtin_prefetch(self + 64);
}

void StreamSession::prefetch_targets() const {
  tx_->prefetch_object();
  __builtin_prefetch(stream_track_);
  if (have_block_ && cursor_ < block_size_) __builtin_prefetch(&block_packet(cursor_));
  __builtin_prefetch(ledger_.oldest_slot());
}

void StreamSession::prefetch_transmitter_targets() const {
  tx_->prefetch_targets(cursor_);
}

std::uint64_t StreamSession::next_due_us() const {
  // Mirrors pump(): every branch there that acts at some time has its time here.
  if (!playing_ || bye_sent_) return kNoDeadline;
  std::uint64_t due = kNoDeadline;
  if (!finished_ && !have_block_) {
    due = retry_us_;  // the source had no block: look again then
  } else if (!finished_) {
    const std::uint64_t start = play_start_us_ + block_start_us_;
    due = start;
    if (stage_open_ && paced_ && cursor_ < block_size_) {
      due = start + static_cast<std::uint64_t>(block_packet(cursor_).send_offset_us);
      if (const auto pacing = controller_->pacing(); pacing && tx_->will_send(cursor_)) {
        const double bytes =
            static_cast<double>(block_packet(cursor_).payload_size + packet_overhead_);
        due = lead_bytes_ + bytes <= pacing->burst_bytes ? start : std::max(due, pace_free_us_);
      }
    }
  } else if (!end_bye_sent_) {
    return 0;  // the BYE at the media's end is due at once
  }
  if (!end_bye_sent_) due = std::min(due, next_sr_us_);
  // check_missing_reports() waits only on the oldest unsettled stage.
  if (feedback_) due = std::min(due, ledger_.next_due(stage_));
  return due;
}

void StreamSession::send_sender_reports(std::uint64_t now_us) {
  // The first SR goes just after PLAY (players sync on it); later ones half a block later in phase,
  // so that an SR does not queue behind a block's first frame (its key frame) at a bottleneck: the
  // RTT an RR derives from it (LSR/DLSR) would include that burst (docs/rtsp.md).
  const bool first = !sr_phase_set_;
  sr_phase_set_ = true;
  next_sr_us_ = now_us + kSenderReportIntervalUs;
  if (first && have_block_) {
    next_sr_us_ += static_cast<std::uint64_t>(block_.duration_us / 2);
  }
  (void)send_rtcp(now_us, false);
}

std::size_t StreamSession::send_bye(std::uint64_t now_us) {
  if (bye_sent_) return 0;
  bye_sent_ = true;
  const std::size_t sent = send_rtcp(now_us, true);
  playing_ = false;
  finished_ = true;
  return sent;
}

std::size_t StreamSession::send_rtcp(std::uint64_t now_us, bool bye) {
  // Each SR's time is what a later RR's LSR names (RTT, forged-LSR check).
  intake_->note_sender_report(wire::ntp_compact(sender_reports_->ntp_at(now_us)));
  const detail::SenderReportTable table =
      detail::sender_report_table(config_.tracks, source_->streams(), transmitter_->tracks(),
                                  config_.retransmission, transmitter_->retransmit_stats());
  // The media clock now: the SR's RTP timestamps.
  const auto media_now = static_cast<std::int64_t>(now_us - play_start_us_) + source_->origin_us();
  // A live source dates the start of the block in flight in its publisher's clock: the video's
  // SR carries it (PDCT), and a measuring client derives each picture's glass-to-glass latency
  // from it (docs/live.md). The block's start, not the SR's instant: the session's media clock
  // may be far from its pictures' before its schedule is anchored, and the client dates
  // pictures by the 32-bit difference of their timestamps to this one.
  std::optional<wire::PdctClock> capture;
  if (table.video && have_block_) {
    if (const auto ntp = source_->capture_ntp(static_cast<std::int64_t>(block_.start_us))) {
      capture = wire::PdctClock{rtp_timestamp_at_start(*table.video), *ntp};
    }
  }
  const std::size_t sent = sender_reports_->send(now_us, media_now, table.tracks(), bye,
                                                 *transport_, capture, table.video.value_or(0));
  stats_.rtcp_protect_errors = sender_reports_->protect_errors();
  return sent;
}

void StreamSession::check_missing_reports(std::uint64_t now_us) {
  if (!feedback_) return;
  ledger_.settle_overdue(stage_, now_us, [&](const chain::StageRecord& r) { report_missing(r); });
}

void StreamSession::report_missing(const chain::StageRecord& r) {
  if (ledger_.extra(r).paused) {
    skip_paused(r, core::StageReport{}, false);
    return;
  }
  ++stats_.reports_missing;
  emit(r, false, core::StageReport{}, controller_->on_report_missing(r.stage));
}

RtcpCounts StreamSession::on_rtcp(std::span<std::uint8_t> buffer, std::size_t len,
                                  std::uint64_t now_us) {
  RtcpCounts counts;
  // Packets sent per track so far: what an RR's highest sequence number is mapped onto.
  const detail::TrackPackets sent = detail::packets_sent(transmitter_->tracks());
  const chain::Intake& in = intake_->read(
      buffer, len, wire::ntp_compact(sender_reports_->ntp_at(now_us)), sent.tracks(), ledger_);
  if (!detail::count_rtcp(in, stats_, counts)) return counts;
  if (!in.unprotected_rr) last_heard_us_ = now_us;  // an unprotected RR is no sign of life
  if (in.nacks != 0) {
    // Answered at once, within the transmitter's byte credit (docs/webrtc.md "NACK and RTX").
    const chain::RetransmitStats before = transmitter_->retransmit_stats();
    (void)transmitter_->retransmit(in.nacked, now_us);
    detail::count_retransmits(before, transmitter_->retransmit_stats(), in.nacked_truncated,
                              counts);
  }
  if (in.plis + in.firs != 0) key_frame_requested_ = true;
  bool taken = false;
  if (page_ && !in.from_rr) {
    // A browser's transport-cc block reports take the page's P per block: each waits for it
    // while the policy reads P, in stage order (docs/webrtc.md "Quality in the page").
    const bool reads_p = controller_->reads_performance();
    for (const core::StageReport& report : in.reports) {
      const auto handed = page_->hold(report, now_us, reads_p);
      taken = apply_page_reports(handed, counts.page_quality_blocks) || taken;
    }
    taken = apply_page_reports(page_->release(now_us), counts.page_quality_blocks) || taken;
  } else {
    for (const core::StageReport& report : in.reports) {
      taken = apply_report(report, in.from_rr) || taken;
    }
  }
  // Every stage an RR interval covered is settled, whatever the controller made of its report.
  if (in.covered_through) ledger_.settle_through(*in.covered_through);
  if (in.alert) {
    const std::uint64_t alerts = stats_.alerts;
    const std::uint64_t alerts_taken = stats_.alerts_taken;
    taken = apply_alert(*in.alert) || taken;
    counts.alerts = stats_.alerts - alerts;
    counts.alerts_taken = stats_.alerts_taken - alerts_taken;
  }
  if (taken || in.covered_through) replan_current(now_us);
  return counts;
}

bool StreamSession::apply_alert(const core::StageAlert& alert) {
  // An alert on a stage a PAUSE cut says nothing about the path (the stage's report is settled
  // as paused, docs/design.md §2.8); one on an older stage may still change the estimate, but
  // only the stage in flight has a rest to re-plan.
  const chain::StageRecord* r = ledger_.find(alert.stage);
  if (r == nullptr || ledger_.extra(*r).paused) return false;
  ++stats_.alerts;
  if (!controller_->on_alert(alert)) return false;
  ++stats_.alerts_taken;
  core::log(core::LogLevel::kDebug, "session",
            "stage %u: interim alert taken (queue %.0f ms, arrival %.0f kbit/s, pairs %.0f kbit/s)",
            alert.stage, alert.queue_us / 1000.0, alert.rate * 8000.0, alert.pair_rate * 8000.0);
  return alert.stage == stage_;
}

bool StreamSession::apply_report(const core::StageReport& report, bool from_rr) {
  chain::StageRecord* r = ledger_.find(report.stage);
  if (r == nullptr) return false;  // the intake read it from the ledger: cannot happen
  if (!from_rr && ledger_.extra(*r).paused) {
    skip_paused(*r, report, true);
    ledger_.settle(*r);
    return false;
  }
  auto d = controller_->on_report(report);
  if (!d) {
    ++stats_.reports_rejected;
    return false;
  }
  if (d->kind == core::DecisionKind::kStale) return false;
  ++stats_.reports;
  stats_.last_reception_period_us = report.reception_period_us;
  if (!from_rr) {
    stats_.last_performance = report.performance;
    ledger_.settle(*r);
  }
  emit(*r, true, report, *d);
  return true;
}

void StreamSession::skip_paused(const chain::StageRecord& r, const core::StageReport& report,
                                bool reported) {
  ++stats_.reports_paused;
  emit(r, reported, report, detail::paused_decision(controller_->rate()));
}

void StreamSession::emit(const chain::StageRecord& r, bool reported,
                         const core::StageReport& report, const core::Decision& d) {
  if (!on_block_) return;
  on_block_(detail::block_trace(config_.id, r, ledger_.extra(r).block, reported, report, d));
}

}  // namespace predrop::server

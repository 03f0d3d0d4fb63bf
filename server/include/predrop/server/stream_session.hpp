#pragma once
// One client's streaming session: reads its stream's blocks from a media::BlockSource (a file,
// or a live source), paces them block by block (one block = one stage), pre-discards each block
// at the rate its own control unit sets, and feeds the client's reports to that control unit.
//
// Where things happen: the discard decision is StageTransmitter::begin_stage (chain/); a
// datagram from the client becomes stage reports in chain::FeedbackIntake::read, which on_rtcp()
// gives to RateController::on_report (core/) and settles in the chain::ReportLedger.
//
// Source: the session starts at the source's join_sequence() and asks for the next block when
// one ends. A block that is not there yet (a live source behind or stalled) is asked for again
// every kSourcePollUs, and the schedule moves on from when it comes; one the source dropped (the
// session fell behind a live ring) makes the session rejoin at the source's join point; the
// source's end is the media's end (BYE).
//
// Time: every "now_us" argument is the time of the clock the session was made with (the server
// reads it once per tick and passes it in); the SR's NTP time is a wall-clock anchor taken at
// construction plus that clock's elapsed time, so the session never reads a clock itself.
//
// Threading: the server's loop thread. Per packet nothing is allocated; per block one trace row.
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "predrop/chain/feedback_intake.hpp"
#include "predrop/chain/report_ledger.hpp"
#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/core/rate_controller.hpp"
#include "predrop/media/block_source.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/server/session_transport.hpp"
#include "predrop/server/whep_outcome.hpp"
#include "predrop/wire/rtcp.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::server {

namespace detail {
class SenderReports;
class PageReportHold;
struct HandedReport;
struct BlockPackets;
}  // namespace detail

/// One RTP stream the client set up.
struct SessionTrack {
  std::uint8_t media_stream = 0;       ///< Index into the source's streams().
  net::SocketAddress rtp_destination;  ///< Unused for an interleaved track.
  std::optional<net::SocketAddress> rtcp_destination;
  std::uint32_t ssrc = 0;
  std::uint16_t initial_sequence = 0;
  std::uint32_t timestamp_offset = 0;
  /// Set: RTP and RTCP go as frames on these channels of the RTSP connection, not over UDP.
  std::optional<InterleavedChannels> interleaved;
  /// The RTP payload type to send under instead of the stream's own (WHEP: the browser's).
  std::optional<std::uint8_t> payload_type;
  /// The key the client protects its own SRTCP with, when it sent one (SETUP `KeyMgmt`, RFC 4567
  /// §3; GStreamer does, per track); else its SRTCP uses the session key.
  std::optional<wire::SrtpSuite> client_suite;
  wire::SrtpKeyMaterial client_key;
};

/// Everything a session is created with.
struct StreamSessionConfig {
  std::string id;            ///< RTSP session id: a credential, never shown in metrics.
  std::uint64_t number = 0;  ///< Public ordinal of the session (1, 2, ...): the metrics label.
  std::vector<SessionTrack> tracks;
  wire::RtpExtensionIds extension_ids{1, 2};
  std::optional<wire::SrtpSuite> srtp_suite;  ///< Empty: plain RTP.
  wire::SrtpKeyMaterial key;
  core::DiscardPolicy discard = core::DiscardPolicy::kPriority;
  std::uint64_t discard_seed = 1;
  bool paced = true;             ///< Send each packet at its media time; false: each block at once.
  std::uint32_t max_stages = 0;  ///< Stop after this many stages (0 = at the source's end).
  bool feedback = true;          ///< The client sends PDFB (else R stays at the policy's start).
  /// Without PDFB: the client's RTCP Receiver Reports feed the controller (docs/rtsp.md
  /// "Adaptation from Receiver Reports"); ignored when `feedback` is set.
  bool rr_adaptation = false;
  std::uint64_t report_timeout_us = 3'000'000;  ///< After a block's end, its report is missing.
  std::size_t max_payload_size = 1400;
  /// The most its policy may discard (control.rmax; a fixed policy's rate), shown in /metrics
  /// as predrop_session_rmax so that alerts compare R with it (session_start.hpp).
  double rmax = 0.5;
  /// A WebRTC peer that negotiated NACK with RTX: what the transmitter keeps and resends
  /// (docs/webrtc.md "NACK and RTX"); empty: no retransmission.
  std::optional<chain::RetransmitConfig> retransmission;
  /// A WebRTC peer that negotiated NACK, PLI or FIR: its RTCP feedback messages are read.
  bool rtcp_fb = false;
  /// A WebRTC peer whose player page may report P: its transport-cc block reports take the
  /// page's P per block (docs/webrtc.md "Quality in the page").
  bool page_quality = false;
  /// A WebRTC peer: priority discard takes whole frames at the cut (a browser never decodes a
  /// frame sent in part, and the pictures after it wait for the next key frame;
  /// core::DiscardPlanner::set_whole_levels).
  bool whole_frames = false;
  /// With transport-cc: the interim alert's queue threshold on the browser's arrival times, µs
  /// (chain::TransportFeedback); 0 = off.
  std::int64_t transport_alert_us = 0;
};

/// One block as sent and, later, as reported: a row of the per-block trace.
struct BlockTrace {
  std::string_view session;
  std::uint32_t stage = 0;
  std::uint32_t block = 0;
  double rate = 0.0;  ///< R used for the block.
  std::size_t packets = 0;
  std::size_t discarded = 0;
  std::size_t sent = 0;
  bool reported = false;  ///< False: the report never came.
  core::StageReport report;
  core::DecisionKind decision = core::DecisionKind::kKeep;
  std::string_view reason;
  double next_rate = 0.0;
  /// The policy's capacity estimate after the report, bytes per µs (NaN: the policy has none).
  double capacity_estimate = std::numeric_limits<double>::quiet_NaN();
};

/// Counters of one session.
struct SessionStats {
  std::uint64_t stages_started = 0;
  std::uint64_t reports = 0;
  std::uint64_t reports_rejected = 0;
  std::uint64_t reports_missing = 0;
  /// Reports (or time-outs) of stages a PAUSE cut short: not fed to the policy (kPaused).
  std::uint64_t reports_paused = 0;
  std::uint64_t alerts = 0;          ///< Interim alerts (PDAL) about a stage in flight.
  std::uint64_t alerts_taken = 0;    ///< Of those, alerts the policy acted on.
  std::uint64_t alerts_refused = 0;  ///< PDAL that failed to parse or named no stage in flight.
  std::uint64_t replans = 0;      ///< Blocks in flight whose rest was planned anew after a report.
  std::uint64_t rtcp_errors = 0;  ///< SRTCP failures and malformed RTCP.
  std::uint64_t rtcp_protect_errors = 0;  ///< SR/BYE that SRTCP failed to protect (not sent).
  std::uint64_t receiver_reports = 0;
  std::uint8_t last_fraction_lost = 0;  ///< From the client's last RR report block.
  std::uint32_t last_jitter = 0;
  double last_reception_period_us = 0;
  double last_performance = 0;
  std::uint64_t interleaved_drops = 0;  ///< RTP/RTCP frames the interleaved queue refused (full).
  /// RR report blocks about this session's SSRCs refused by the RR arithmetic (forged, stale:
  /// a packet never sent, an unknown LSR, DLSR too long, loss beyond what was sent).
  std::uint64_t rr_rejected = 0;
  /// RR report blocks that fed the controller (rr_adaptation; each covers one or more blocks).
  std::uint64_t rr_reports = 0;
  double last_rtt_us = -1;  ///< RTT from the last RR with LSR/DLSR; -1 = none yet.
  /// RRs that came as plain RTCP in an SRTP session (ffmpeg sends its RRs unprotected); read
  /// for the RR path only, and only blocks with an LSR of a recent SR count.
  std::uint64_t rr_unprotected = 0;
  double last_jitter_us = 0;
  /// Transport-cc feedback messages read (WebRTC peers; docs/webrtc.md).
  std::uint64_t twcc_feedback = 0;
  /// Stage reports made from transport-cc feedback.
  std::uint64_t twcc_reports = 0;
  /// Generic NACKs read, and the sequence numbers they named (docs/webrtc.md "NACK and RTX").
  std::uint64_t nacks = 0;
  std::uint64_t nacked_packets = 0;
  /// Retransmissions (RTX) sent, their bytes, and NACKed numbers refused: not kept (never sent,
  /// pre-discarded, too old), over the byte credit, or resent too often (incl. beyond a
  /// datagram's kMaxNacked).
  std::uint64_t rtx_packets = 0;
  std::uint64_t rtx_bytes = 0;
  std::uint64_t rtx_unknown = 0;
  std::uint64_t rtx_capped = 0;
  std::uint64_t rtx_repeated = 0;
  /// PLIs and FIRs read, and blocks whose key frame was kept for them (docs/webrtc.md).
  std::uint64_t key_frame_requests = 0;
  std::uint64_t key_frames_protected = 0;
  /// The player page's quality reports (docs/webrtc.md "Quality in the page") and the last P
  /// (-1: none yet), frames decoded and freeze time summed over them.
  std::uint64_t page_reports = 0;
  double last_page_quality = -1;
  std::uint64_t page_frames_decoded = 0;
  std::uint64_t page_freeze_ms = 0;
  /// Page reports that named no block remembered (no RTP span, or outside), and block reports
  /// that reached the controller with the page's P.
  std::uint64_t page_reports_unattributed = 0;
  std::uint64_t page_quality_blocks = 0;
  /// Times the next block was not there yet when due (a live source behind or stalled).
  std::uint64_t source_waits = 0;
  /// Times the session fell behind its source's ring and rejoined at a key frame.
  std::uint64_t source_rejoins = 0;
};

/// What one RTCP datagram added to the session's counters that the server also totals
/// (ServerStats: predrop_alerts_total, the WebRTC counters), so that the server adds these
/// instead of comparing copies of SessionStats around every datagram.
struct RtcpCounts {
  std::uint64_t alerts = 0;
  std::uint64_t alerts_taken = 0;
  std::uint64_t twcc_feedback = 0;
  std::uint64_t twcc_reports = 0;
  std::uint64_t nacks = 0;
  std::uint64_t nacked_packets = 0;
  std::uint64_t rtx_packets = 0;
  std::uint64_t rtx_bytes = 0;
  std::uint64_t rtx_unknown = 0;
  std::uint64_t rtx_refused = 0;  ///< rtx_capped + rtx_repeated
  std::uint64_t key_frame_requests = 0;
  std::uint64_t page_quality_blocks = 0;  ///< Block reports handed on with the page's P.
};

/// A streaming session. Created at SETUP, started at PLAY.
class StreamSession {
 public:
  using OnBlock = std::function<void(const BlockTrace&)>;

  /// Throws std::runtime_error when SRTP cannot be set up (setup time only). `clock` must
  /// outlive the session; every now_us passed in is its time. Its RTP, SRs and BYEs leave
  /// through `transport` (session_transport.hpp: UDP or interleaved TCP).
  StreamSession(std::shared_ptr<const media::BlockSource> source,
                std::unique_ptr<SessionTransport> transport, const net::Clock& clock,
                StreamSessionConfig config, std::unique_ptr<core::RateController> controller,
                OnBlock on_block);
  ~StreamSession();
  StreamSession(const StreamSession&) = delete;
  StreamSession& operator=(const StreamSession&) = delete;

  /// Starts (or resumes) sending at monotonic time `now_us`.
  void play(std::uint64_t now_us);
  /// Stops sending at `now_us` until play() again. The stage in flight is cut: what its
  /// receiver reports of it is the pause, not the path, and does not reach the policy; play()
  /// tells the policy how long the session was idle (core::RateController::on_resume).
  void pause(std::uint64_t now_us);
  /// Prefetch hints for a pacer that knows which sessions it visits next, in three steps a
  /// session or so apart, each reading only what the step before brought in: the session's hot
  /// fields; what they point to (transmitter, track maps, the oldest report record); what the
  /// transmitter points to. Hints only.
  void prefetch_fields() const;
  void prefetch_targets() const;
  void prefetch_transmitter_targets() const;
  /// Sends what is due at `now_us`; call it from the server's pacing tick. Returns packets sent.
  std::size_t pump(std::uint64_t now_us) { return pump(now_us, now_us); }
  /// The same, and the media packets (and block starts) due by `send_until_us` >= `now_us` too:
  /// the server's pacing quantum sends up to that much early. Everything else (SRs, report
  /// deadlines, the BYE) still acts at `now_us`.
  std::size_t pump(std::uint64_t now_us, std::uint64_t send_until_us);
  /// When pump() next has something to do: the next packet or block start (or the next look at
  /// a source that had no block yet), the next SR, the oldest report deadline, or the BYE at the
  /// media's end. kNoDeadline while paused or done.
  /// pump() at an earlier time is a no-op, so the server pumps a session only at this time.
  /// Changes only through play(), pause(), pump() and send_bye().
  std::uint64_t next_due_us() const;
  /// next_due_us() of a session that has nothing left to do until play().
  static constexpr std::uint64_t kNoDeadline = UINT64_MAX;
  /// Handles one RTCP datagram from the client (SRTCP if the session is protected); `buffer`
  /// has room for in-place decryption. Returns what it added to the counters the server totals.
  RtcpCounts on_rtcp(std::span<std::uint8_t> buffer, std::size_t len, std::uint64_t now_us);
  /// Says goodbye (RFC 3550 §6.6): an SR + SDES + BYE compound per track to the client's RTCP
  /// port, then sends nothing more. For a server that shuts down. Returns compounds sent.
  std::size_t send_bye(std::uint64_t now_us);

  const std::string& id() const { return config_.id; }
  bool playing() const { return playing_; }
  /// True once every stage was sent (the source ended, or max_stages), or after send_bye().
  bool finished() const { return finished_; }
  /// True once a BYE went out: send_bye(), or the one at the end of the media.
  bool said_bye() const { return bye_sent_ || end_bye_sent_; }
  /// RTP-Info values for PLAY: per track, the next sequence number and its RTP timestamp.
  std::uint16_t next_sequence(std::size_t track) const;
  std::uint32_t rtp_timestamp_at_start(std::size_t track) const;
  const StreamSessionConfig& config() const { return config_; }
  const core::RateController& controller() const { return *controller_; }
  const chain::TransmitterStats& transmitter_stats() const { return transmitter_->stats(); }
  /// Link bytes sent so far (payload + per-packet overhead, the capacity policy's unit).
  std::uint64_t bytes_sent() const { return link_bytes_sent(); }
  /// Its counters (with what its transport dropped).
  SessionStats stats() const;
  /// A WebRTC player page's report of one second of play, at `now_us`: counted and shown in
  /// /metrics, and attributed to the blocks it played; block reports waiting for their P go to
  /// the controller (docs/webrtc.md "Quality in the page"). Returns how many took the page's P.
  std::size_t note_page_quality(const PageQuality& report, std::uint64_t now_us);
  /// Monotonic time of the last sign of life from the client (RTCP); 0 if none yet.
  std::uint64_t last_heard_us() const { return last_heard_us_; }
  /// The stage being sent (or next to be sent).
  std::uint32_t current_stage() const { return stage_; }
  /// The source's sequence number of the block being sent (or next to be sent).
  std::uint64_t block_sequence() const { return sequence_; }
  /// How often a session looks again at a source that had no block ready.
  static constexpr std::uint64_t kSourcePollUs = 5'000;

 private:
  // What the session keeps per stage beside the ledger's record (chain::StageRecord).
  struct StageExtra {
    std::uint32_t block = 0;         ///< The media block the stage sent.
    std::uint64_t bytes_before = 0;  ///< Link bytes the session sent before the stage began.
    double rest_rate = 0;            ///< R its packets not sent yet go with.
    bool paused = false;             ///< A PAUSE came while it was in flight.
  };

  // Reads block sequence_ of the source (see the file comment); true when it is here.
  bool fetch(std::uint64_t now_us);
  // The session's view of the block fetched: its packets for the tracks set up.
  void take_block();
  void begin_stage(std::uint64_t now_us);
  void end_stage();
  // One report from the intake: to the controller; settles its stage if the controller took a
  // PDFB. Returns true if the controller took it.
  bool apply_report(const core::StageReport& report, bool from_rr);
  // Browser reports the page's hold handed on (detail::PageReportHold): each to apply_report();
  // true if the controller took one. Counts those that took the page's P into `with_page_p`.
  bool apply_page_reports(std::span<const detail::HandedReport> handed, std::uint64_t& with_page_p);
  /// An interim alert to the controller; true when it changed the plan of the stage in flight.
  bool apply_alert(const core::StageAlert& alert);
  /// After an accepted report: lets the controller plan the rest of the block in flight anew.
  void replan_current(std::uint64_t now_us);
  /// Link bytes the session sent so far (payload + packet_overhead_ per packet).
  std::uint64_t link_bytes_sent() const;
  void check_missing_reports(std::uint64_t now_us);
  void send_sender_reports(std::uint64_t now_us);
  // One SR + SDES CNAME compound per track with a way for RTCP, with BYE appended if `bye`.
  // Returns compounds sent.
  std::size_t send_rtcp(std::uint64_t now_us, bool bye);
  // A stage declared missing (deadline passed, or its slot needed again).
  void report_missing(const chain::StageRecord& r);
  // The report (or time-out) of a stage a PAUSE cut: traced as kPaused, not fed to the policy.
  void skip_paused(const chain::StageRecord& r, const core::StageReport& report, bool reported);
  void emit(const chain::StageRecord& r, bool reported, const core::StageReport& report,
            const core::Decision& d);

  // What pump() and next_due_us() read on every visit, together in the object's first cache
  // lines: with a thousand sessions per worker a session is cold each time the pacer comes back
  // to it, and every further line is another miss per packet (bench/perf/README.md).
  bool playing_ = false;
  bool finished_ = false;
  bool bye_sent_ = false;
  bool end_bye_sent_ = false;  // the BYE at the end of the media (the session lives on)
  bool stage_open_ = false;
  bool paced_ = true;        // config_.paced and config_.feedback, copied here for the same
  bool feedback_ = true;     // reason
  bool have_block_ = false;  // the block at sequence_ was fetched (block_* below describe it)
  std::uint32_t stage_ = 0;
  std::uint32_t block_size_ = 0;      // packets of the block for the tracks set up
  std::uint64_t play_start_us_ = 0;   // monotonic time of the source's timeline 0
  std::uint64_t block_start_us_ = 0;  // the block's start on the source's timeline
  std::size_t cursor_ = 0;
  std::uint64_t next_sr_us_ = 0;
  std::uint64_t retry_us_ = 0;  // when to look at the source again (!have_block_)
  std::uint64_t last_heard_us_ = 0;
  // The block's packets (all of them; block_index_ picks the ones of the tracks set up when
  // the client set up only some streams), payload bytes, and per-stream RTP offsets.
  const media::RtpPacket* block_packets_ = nullptr;
  const std::uint32_t* block_index_ = nullptr;
  const std::uint8_t* block_arena_ = nullptr;
  // Non-owning views of transmitter_ and track_of_stream_ (fixed after the constructor), so
  // that the prefetch steps find them in the hot lines.
  chain::StageTransmitter* tx_ = nullptr;
  const int* stream_track_ = nullptr;
  std::array<std::uint32_t, media::kMaxSourceStreams> rtp_offset_{};
  std::uint64_t sequence_ = 0;    // the source's block being sent, or next
  bool anchor_on_fetch_ = false;  // play() came before the first block: anchor at it
  bool waited_ = false;           // the source had no block when it was due
  bool sr_phase_set_ = false;     // the SRs after the first are offset by half a block
  std::uint64_t report_timeout_us_ = 0;
  // When pause() stopped a playing session (0: not paused). Not with the hot fields above: the
  // first two cache lines are full (the constructor asserts it).
  std::uint64_t paused_at_us_ = 0;
  std::shared_ptr<const media::BlockSource> source_;
  media::SourceBlock block_;  // the block at sequence_ (holds it while it is read)
  StreamSessionConfig config_;
  std::unique_ptr<core::RateController> controller_;
  OnBlock on_block_;
  std::unique_ptr<SessionTransport> transport_;  // how its packets leave
  std::unique_ptr<chain::StageTransmitter> transmitter_;
  // The client's RTCP in: SRTCP keys, PDFB and RRs to stage reports.
  std::optional<chain::FeedbackIntake> intake_;
  // Its own RTCP out: SRs and the BYE (server/src/sender_reports.hpp).
  std::unique_ptr<detail::SenderReports> sender_reports_;
  // The page's P per block and the block reports waiting for it (config_.page_quality only).
  std::unique_ptr<detail::PageReportHold> page_;
  std::size_t page_track_ = 0;        // the video track the page's RTP timestamps are of
  std::vector<int> track_of_stream_;  // source stream -> track index, -1 = not set up
  // When the client set up only some streams: per block, the indices of the packets it sends
  // and their importance (sized once for the source's largest block).
  bool filter_streams_ = false;
  std::vector<std::uint32_t> filtered_index_;
  std::vector<std::uint8_t> filtered_importance_;
  const media::RtpPacket& block_packet(std::size_t i) const {
    return block_packets_[block_index_ != nullptr ? block_index_[i] : i];
  }
  std::span<const std::uint8_t> block_importance() const;
  // The same packets as block_packet() reads, as a view for block_packets.hpp.
  detail::BlockPackets block_view() const;

  /// Link bytes a packet adds to its payload (RTP header, SRTP tag, core::kLinkOverheadBytes):
  /// the unit in which the capacity policy and the receiver's PDFB v1.1 count bytes.
  std::size_t packet_overhead_ = 0;
  /// With a pacing rate from the controller: when the next packet that goes out may go.
  std::uint64_t pace_free_us_ = 0;
  double lead_bytes_ = 0.0;  ///< Bytes of the block's leading burst handed over so far.
  /// Scratch for the discard curve (StageStart::removable) under priority discard: the order
  /// the planner discards a block's packets in, and the cumulative link bytes; sized once for the
  /// largest block, so that no block allocates.
  std::vector<std::uint32_t> discard_order_;
  std::vector<std::uint64_t> removable_;
  /// Fills removable_ for the block's packets from `first` on; returns the span (empty unless
  /// priority discard).
  std::span<const std::uint64_t> discard_curve(std::size_t first);
  // Each stage's record until its report came or was declared missing.
  chain::ReportLedger<StageExtra> ledger_;
  // A WebRTC peer's transport-cc: the send log the transmitter writes and the measurements the
  // intake reads (null without the transport-wide sequence number).
  std::unique_ptr<chain::TransportFeedback> twcc_;
  SessionStats stats_;
  // A PLI/FIR came (rtcp_fb): the next block's key frame packets are never discarded. Its
  // importance with kImportanceKey raised to kImportanceNever, sized once for the largest block.
  bool key_frame_requested_ = false;
  bool key_protected_ = false;
  std::vector<std::uint8_t> protected_importance_;
  void protect_key_frame();
};

}  // namespace predrop::server

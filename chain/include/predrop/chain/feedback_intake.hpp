#pragma once
// The one step that turns a feedback datagram from a receiver into the control unit's stage
// reports (core::StageReport), whichever way the receiver reports:
//   1. SRTCP: the session key first, then each key the receiver announced for its own SRTCP
//      (RTSP SETUP `KeyMgmt`, RFC 4567 §3: GStreamer), then — for a receiver without PDFB in an
//      SRTP session — plain RTCP, read for its Receiver Report only (ffmpeg 5.1 sends its RRs
//      unprotected; docs/rtsp.md "Adaptation from Receiver Reports");
//   2. PDFB (docs/design.md §4.3): each record about a stage the ledger holds becomes a report
//      (to_stage_report), with the R that stage went with;
//   3. RR report blocks (RFC 3550 §6.4.1) of a receiver without PDFB: the interval a block
//      covers on one track (wire::RrTracker) becomes one report for every whole stage it covers
//      (rr_stage_report), when the session adapts from RRs.
//   4. transport-cc (RTCP RTPFB FMT 15, draft-holmer-rmcat-transport-wide-cc-extensions-01) from
//      a WebRTC peer, when set_transport_feedback() gave it the peer's TransportFeedback: each
//      stage it completes becomes a report like a PDFB v1.1 record with P = 0 (chain/
//      transport_feedback.hpp). Read in a compound or alone (reduced-size, RFC 5506). From the
//      first such message on, the peer's RRs no longer become stage reports: transport-cc wins.
//   5. generic NACK, PLI and FIR (wire/rtcp_nack.hpp) from a WebRTC peer that negotiated them
//      (IntakeConfig::rtcp_fb), about one of the tracks: the NACKed sequence numbers (at most
//      kMaxNacked per datagram, the rest counted) and the key frame requests, for the caller to
//      answer (StageTransmitter::retransmit; docs/webrtc.md "NACK and RTX").
//
// The ledger (report_ledger.hpp) is read, never written: the caller gives each report to its
// controller and then settles the stage (a PDFB the controller took: StageLedger::settle; an RR:
// StageLedger::settle_through(Intake::covered_through)).
//
// Contract: no I/O, no clock (the caller passes the arrival time), no allocation per datagram
// (the reports live in one array per thread, valid until the next read() on that thread).
// Threading: the owner's loop thread.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "predrop/chain/report_ledger.hpp"
#include "predrop/chain/transport_feedback.hpp"
#include "predrop/core/rate_controller.hpp"
#include "predrop/core/stage_report.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/wire/rr_tracker.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::chain {

/// One RTP stream of the sender, as RR blocks name it.
struct IntakeTrack {
  std::uint32_t ssrc = 0;
  std::uint16_t initial_sequence = 0;
  std::uint32_t clock_rate = 90000;
  /// The key the receiver protects its SRTCP with for this track, if it announced one.
  std::optional<wire::SrtpSuite> client_suite;
  wire::SrtpKeyMaterial client_key;
};

/// How a receiver reports.
struct IntakeConfig {
  std::optional<wire::SrtpSuite> suite;  ///< Empty: plain RTCP.
  wire::SrtpKeyMaterial key;             ///< The session key (its SRTCP too, RFC 3711 §3.2).
  std::vector<IntakeTrack> tracks;
  /// The receiver sends PDFB: its records are the reports and RR blocks are only shown. Else RR
  /// blocks are measured (RTT, jitter, refused blocks).
  bool pdfb = true;
  /// Without PDFB: RR intervals become stage reports (control.player_adaptation = "rr").
  bool rr_reports = false;
  /// Generic NACK, PLI and FIR are read (a WebRTC peer that negotiated them).
  bool rtcp_fb = false;
};

/// What one datagram gave.
struct Intake {
  /// The compound opened (SRTCP or plain RTCP in a plain session): a sign of life.
  bool authenticated = false;
  /// It failed SRTCP or parsing (and was no usable unprotected RR either).
  bool error = false;
  /// A plain RR read in an SRTP session with at least one block that passed (not a sign of life).
  bool unprotected_rr = false;
  /// An RR was in the compound (authenticated), with its first block's figures.
  bool receiver_report = false;
  std::uint8_t fraction_lost = 0;
  std::uint32_t jitter = 0;
  /// RR blocks about our tracks that passed / were refused by the RR arithmetic.
  std::uint32_t rr_blocks_passed = 0;
  std::uint32_t rr_blocks_refused = 0;
  /// RR intervals that became stage reports.
  std::uint32_t rr_intervals = 0;
  /// From the newest block that passed.
  std::optional<double> rtt_us;
  std::optional<double> jitter_us;
  /// The reports, oldest stage first, each with rate_used set from the ledger.
  std::span<const core::StageReport> reports;
  /// True if the reports come from RR intervals (P is 0: no picture score), else from PDFB or
  /// transport-cc (settled one by one).
  bool from_rr = false;
  /// Transport-cc messages read in this datagram.
  std::uint32_t transport_cc = 0;
  /// Generic NACKs about our tracks read in this datagram, and the sequence numbers they name
  /// (in order, duplicates kept; valid until the next read()); numbers beyond kMaxNacked.
  std::uint32_t nacks = 0;
  std::span<const std::uint16_t> nacked;
  std::uint32_t nacked_truncated = 0;
  /// PLIs and FIRs about our tracks in this datagram.
  std::uint32_t plis = 0;
  std::uint32_t firs = 0;
  /// PDFB records about a stage the ledger does not hold (never sent, or too old).
  std::uint32_t unknown_stages = 0;
  /// RR: every stage up to this one was covered (settle them, reported or not).
  std::optional<std::uint32_t> covered_through;
  /// The newest interim alert (PDAL, docs/design.md §4.3a) about an unsettled stage the ledger
  /// holds, from a receiver that sends PDFB.
  std::optional<core::StageAlert> alert;
  /// PDAL packets that failed to parse or named a stage not in flight.
  std::uint32_t alerts_refused = 0;
};

/// The intake of one receiver (one stream session).
class FeedbackIntake {
 public:
  /// The most NACKed numbers one datagram yields (a hostile NACK names up to 17 per 4 bytes).
  static constexpr std::size_t kMaxNacked = 512;
  /// Throws std::runtime_error if an SRTCP session cannot be set up (set-up time only).
  explicit FeedbackIntake(IntakeConfig config);
  ~FeedbackIntake();
  FeedbackIntake(FeedbackIntake&&) noexcept;
  FeedbackIntake& operator=(FeedbackIntake&&) noexcept;
  FeedbackIntake(const FeedbackIntake&) = delete;
  FeedbackIntake& operator=(const FeedbackIntake&) = delete;

  /// The sender sent an SR at NTP compact time `ntp_compact` (what a later RR's LSR names).
  void note_sender_report(std::uint32_t ntp_compact);

  /// Reads the datagram in buffer[0, len) (decrypted in place; `buffer` has room for that),
  /// which arrived at NTP compact time `arrival_compact`, with `packets_sent[t]` packets sent on
  /// track t so far and `ledger` the sender's stage records.
  const Intake& read(std::span<std::uint8_t> buffer, std::size_t len, std::uint32_t arrival_compact,
                     std::span<const std::uint64_t> packets_sent, const StageLedger& ledger);

  const IntakeConfig& config() const { return config_; }
  /// Reads the peer's transport-cc feedback into `feedback` (which must outlive the intake;
  /// nullptr: ignored, as before).
  void set_transport_feedback(TransportFeedback* feedback) {
    twcc_ = feedback;
    twcc_packets_.reserve(1024);  // Chromium reports at most a few hundred packets a message
  }
  /// True once a transport-cc message was read: RR intervals no longer make reports.
  bool transport_cc_seen() const { return twcc_seen_; }

 private:
  void read_pdfb(const wire::RtcpCompound& compound, const StageLedger& ledger);
  // The RR's blocks; returns how many passed the RR checks.
  std::uint32_t read_rr(const wire::ReceiverReport& rr, bool authenticated,
                        std::uint32_t arrival_compact, std::span<const std::uint64_t> packets_sent,
                        const StageLedger& ledger);
  // Reports for the stages an interval on track `t` covers; false if it covers no whole stage.
  bool cover(const wire::RrInterval& iv, std::size_t t, const StageLedger& ledger);
  core::StageReport* next_slot();
  // The interim alerts (PDAL) among the plain RTCP packets in `plain`.
  void read_alerts(std::span<const std::uint8_t> plain, const StageLedger& ledger);
  // The transport-cc, NACK, PLI and FIR messages among the plain RTCP packets in `plain` (as
  // configured); returns how many were read.
  std::uint32_t read_rtcp_fb(std::span<const std::uint8_t> plain, const StageLedger& ledger);
  // The stages twcc_packets_ (one message just parsed) completed, as reports.
  void measure_transport_cc(const StageLedger& ledger);
  // True if `media_ssrc` is the first track's (the video: NACK and key-frame requests).
  bool ours(std::uint32_t media_ssrc) const;

  IntakeConfig config_;
  std::optional<net::SrtpSession> in_;
  std::vector<net::SrtpSession> client_in_;
  // The datagram as received, for another key after a failed one (unprotect works in place).
  std::vector<std::uint8_t> copy_;
  std::vector<wire::RrTracker> rr_;  // per track, without PDFB
  Intake out_;
  std::size_t count_ = 0;  // reports written into the thread's array by this read()
  TransportFeedback* twcc_ = nullptr;
  bool twcc_seen_ = false;
  std::vector<wire::TwccPacket> twcc_packets_;  // scratch, capacity kept between messages
  std::vector<std::uint16_t> nacked_;           // kMaxNacked reserved once (rtcp_fb)
};

}  // namespace predrop::chain

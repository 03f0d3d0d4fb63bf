#pragma once
// What a sender did in each recent stage and which of those stages still wait for their report:
// one ledger per peer, kept by every sender that runs a rate controller (a stream session in
// server/, the DDL relay for each worker in ddl/). A stage is settled exactly once:
//   - by its own report (PDFB) that the controller took (settle());
//   - by a standard Receiver Report interval that covers it (settle_through(): players without
//     PDFB; docs/rtsp.md "Adaptation from Receiver Reports");
//   - as missing, when its deadline passes (settle_overdue()) or when the ring needs its slot for
//     a stage kStages later (open()). The caller tells the controller
//     (core::RateController::on_report_missing) in the callback it passes.
// A report for an older stage never settles the stages before it: each waits for its own report
// or its own deadline (docs/design.md §2.4).
//
// Deadlines are numbers in the caller's unit, compared with the `now` it passes: the stream
// session uses its clock's µs (block end + report timeout), the relay stage numbers (stage +
// report_timeout_stages against the stage just closed).
//
// Stage ids count up from the first one opened; comparisons are modulo 2^32 (serial number
// arithmetic, RFC 1982), so a wrap of the 32-bit id changes nothing.
//
// Threading: the owner's loop thread. Memory: a fixed ring inside the object; nothing here
// allocates.
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace predrop::chain {

/// No stage (an unused slot, or nothing opened yet).
inline constexpr std::uint32_t kNoStage = UINT32_MAX;
/// Tracks whose per-stage packet ranges a record keeps (for mapping RR intervals onto stages).
inline constexpr std::size_t kLedgerTracks = 4;

/// What the sender did in one stage, as far as its report is concerned.
struct StageRecord {
  std::uint32_t stage = kNoStage;
  bool settled = false;         ///< Reported, covered by an RR, or declared missing.
  bool ended = false;           ///< Every packet of the stage was handed to the transmitter.
  double rate = 0.0;            ///< R planned at the stage's start.
  std::uint32_t packets = 0;    ///< Packets of the stage before discard.
  std::uint32_t discarded = 0;  ///< Pre-discarded (updated when its rest was planned anew).
  std::uint32_t sent = 0;       ///< Announced in the stage extension (to_send), or sent.
  std::uint32_t replans = 0;    ///< Times its rest was planned anew after a report.
  std::uint64_t due = 0;        ///< When its report is missing, in the ledger user's unit.
  double duration_us = 0.0;     ///< The stage's scheduled duration (an RR's stand-in for L).
  /// Per track: packets sent on it when the stage began and when it ended.
  std::array<std::uint64_t, kLedgerTracks> first_packet{};
  std::array<std::uint64_t, kLedgerTracks> end_packet{};

  /// The R the stage went with: planned at its start, or what its discards came to when a report
  /// planned its rest anew (core::StageReport::rate_used).
  double rate_used() const {
    return replans > 0 && packets > 0
               ? static_cast<double>(discarded) / static_cast<double>(packets)
               : rate;
  }
};

/// The ring of stage records and the settlement rules (see the file comment).
class StageLedger {
 public:
  /// Stages kept: a report more than this many stages late finds no record.
  static constexpr std::size_t kStages = 64;

  /// True if stage `a` comes before stage `b` (modulo 2^32).
  static constexpr bool before(std::uint32_t a, std::uint32_t b) {
    return static_cast<std::int32_t>(a - b) < 0;
  }

  /// Starts keeping `stage`, whose report is missing at `due`. Stages open in increasing order.
  /// If its slot still holds a stage that was never settled, that stage is declared missing
  /// first: `on_missing(const StageRecord&)` is called with it. Returns the fresh record.
  template <class OnMissing>
  StageRecord& open(std::uint32_t stage, std::uint64_t due, OnMissing&& on_missing) {
    StageRecord& r = records_[stage % kStages];
    if (r.stage != kNoStage && !r.settled) {
      r.settled = true;
      std::forward<OnMissing>(on_missing)(std::as_const(r));
    }
    r = StageRecord{};
    r.stage = stage;
    r.due = due;
    if (oldest_ == kNoStage) oldest_ = stage;
    newest_ = stage;
    advance();
    return r;
  }

  /// The record of `stage`, or nullptr if the ledger does not hold it (never opened, or its
  /// slot was taken by a later stage).
  StageRecord* find(std::uint32_t stage) {
    StageRecord& r = records_[stage % kStages];
    return r.stage == stage && stage != kNoStage ? &r : nullptr;
  }
  const StageRecord* find(std::uint32_t stage) const {
    const StageRecord& r = records_[stage % kStages];
    return r.stage == stage && stage != kNoStage ? &r : nullptr;
  }

  /// `r`'s stage was reported (its report reached the controller).
  void settle(StageRecord& r) {
    r.settled = true;
    advance();
  }

  /// A Receiver Report covered every stage up to and including `last`: each one not settled yet
  /// is settled (its report was derived from the RR), none is declared missing.
  void settle_through(std::uint32_t last) {
    if (oldest_ == kNoStage) return;
    for (std::uint32_t s = oldest_; !before(last, s); ++s) {
      if (StageRecord* r = find(s)) r->settled = true;
      if (s == newest_) break;
    }
    if (before(oldest_, last + 1)) oldest_ = last + 1;
    advance();
  }

  /// Declares missing, oldest first, every stage before `end` that is not settled and whose
  /// deadline is at or before `now`, calling `on_missing(const StageRecord&)` for each; stops at
  /// the first one that is not due yet.
  template <class OnMissing>
  void settle_overdue(std::uint32_t end, std::uint64_t now, OnMissing&& on_missing) {
    if (oldest_ == kNoStage) return;
    while (before(oldest_, end)) {
      StageRecord* r = find(oldest_);
      if (r != nullptr && !r->settled) {
        if (now < r->due) return;
        r->settled = true;
        on_missing(std::as_const(*r));
      }
      ++oldest_;
    }
  }

  /// The deadline of the oldest stage before `end` that is not settled; UINT64_MAX if none.
  std::uint64_t next_due(std::uint32_t end) const {
    if (oldest_ == kNoStage) return UINT64_MAX;
    for (std::uint32_t s = oldest_; before(s, end); ++s) {
      const StageRecord* r = find(s);
      if (r != nullptr && !r->settled) return r->due;
    }
    return UINT64_MAX;
  }

  /// The oldest stage not known to be settled (kNoStage before the first open()).
  std::uint32_t oldest_unsettled() const { return oldest_; }
  /// The newest stage opened (kNoStage before the first open()).
  std::uint32_t newest() const { return newest_; }
  /// The slot the oldest unsettled stage is in: what a pacer may prefetch before a visit.
  const StageRecord* oldest_slot() const {
    return &records_[(oldest_ == kNoStage ? 0 : oldest_) % kStages];
  }

 private:
  // Moves oldest_ over the stages right after it that are settled, or no longer held (a stage
  // before the newest that the ledger does not hold can never be opened again), never past the
  // newest.
  void advance() {
    if (oldest_ == kNoStage) return;
    while (before(oldest_, newest_ + 1)) {
      const StageRecord* r = find(oldest_);
      if (r != nullptr ? !r->settled : oldest_ == newest_) return;
      ++oldest_;
    }
  }

  std::array<StageRecord, kStages> records_{};
  std::uint32_t oldest_ = kNoStage;
  std::uint32_t newest_ = kNoStage;
};

/// A StageLedger with a value of the owner's beside each record (what only that sender needs:
/// the stream session's block and byte counts, the relay's stage times).
template <class Extra>
class ReportLedger : public StageLedger {
 public:
  /// The owner's value of the record `r` (a record of this ledger).
  Extra& extra(const StageRecord& r) { return extra_[r.stage % kStages]; }
  const Extra& extra(const StageRecord& r) const { return extra_[r.stage % kStages]; }

 private:
  std::array<Extra, kStages> extra_{};
};

}  // namespace predrop::chain

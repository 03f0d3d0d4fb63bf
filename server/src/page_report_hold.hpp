#pragma once
// A browser's transport-cc block reports held for the player page's P (docs/webrtc.md "Quality in
// the page", "Merge"). The session hands each report here and applies what comes back, in stage
// order: a report goes on when its block's P is final (PageQualityJoin, page_quality.hpp), or
// when its wait ends — then with the last P handed, so that the P comparison sees no change. A
// report waits only while the session's policy reads P (RateController::reads_performance);
// otherwise it goes on at once, with the page's P only if that came first.
//
// Pure: no clock, no socket; times are passed in. No allocation after construction. What
// hold() and release() return is valid until the next call of either.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "page_quality.hpp"
#include "predrop/core/stage_report.hpp"

namespace predrop::server::detail {

/// A report handed on: to the controller, with its P set.
struct HandedReport {
  core::StageReport report;  ///< The block report, performance = the P it goes with.
  bool from_page = false;    ///< The P is the page's for the block (not the last P handed).
};

/// The page's P per block (join()) and the browser block reports that wait for it.
class PageReportHold {
 public:
  /// Block reports held at once; one more hands on the oldest.
  static constexpr std::size_t kHeld = 8;
  /// How long a report waits for its P when the policy reads P: the page reports once a
  /// second, after the block's end has played.
  static constexpr std::uint64_t kWaitUs = 1'500'000;

  /// Where the page's seconds are attributed to blocks (begin_block, add).
  PageQualityJoin& join() { return join_; }
  const PageQualityJoin& join() const { return join_; }

  /// Holds `report`, received at `now_us`, until its P is final or, if `reads_p`, kWaitUs
  /// later (else its wait ends at once). A full queue first hands on its oldest report:
  /// returned (at most one).
  std::span<const HandedReport> hold(const core::StageReport& report, std::uint64_t now_us,
                                     bool reads_p);
  /// Hands on, in stage order, each held report whose P is final or whose wait ended by
  /// `now_us`; stops at the first report still waiting. A report whose P is not known goes
  /// with the last P handed (0 before any).
  std::span<const HandedReport> release(std::uint64_t now_us);
  /// Reports held now.
  std::size_t held() const { return count_; }
  /// The last P handed on with a report (0 before the first).
  double last_p() const { return last_p_; }

 private:
  struct Held {
    core::StageReport report;
    std::uint64_t until_us = 0;
  };

  // Takes the oldest held report off the queue, with its P, into out_[n].
  void hand_front(std::size_t n);

  PageQualityJoin join_;
  std::array<Held, kHeld> held_{};
  std::size_t first_ = 0;
  std::size_t count_ = 0;
  double last_p_ = 0;
  std::array<HandedReport, kHeld> out_{};
};

}  // namespace predrop::server::detail
